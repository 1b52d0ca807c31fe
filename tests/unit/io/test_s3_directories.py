"""Removing an empty "directory" on S3 costs one LIST (and a DELETE only for a directory marker).

Orphan removal and expiry ask `S3FileIO.delete_dir_if_empty` for every bucket and partition
directory they emptied. An object store has no directories: a prefix with no key under it is
already gone. Counted on a real S3 API (moto's server on loopback) through the reliability suite's
proxy, which logs every request.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest

from lake_assets.io import FileIO, S3FileIO
from tests.reliability.fault_proxy import FaultProxy

Store = tuple[S3FileIO, str, FaultProxy, Any]


@pytest.fixture
def store(s3_warehouse: tuple[str, dict[str, Any]], s3_server: str) -> Iterator[Store]:
    wh, opts = s3_warehouse
    proxy = FaultProxy(s3_server).start()
    fio, root = FileIO.for_url(wh, **{**opts, "client_kwargs": {**opts["client_kwargs"],
                                                                "endpoint_url": proxy.endpoint}})
    assert isinstance(fio, S3FileIO)
    # objects are put straight to the server: only the calls under test go through the proxy
    client = boto3.client("s3", endpoint_url=s3_server, aws_access_key_id="testing",
                          aws_secret_access_key="testing", region_name="us-east-1")
    yield fio, root, proxy, client
    proxy.stop()


def _keys(client: Any, root: str) -> list[str]:
    bucket, prefix = root.split("/", 1)
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/")
    return sorted(c["Key"][len(prefix) + 1:] for page in pages for c in page.get("Contents", []))


def _put(client: Any, root: str, *names: str) -> None:
    bucket, prefix = root.split("/", 1)

    def put(name: str) -> None:
        client.put_object(Bucket=bucket, Key=f"{prefix}/{name}", Body=b"" if name.endswith("/") else b"x")

    # a boto3 client is thread-safe; 1,001 puts one after another waited ~6 s on round trips
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(put, names))


def _asked(proxy: FaultProxy) -> list[str]:
    return [method for method, _, _ in proxy.requests]


def test_a_full_directory_is_kept_after_one_short_listing(store: Store) -> None:
    """1,001 files: more than one listing page, still one request asking for two keys."""
    fio, root, proxy, client = store
    _put(client, root, *(f"p/bucket-0/data-{i}.parquet" for i in range(1001)))
    proxy.clear()
    assert fio.delete_dir_if_empty(f"{root}/p/bucket-0") is False
    assert _asked(proxy) == ["GET"]
    assert "max-keys=2" in proxy.requests[0][1] and "list-type=2" in proxy.requests[0][1]
    assert len(_keys(client, root)) == 1001


def test_a_prefix_with_nothing_under_it_is_gone_after_one_listing(store: Store) -> None:
    fio, root, proxy, client = store
    _put(client, root, "p/bucket-10/data-0.parquet", "p/bucket-1.txt")  # share the text "bucket-1"
    proxy.clear()
    assert fio.delete_dir_if_empty(f"{root}/p/bucket-1") is True
    assert _asked(proxy) == ["GET"]
    assert _keys(client, root) == ["p/bucket-1.txt", "p/bucket-10/data-0.parquet"]


def test_a_directory_marker_alone_is_deleted(store: Store) -> None:
    """S3A (and consoles) mark a directory with the empty object ``<dir>/``: the one thing to delete."""
    fio, root, proxy, client = store
    _put(client, root, "p/bucket-0/", "p/bucket-00/x")
    proxy.clear()
    assert fio.delete_dir_if_empty(f"{root}/p/bucket-0") is True
    assert _asked(proxy) == ["GET", "DELETE"]
    assert _keys(client, root) == ["p/bucket-00/x"]


@pytest.mark.parametrize("names", [("p/bucket-0/", "p/bucket-0/data-0.parquet"), ("p/bucket-0/sub/x",)])
def test_a_marker_with_files_or_a_nested_file_keeps_everything(store: Store, names: tuple[str, ...]) -> None:
    fio, root, proxy, client = store
    _put(client, root, *names)
    proxy.clear()
    assert fio.delete_dir_if_empty(f"{root}/p/bucket-0") is False
    assert _asked(proxy) == ["GET"]
    assert _keys(client, root) == sorted(names)


def test_the_bucket_itself_is_never_removed(store: Store) -> None:
    fio, root, proxy, _ = store
    proxy.clear()
    assert fio.delete_dir_if_empty(root.split("/", 1)[0]) is False
    assert _asked(proxy) == []
