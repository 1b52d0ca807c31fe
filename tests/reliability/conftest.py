"""A real S3 API on loopback (moto's server), started once per test session."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server():
    pytest.importorskip("s3fs")
    pytest.importorskip("moto")
    port = _free_port()
    exe = Path(sys.executable).with_name("moto_server")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "moto.server"]
    proc = subprocess.Popen([*cmd, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("moto server did not start")
    yield endpoint
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def s3_warehouse(s3_server):
    """(warehouse URL, storage options) in a fresh bucket."""
    import boto3

    bucket = f"lake-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server, aws_access_key_id="testing", aws_secret_access_key="testing",
                 region_name="us-east-1").create_bucket(Bucket=bucket)
    opts = {"key": "testing", "secret": "testing",
            "client_kwargs": {"endpoint_url": s3_server, "region_name": "us-east-1"}}
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    return f"s3://{bucket}/warehouse", opts


@pytest.fixture
def faulty_s3(s3_warehouse, s3_server):
    """(warehouse URL, storage options through a fault-injecting proxy, the proxy) on a fresh bucket."""
    from tests.reliability.fault_proxy import FaultProxy

    wh, opts = s3_warehouse
    proxy = FaultProxy(s3_server).start()
    faulty = {**opts, "client_kwargs": {**opts["client_kwargs"], "endpoint_url": proxy.endpoint}}
    yield wh, faulty, proxy
    proxy.stop()
