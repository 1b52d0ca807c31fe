"""An aggregation DV upsert round on S3 (moto's server on loopback): level-0 files spliced against
written whole (issue 14).

The splice (`ops/compact/splice_rewrite.py`) reads the level-0 file's bytes again to copy its
unchanged column chunks; on an object store that is a GET of the whole file, where the whole
rewrite encodes every column instead. Both are timed here on the same machine, alternated round
by round, each round on a fresh table (a load and one upsert round, as `bench_dv.py` times it):
the round's CPU (this process: s3fs and pyarrow's S3 client included; moto runs in its own
process) and wall. ``--requests`` counts the round's S3 requests by method instead, through the
reliability suite's logging proxy (`tests/reliability/fault_proxy.py`, in this process: its CPU
would count, so those runs are not timed).

``--splice {auto,on,off}``: "auto" times the tree's own choice against the whole rewrite;
"on" forces the splice on S3 (for a tree that keeps it to local file systems).

    PYTHONPATH=. .venv/bin/python bench/bench_dv_splice_s3.py --rows 1000000 --upsert-rows 100000 --repeat 4
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_dv

from lake_assets import Catalog
from lake_assets.ops.compact import rewrite


@contextmanager
def _moto() -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).with_name("moto_server")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "moto.server"]
    proc = subprocess.Popen([*cmd, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        for _ in range(150):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _options(endpoint: str) -> dict[str, Any]:
    return {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": endpoint,
                                                                      "region_name": "us-east-1"}}


@contextmanager
def _splicing(mode: str) -> Iterator[Counter[str]]:
    """Level-0 files spliced ("on": also off the local file system) or written whole ("off");
    counts what `spliced_rewrite` returned."""
    real = rewrite.spliced_rewrite
    from lake_assets.ops.compact import splice_rewrite
    counts: Counter[str] = Counter()
    saved = splice_rewrite.LocalFileIO

    def spy(*args: Any) -> Any:
        out = None if mode == "off" else real(*args)
        counts["spliced" if out is not None else "whole"] += 1
        return out

    rewrite.spliced_rewrite = spy  # type: ignore[assignment]
    if mode == "on":
        splice_rewrite.LocalFileIO = object  # type: ignore[assignment,misc]  # any file IO passes the check
    try:
        yield counts
    finally:
        rewrite.spliced_rewrite = real
        splice_rewrite.LocalFileIO = saved  # type: ignore[misc]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--upsert-rows", type=int, default=100_000)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--splice", choices=["auto", "on"], default="on")
    ap.add_argument("--requests", action="store_true", help="count the rounds' requests (not timed)")
    args = ap.parse_args()
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    import boto3
    cpu: dict[str, list[float]] = {"splice": [], "whole": []}
    wall: dict[str, list[float]] = {"splice": [], "whole": []}
    requests: dict[str, Counter[str]] = {"splice": Counter(), "whole": Counter()}
    made: dict[str, Counter[str]] = {"splice": Counter(), "whole": Counter()}
    with _moto() as endpoint:
        proxy = None
        if args.requests:
            from tests.reliability.fault_proxy import FaultProxy
            proxy = FaultProxy(endpoint).start()
        client_endpoint = proxy.endpoint if proxy is not None else endpoint
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
        for i in range(args.repeat):
            for mode in (("splice", "whole") if i % 2 == 0 else ("whole", "splice")):
                bucket = f"dv-{uuid.uuid4().hex[:10]}"
                s3.create_bucket(Bucket=bucket)
                with _splicing("off"):  # the build's own rounds: alike in both
                    table = bench_dv.build_on(Catalog(f"s3://{bucket}/wh", **_options(client_endpoint)),
                                              args.rows, args.upsert_rows, 1, args.buckets, True, 2, "aggregation")
                ids = np.sort(np.random.default_rng(100 + i).choice(args.rows, args.upsert_rows, replace=False))
                data = bench_dv.batch(ids, 99)
                if proxy is not None:
                    proxy.clear()
                with _splicing(args.splice if mode == "splice" else "off") as counts:
                    t0, c0 = time.perf_counter(), time.process_time()
                    table.write_arrow(data)
                    wall[mode].append(time.perf_counter() - t0)
                    cpu[mode].append(time.process_time() - c0)
                made[mode] += counts
                if proxy is not None:
                    requests[mode] += Counter(method for method, _, _ in proxy.requests)
        if proxy is not None:
            proxy.stop()
    for mode in ("splice", "whole"):
        print(f"{mode}: files {dict(made[mode])}; CPU ms {[round(c * 1e3, 1) for c in cpu[mode]]} "
              f"(median {statistics.median(cpu[mode]) * 1e3:.1f}); wall ms {[round(w * 1e3, 1) for w in wall[mode]]} "
              f"(median {statistics.median(wall[mode]) * 1e3:.1f})"
              + (f"; requests per round {({k: v / args.repeat for k, v in sorted(requests[mode].items())})}"
                 if args.requests else ""))
    print(f"splice/whole: CPU {statistics.median(cpu['splice']) / statistics.median(cpu['whole']):.3f}x, "
          f"wall {statistics.median(wall['splice']) / statistics.median(wall['whole']):.3f}x (medians)")


if __name__ == "__main__":
    main()
