"""S3 requests per table operation: what each operation of the lake_assets tree at ROOT sends to a
real S3 API (moto's server on loopback), counted by the reliability suite's proxy in front of it
(`tests/reliability/request_count.py`: every request that reaches the server, s3fs's and
pyarrow's alike). S3 bills per request, so these counts are what users pay for maintenance.

Each operation runs on its own fresh table of N snapshots (one write each, every write touching
M partitions x B buckets), with the process's manifest cache emptied first (as a job that runs
only that operation); the counts are deterministic (no timing involved).

    python bench/bench_s3_requests.py ROOT [--snapshots N] [--partitions M] [--buckets B] [--cpu R]

Printed per operation: GET / HEAD / LIST / PUT / DELETE and the total, and "max same": the most
GETs of one snapshot, changelog, manifest list, manifest or index manifest (immutable objects:
1 is the bound the operations keep).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

parser = argparse.ArgumentParser()
parser.add_argument("root", nargs="?", default=".")
parser.add_argument("--snapshots", type=int, default=6)
parser.add_argument("--partitions", type=int, default=2)
parser.add_argument("--buckets", type=int, default=2)
parser.add_argument("--only", default="", help="comma-separated operation names")
parser.add_argument("--trace", action="store_true", help="print each request of the operations run")
parser.add_argument("--cpu", type=int, default=0, metavar="R",
                    help="also run each read-only operation (read, read_compacted, plan) R times more and print "
                         "this process's CPU ms (the client's, not moto's) and the wall ms per run")
ARGS = parser.parse_args()
sys.path.insert(0, ARGS.root)
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")

import boto3  # noqa: E402
import pyarrow as pa  # noqa: E402

from lake_assets import Catalog  # noqa: E402
from lake_assets.store import manifest_io  # noqa: E402
from tests.reliability.fault_proxy import FaultProxy  # noqa: E402
from tests.reliability.request_count import KINDS, RequestLog  # noqa: E402

N, M, B = ARGS.snapshots, ARGS.partitions, ARGS.buckets
READ_ONLY = ("read", "read_compacted", "plan")  # may run again on the same table (`--cpu`)
SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
# immutable metadata files: each one at most once per operation
IMMUTABLE = ("snapshot/snapshot-", "changelog/changelog-", "manifest/")


def _moto() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).with_name("moto_server")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "moto.server"]
    proc = subprocess.Popen([*cmd, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    for _ in range(150):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.2)
    return proc, f"http://127.0.0.1:{port}"


def _rows(i: int) -> pa.Table:
    """One write: 4 keys per (partition, bucket) on average, every partition, rows of round ``i``."""
    n = 4 * M * B
    return pa.table({"k": list(range(n)), "dt": [f"p{j % M}" for j in range(n)], "v": [f"v{i}"] * n},
                    schema=SCHEMA)


class Bench:
    def __init__(self, endpoint: str, proxy: FaultProxy) -> None:
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                     region_name="us-east-1").create_bucket(Bucket=bucket)
        self.opts = {"key": "testing", "secret": "testing",
                     "client_kwargs": {"endpoint_url": proxy.endpoint, "region_name": "us-east-1"}}
        self.wh = f"s3://{bucket}/wh"
        Catalog(self.wh, **self.opts).create_database("db")
        self.log = RequestLog(proxy)
        self.n = 0

    def table(self, options: dict[str, str] | None = None, snapshots: int = N) -> Any:
        """A fresh primary-key table with ``snapshots`` snapshots, opened by a fresh catalog."""
        self.n += 1
        name = f"db.t{self.n}"
        t = Catalog(self.wh, **self.opts).create_table(
            name, SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
            options={"bucket": str(B), "write-only": "true", **(options or {})})
        for i in range(snapshots):
            t.write_arrow(_rows(i))
        return Catalog(self.wh, **self.opts).get_table(name)

    def count(self, op: Callable[[], object]) -> tuple[dict[str, int], int]:
        # as in a fresh process (a job running the operation): nothing decoded by the setup's writes
        manifest_io._cache_slot.cache_clear()
        self.log.mark()
        op()
        counts = dict(self.log.by_kind())
        if ARGS.trace:
            for kind, key in self.log.entries():
                print(f"    {kind:6s} {key}")
        gets = self.log.of("GET")
        same = max((c for k, c in gets.items() if any(m in k for m in IMMUTABLE)), default=0)
        return counts, same


def _later() -> datetime:
    return datetime.now() + timedelta(days=1)


def operations(b: Bench) -> dict[str, Callable[[], Callable[[], object]]]:
    """name -> a setup that builds the table and returns the operation to count."""

    def write() -> Callable[[], object]:
        t = b.table()
        return lambda: t.write_arrow(_rows(99))

    def compact() -> Callable[[], object]:
        t = b.table()
        return lambda: t.compact(full=True)

    def read() -> Callable[[], object]:
        t = b.table()
        return t.to_arrow

    def read_compacted() -> Callable[[], object]:
        t = b.table()
        t.compact(full=True)
        return t.to_arrow

    def expire() -> Callable[[], object]:
        t = b.table()
        return lambda: t.expire_snapshots(retain_min=1, older_than=_later())

    def expire_changelog() -> Callable[[], object]:
        # decoupled: expiring the snapshots leaves N-1 long-lived changelogs, then those expire
        t = b.table({"changelog.num-retained.max": "1000", "changelog.num-retained.min": "1000",
                     "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
        t.expire_snapshots(retain_min=1, older_than=_later())
        from lake_assets.ops.expire import expire_changelogs

        return lambda: expire_changelogs(t.store, retain_min=1, retain_max=1,
                                         older_than_ms=int(_later().timestamp() * 1000))

    def orphans() -> Callable[[], object]:
        t = b.table()
        return lambda: t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)

    def health() -> Callable[[], object]:
        t = b.table()
        return lambda: t.health()

    def tag_create() -> Callable[[], object]:
        t = b.table()
        return lambda: t.create_tag("x")

    def tag_delete() -> Callable[[], object]:
        t = b.table()
        t.create_tag("x", 1)
        t.expire_snapshots(retain_min=1, older_than=_later())
        return lambda: t.delete_tag("x")

    def rollback() -> Callable[[], object]:
        t = b.table()
        return lambda: t.rollback_to(snapshot_id=1)

    def plan() -> Callable[[], object]:
        t = b.table()
        return lambda: t.plan()

    def stream_poll() -> Callable[[], object]:
        t = b.table()
        s = t.stream(mode="from-snapshot", snapshot_id=N)
        return lambda: s.poll()

    def branch_create() -> Callable[[], object]:
        t = b.table()
        t.create_tag("x")
        return lambda: t.create_branch("b", "x")

    def branch_write() -> Callable[[], object]:
        t = b.table()
        t.create_branch("b")
        bt = Catalog(b.wh, **b.opts).get_table(f"{t.name}$branch_b")
        return lambda: bt.write_arrow(_rows(7))

    def branch_expire() -> Callable[[], object]:
        # a branch of its own N snapshots, made from a tag of main's latest
        t = b.table()
        t.create_tag("x")
        t.create_branch("b", "x")
        bt = Catalog(b.wh, **b.opts).get_table(f"{t.name}$branch_b")
        for i in range(N):
            bt.write_arrow(_rows(i))
        return lambda: bt.expire_snapshots(retain_min=1, older_than=_later())

    def expire_with_branch() -> Callable[[], object]:
        t = b.table()
        t.create_tag("x", 1)
        t.create_branch("b", "x")
        return lambda: t.expire_snapshots(retain_min=1, older_than=_later())

    def orphans_with_branch() -> Callable[[], object]:
        t = b.table()
        t.create_tag("x", 1)
        t.create_branch("b", "x")
        return lambda: t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)

    return {f.__name__: f for f in (write, compact, read, read_compacted, expire, expire_changelog, orphans, health,
                                    tag_create, tag_delete, rollback, plan, stream_poll, branch_create, branch_write,
                                    branch_expire, expire_with_branch, orphans_with_branch)}


def main() -> None:
    proc, endpoint = _moto()
    proxy = FaultProxy(endpoint).start()
    try:
        b = Bench(endpoint, proxy)
        only = set(filter(None, ARGS.only.split(",")))
        import lake_assets

        print(f"{Path(lake_assets.__file__).parent.parent}: N={N} snapshots, M={M} partitions x B={B} buckets")
        print(f"{'operation':20s} " + " ".join(f"{k:>6s}" for k in KINDS) + "  total  max same")
        for name, setup in operations(b).items():
            if only and name not in only:
                continue
            op = setup()
            counts, same = b.count(op)
            cpu = ""
            if ARGS.cpu and name in READ_ONLY:
                start, wall = time.process_time(), time.perf_counter()
                for _ in range(ARGS.cpu):
                    manifest_io._cache_slot.cache_clear()
                    op()
                cpu = (f"  cpu {1000 * (time.process_time() - start) / ARGS.cpu:7.1f} ms"
                       f"  wall {1000 * (time.perf_counter() - wall) / ARGS.cpu:7.1f} ms")
            print(f"{name:20s} " + " ".join(f"{counts[k]:6d}" for k in KINDS)
                  + f"  {sum(counts.values()):5d}  {same:8d}{cpu}")
    finally:
        proxy.stop()
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
