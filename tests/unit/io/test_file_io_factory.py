"""Which backend a warehouse URI gets, and the refusals."""

from __future__ import annotations

import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidArgumentError, UnsupportedFeatureError
from lake_assets.io import FileIO, LocalFileIO, MemoryFileIO, S3FileIO


@pytest.mark.parametrize(("url", "kind", "root"), [
    ("/tmp/wh/", LocalFileIO, "/tmp/wh"),
    ("file:///tmp/wh", LocalFileIO, "/tmp/wh"),
    ("memory://wh", MemoryFileIO, "/wh"),
    ("s3://bucket/wh/", S3FileIO, "bucket/wh"),
    ("s3a://bucket/wh", S3FileIO, "bucket/wh"),
])
def test_each_scheme_gets_its_backend(url: str, kind: type, root: str) -> None:
    fio, got_root = FileIO.for_url(url)
    assert type(fio) is kind and got_root == root


def test_a_relative_path_becomes_absolute(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _, root = FileIO.for_url("wh")
    assert root == str(tmp_path / "wh")


@pytest.mark.parametrize("url", ["gs://bucket/wh", "abfs://container/wh", "hdfs://nn/wh"])
def test_a_scheme_without_put_if_absent_is_refused_when_opened(url: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match="no put-if-absent"):
        FileIO.for_url(url)
    with pytest.raises(UnsupportedFeatureError, match=url.split(":")[0]):
        Catalog(url)


def test_an_unknown_scheme_is_an_invalid_warehouse() -> None:
    with pytest.raises(InvalidArgumentError, match="Cannot open warehouse 'nosuchproto://x'"):
        Catalog("nosuchproto://x")


def test_a_local_warehouse_refuses_storage_options_it_would_ignore(tmp_path) -> None:
    with pytest.raises(InvalidArgumentError, match=r"no storage options \['key'\]"):
        Catalog(str(tmp_path), key="x")
    Catalog(str(tmp_path), auto_mkdir=True).create_database("db")  # fsspec's, always honoured


def test_the_native_s3_client_takes_its_settings_from_the_same_options() -> None:
    from lake_assets.io.s3 import native_arrow_s3

    opts = {"key": "k", "secret": "s", "use_listings_cache": False,
            "client_kwargs": {"endpoint_url": "http://127.0.0.1:9", "region_name": "eu-west-3"},
            "config_kwargs": {"retries": {"max_attempts": 1}, "connect_timeout": 2}}
    fs = native_arrow_s3(opts)
    assert fs is not None and fs.region == "eu-west-3"
    # an option without a native equivalent keeps data files on s3fs
    assert native_arrow_s3({**opts, "requester_pays": True}) is None
    assert native_arrow_s3({**opts, "client_kwargs": {**opts["client_kwargs"], "verify": False}}) is None
    assert native_arrow_s3({"key": "k"}) is None  # half a key pair
    # AWS without a region and no bucket to ask: pyarrow would guess the region, s3fs follows redirects
    assert native_arrow_s3({"key": "k", "secret": "s"}) is None
