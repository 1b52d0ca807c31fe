"""Counting the S3 requests an operation sends, as the server sees them.

The fault proxy (`tests.reliability.fault_proxy`) logs every request that goes through it to
moto's server: s3fs's metadata requests and pyarrow's native data reads alike (both are pointed at
the proxy's endpoint). `RequestLog` turns a stretch of that log into counts by kind and by object,
so a test or ``bench/bench_s3_requests.py`` can say how many GETs, HEADs, LISTs, PUTs and DELETEs
one operation cost, and how often it asked for one object.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

from tests.reliability.fault_proxy import FaultProxy

KINDS = ("GET", "HEAD", "LIST", "PUT", "DELETE")


def classify(method: str, target: str) -> tuple[str, str]:
    """(kind, key) of one logged request: ``kind`` one of `KINDS` (a bucket GET with a prefix or
    ``list-type`` is a LIST, a POST ``?delete`` a batch DELETE, ``POST ?uploads`` and multipart
    parts PUT), ``key`` the object key (for a LIST, its prefix) without the bucket."""
    parts = urlsplit(target)
    path = unquote(parts.path).lstrip("/")
    query = parse_qs(parts.query, keep_blank_values=True)
    key = path.split("/", 1)[1] if "/" in path else ""
    if method == "GET" and not key:
        return "LIST", query.get("prefix", [""])[0]
    if method == "POST" and "delete" in query:
        return "DELETE", "(batch)"
    if method == "POST":
        return "PUT", key
    return method, key


@dataclass
class RequestLog:
    """The requests logged by a proxy from `start` on (`mark` starts a new stretch)."""

    proxy: FaultProxy
    start: int = 0

    def mark(self) -> None:
        """Count from now on."""
        with self.proxy.lock:
            self.start = len(self.proxy.requests)

    def entries(self) -> list[tuple[str, str]]:
        """(kind, key) of each request since `mark`, in order."""
        with self.proxy.lock:
            logged = list(self.proxy.requests[self.start:])
        return [classify(method, target) for method, target, _ in logged]

    def by_kind(self) -> Counter[str]:
        """Requests since `mark` by kind (every kind of `KINDS` present, zero or not)."""
        counts: Counter[str] = Counter(dict.fromkeys(KINDS, 0))
        counts.update(kind for kind, _ in self.entries())
        return counts

    def of(self, kind: str, contains: str = "") -> Counter[str]:
        """How often each key whose name holds ``contains`` was asked for by ``kind``."""
        return Counter(key for k, key in self.entries() if k == kind and contains in key)

    def total(self) -> int:
        return len(self.entries())
