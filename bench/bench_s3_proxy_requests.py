"""One S3 request through the reliability suite's fault proxy (`tests/reliability/fault_proxy.py`) against
the same request straight to moto's server, both on loopback: median wall time of REQUESTS GETs (2 KB
object), PUTs and HEADs by s3fs, the fault proxy of the tree at ROOT. The ratio proxy/direct is the
proxy's cost; a request that waits on the network shows as a fixed delay (Nagle + delayed ACK: ~40 ms)
that CPU time does not see.

    for r in 1 2; do for root in /tmp/base /work/wt/x; do
        python bench/bench_s3_proxy_requests.py $root; done; done
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
REQUESTS = int(os.environ.get("REQUESTS", "20"))
BUCKET = "bench-proxy"
sys.path.insert(0, ROOT)

import boto3  # noqa: E402
import s3fs  # noqa: E402

from tests.reliability.fault_proxy import FaultProxy  # noqa: E402


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


def _median_ms(endpoint: str) -> dict[str, float]:
    fs = s3fs.S3FileSystem(key="testing", secret="testing", skip_instance_cache=True,
                           client_kwargs={"endpoint_url": endpoint, "region_name": "us-east-1"})
    fs.pipe_file(f"{BUCKET}/x", b"x" * 2000)
    ops = {
        "GET": lambda i: fs.cat_file(f"{BUCKET}/x"),
        "PUT": lambda i: fs.pipe_file(f"{BUCKET}/y{i}", b"y" * 2000),
        "HEAD": lambda i: (fs.info(f"{BUCKET}/x"), fs.invalidate_cache()),
    }
    out = {}
    for name, op in ops.items():
        times = []
        for i in range(REQUESTS):
            t0 = time.perf_counter()
            op(i)
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times) * 1000
    return out


def main() -> None:
    proc, endpoint = _moto()
    try:
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                     region_name="us-east-1").create_bucket(Bucket=BUCKET)
        proxy = FaultProxy(endpoint).start()
        direct, through = _median_ms(endpoint), _median_ms(proxy.endpoint)
        t0 = time.perf_counter()
        proxy.stop()
        stop_ms = (time.perf_counter() - t0) * 1000
        for name in direct:
            print(f"{ROOT} {name:4s} direct {direct[name]:6.1f} ms  proxy {through[name]:6.1f} ms  "
                  f"ratio {through[name] / direct[name]:5.2f}")
        print(f"{ROOT} proxy stop {stop_ms:6.1f} ms")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
