"""A fault-injecting HTTP proxy on loopback, put in front of moto's S3 server.

Each request is forwarded to the upstream server unless a matching `Fault` says otherwise:

- ``drop``: forward the request (it takes effect upstream), then close the connection without
  answering - the client sees a lost response and retries;
- ``fail_after``: forward it, then answer 500 instead of the real answer (landed, reported failed);
- ``fail``: answer 500 without forwarding (nothing happened upstream);
- ``delay``: wait ``seconds``, then forward.

A fault matches requests by method and a regular expression on the path; it fires on the
``nth`` matching request and the ``times - 1`` after it. `requests` logs what went through.
"""

from __future__ import annotations

import contextlib
import http.client
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

_HOP_HEADERS = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer", "upgrade"}


@dataclass
class Fault:
    """One injected fault; see the module docstring."""

    action: str  # "drop" | "fail_after" | "fail" | "delay"
    method: str = "PUT"
    path: str = ".*"
    nth: int = 1
    times: int = 1
    every: int = 0  # > 0: fire on every ``every``-th matching request from ``nth`` on
    seconds: float = 0.0
    seen: int = 0
    fired: int = 0

    def take(self, method: str, path: str) -> bool:
        if method != self.method or not re.search(self.path, path):
            return False
        self.seen += 1
        if self.every and (self.seen - self.nth) % self.every:
            return False
        if self.seen >= self.nth and self.fired < self.times:
            self.fired += 1
            return True
        return False


@dataclass
class FaultProxy:
    """The proxy's state: upstream URL, faults, and a log of (method, path, outcome)."""

    upstream: str
    faults: list[Fault] = field(default_factory=list)
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def add(self, fault: Fault) -> Fault:
        with self.lock:
            self.faults.append(fault)
        return fault

    def clear(self) -> None:
        with self.lock:
            self.faults.clear()
            self.requests.clear()

    def _match(self, method: str, path: str) -> Fault | None:
        with self.lock:
            for f in self.faults:
                if f.take(method, path):
                    return f
        return None

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The answer goes out as two writes (headers, then body). With Nagle on, the body waits
            # for the client's ACK of the headers, which Linux delays by 40 ms: every GET with a body
            # took ~48 ms through the proxy against ~8 ms straight to moto.
            disable_nagle_algorithm = True

            def log_message(self, *_args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fault = proxy._match(self.command, self.path)
                action = fault.action if fault is not None else "forward"
                with proxy.lock:
                    proxy.requests.append((self.command, self.path, action))
                if action == "fail":
                    self._reply(500, {"Content-Type": "application/xml"}, _ERROR_500)
                    return
                if action == "delay":
                    time.sleep(fault.seconds)  # type: ignore[union-attr]
                status, headers, data = proxy._forward(self.command, self.path, dict(self.headers), body)
                if action == "drop":
                    # the upstream did it; the client never hears: reset the connection
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if action == "fail_after":
                    self._reply(500, {"Content-Type": "application/xml"}, _ERROR_500)
                    return
                self._reply(status, headers, data)

            def _reply(self, status: int, headers: dict[str, str], data: bytes) -> None:
                self.send_response(status)
                head = self.command == "HEAD"
                for k, v in headers.items():
                    if k.lower() not in _HOP_HEADERS and (head or k.lower() != "content-length"):
                        self.send_header(k, v)
                if not head:  # a HEAD answer carries the object's length, and no body
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if not head:
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # `stop` waits for the serving loop to notice the request: at the default 0.5 s poll every
        # test's teardown waited up to half a second
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def _forward(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict, bytes]:
        up = urlsplit(self.upstream)
        conn = http.client.HTTPConnection(up.hostname, up.port, timeout=60)
        try:
            fwd = {k: v for k, v in headers.items() if k.lower() not in _HOP_HEADERS and k.lower() != "expect"}
            conn.request(method, path, body=body if body or method in ("PUT", "POST") else None, headers=fwd)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, dict(resp.getheaders()), data
        finally:
            conn.close()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


_ERROR_500 = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code>'
    b"<Message>injected by the fault proxy</Message></Error>"
)
