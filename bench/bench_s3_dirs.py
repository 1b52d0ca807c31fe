"""Requests `S3FileIO.delete_dir_if_empty` makes, against the generic fsspec implementation it replaced.

Orphan removal and expiry ask it for every bucket and partition directory they emptied. Counted,
not timed: a moto server on loopback behind the reliability suite's logging proxy; objects are put
straight to the server, so only the calls measured go through the proxy.

    PYTHONPATH=. .venv/bin/python bench/bench_s3_dirs.py [--files 2500]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import boto3

from lake_assets.io import FileIO, S3FileIO
from lake_assets.io.fsspec_io import FsspecFileIO
from tests.reliability.conftest import _free_port
from tests.reliability.fault_proxy import FaultProxy


def _server() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    exe = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    for _ in range(150):
        try:
            client.list_buckets()
            return proc, endpoint
        except Exception:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("moto server did not start")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=2500, help="files in the full directory")
    args = parser.parse_args()
    proc, endpoint = _server()
    try:
        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                              aws_secret_access_key="testing", region_name="us-east-1")
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        client.create_bucket(Bucket=bucket)
        proxy = FaultProxy(endpoint).start()
        opts = {"key": "testing", "secret": "testing",
                "client_kwargs": {"endpoint_url": proxy.endpoint, "region_name": "us-east-1"}}
        fio, root = FileIO.for_url(f"s3://{bucket}/wh", **opts)
        assert isinstance(fio, S3FileIO)
        cases = {
            f"{args.files} files": [f"full/data-{i}" for i in range(args.files)],
            "nothing under it": [],
            "a directory marker alone": ["marker/"],
        }
        dirs = {"nothing under it": "gone", f"{args.files} files": "full", "a directory marker alone": "marker"}
        for name in (k for keys in cases.values() for k in keys):
            client.put_object(Bucket=bucket, Key=f"wh/{name}", Body=b"" if name.endswith("/") else b"x")
        print("| directory | implementation | answer | requests |\n|---|---|---|---|")
        for case, d in dirs.items():
            for label, call in (("generic fsspec (before)", lambda p: FsspecFileIO.delete_dir_if_empty(fio, p)),
                                ("S3FileIO (now)", fio.delete_dir_if_empty)):
                if case == "a directory marker alone":
                    client.put_object(Bucket=bucket, Key=f"wh/{d}/", Body=b"")
                proxy.clear()
                answer = call(f"{root}/{d}")
                asked = Counter(m for m, _, _ in proxy.requests)
                print(f"| {case} | {label} | {answer} | {sum(asked.values())} "
                      f"({', '.join(f'{n} {m}' for m, n in sorted(asked.items()))}) |")
        proxy.stop()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
