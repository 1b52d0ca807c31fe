"""The `FileIO` contract run against every backend: local disk, memory, S3 (moto on loopback)."""

from __future__ import annotations

import os
import uuid

import boto3
import pytest

from lake_assets.io import FileIO, LocalFileIO, MemoryFileIO, S3FileIO
from tests.unit.io.contract import FileIOContract, Store


class TestLocalFileIO(FileIOContract):
    @pytest.fixture
    def store(self, tmp_path) -> Store:
        fio, root = FileIO.for_url(str(tmp_path / "wh"))
        assert isinstance(fio, LocalFileIO)
        return fio, root

    def test_walk_never_follows_a_symlink(self, store: Store, tmp_path) -> None:
        fio, root = store
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "precious").write_bytes(b"x")
        fio.write_bytes(f"{root}/t/own", b"x")
        os.symlink(outside, f"{root}/t/linked-dir")
        os.symlink(outside / "precious", f"{root}/t/linked-file")
        assert [s.path for s in fio.walk_files(f"{root}/t")] == [f"{root}/t/own"]

    def test_a_local_uri_is_a_plain_path(self, store: Store) -> None:
        fio, root = store
        assert fio.uri(f"{root}/x") == f"{root}/x"


class TestMemoryFileIO(FileIOContract):
    @pytest.fixture
    def store(self) -> Store:
        fio, root = FileIO.for_url(f"memory://contract-{uuid.uuid4().hex}")
        assert isinstance(fio, MemoryFileIO)
        yield fio, root
        fio.delete_tree(root)  # the memory store is process-wide

    def test_instances_share_the_process_wide_store(self, store: Store) -> None:
        fio, root = store
        other, same_root = FileIO.for_url(fio.uri(root))
        assert same_root == root
        assert other.try_create(f"{root}/s", b"a") is True
        assert fio.try_create(f"{root}/s", b"b") is False


class TestS3FileIO(FileIOContract):
    race_rounds = 2

    @pytest.fixture
    def store(self, s3_warehouse) -> Store:
        wh, opts = s3_warehouse
        self._opts = opts
        fio, root = FileIO.for_url(wh, **opts)
        assert isinstance(fio, S3FileIO)
        return fio, root

    def storage_options(self) -> dict:
        return self._opts

    def test_the_retry_of_a_landed_create_is_recognised_by_its_content(self, store: Store) -> None:
        # what a client retry after a lost response meets: its own bytes are a success, not a race
        fio, root = store
        assert fio.try_create(f"{root}/s/snapshot-1", b"mine") is True
        assert fio.try_create(f"{root}/s/snapshot-1", b"mine") is True
        assert fio.try_create(f"{root}/s/snapshot-1", b"theirs") is False

    def test_a_lost_create_is_seen_in_the_error_code_not_its_message(self, store: Store, s3_server) -> None:
        # a real 412 from the S3 API, as botocore reports it
        from lake_assets.io.s3 import s3_error_code

        _, root = store
        bucket, key = f"{root}/s/snapshot-2".split("/", 1)
        client = boto3.client("s3", endpoint_url=s3_server, aws_access_key_id="testing",
                              aws_secret_access_key="testing", region_name="us-east-1")
        client.put_object(Bucket=bucket, Key=key, Body=b"theirs")
        with pytest.raises(Exception) as info:
            client.put_object(Bucket=bucket, Key=key, Body=b"mine", IfNoneMatch="*")
        assert s3_error_code(info.value) == "PreconditionFailed"
        wrapped = OSError("an unrelated message")
        wrapped.__cause__ = info.value
        assert s3_error_code(wrapped) == "PreconditionFailed"
        assert s3_error_code(OSError("PreconditionFailed 412")) is None  # text alone says nothing

    def test_uri_keeps_the_scheme(self, store: Store) -> None:
        fio, root = store
        assert fio.uri(f"{root}/x") == f"s3://{root}/x"


def test_deleting_a_tag_that_is_not_there_says_so_on_s3(s3_warehouse) -> None:
    # S3 answers a DELETE of an absent key with success: the backend must look, or delete_tag
    # of a mistyped name would report nothing
    import pyarrow as pa

    from lake_assets import Catalog
    from lake_assets.errors import SnapshotNotFoundError

    wh, opts = s3_warehouse
    cat = Catalog(wh, **opts)
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("k", pa.int64())]))
    t.write_arrow(pa.table({"k": [1]}))
    t.create_tag("v1")
    t.delete_tag("v1")
    with pytest.raises(SnapshotNotFoundError, match="no tag 'v1'"):
        t.delete_tag("v1")


@pytest.mark.parametrize("kind", ["memory", "local"])
def test_a_file_io_survives_pickling(kind: str, tmp_path) -> None:
    # Spark ships tables (and their FileIO) to executors
    import pickle

    fio, root = FileIO.for_url(f"memory://pickled-{uuid.uuid4().hex}" if kind == "memory" else str(tmp_path))
    fio.write_bytes(f"{root}/p", b"1")
    clone = pickle.loads(pickle.dumps(fio))
    assert type(clone) is type(fio) and clone.read_bytes(f"{root}/p") == b"1"
    fio.delete_tree(root)


def test_an_s3_file_io_survives_pickling_and_reads_natively_after(s3_warehouse) -> None:
    import pickle

    import pyarrow as pa
    import pyarrow.parquet as pq

    wh, opts = s3_warehouse
    fio, root = FileIO.for_url(wh, **opts)
    sink = fio.open_output(f"{root}/d.parquet")
    pq.write_table(pa.table({"k": [1, 2]}), sink)
    sink.close()
    assert fio.open_input(f"{root}/d.parquet").size() > 0  # the native client is built
    clone = pickle.loads(pickle.dumps(fio))
    with clone.open_input(f"{root}/d.parquet") as src:
        assert pq.ParquetFile(src).read().column("k").to_pylist() == [1, 2]


def test_a_conflicting_conditional_put_in_flight_is_retried(s3_warehouse) -> None:
    # AWS answers 409 ConditionalRequestConflict when another conditional PUT of the key is in
    # flight: nothing was written, so the create is tried again (moto never answers 409: the
    # first answer is injected, as s3fs raises it; the retry goes to the real server)
    from botocore.exceptions import ClientError
    from s3fs.errors import translate_boto_error

    wh, opts = s3_warehouse
    fio, root = FileIO.for_url(wh, **opts)
    assert isinstance(fio, S3FileIO)
    real = fio.fs.pipe_file
    calls: list[str] = []

    def conflict_once(path: str, data: bytes, **kwargs: object) -> None:
        calls.append(path)
        if len(calls) == 1:
            error = ClientError({"Error": {"Code": "ConditionalRequestConflict", "Message": "in flight"},
                                 "ResponseMetadata": {"HTTPStatusCode": 409}}, "PutObject")
            raise translate_boto_error(error)
        real(path, data, **kwargs)

    fio.fs.pipe_file = conflict_once  # fsspec caches filesystems: undone below for other tests
    try:
        assert fio.try_create(f"{root}/snapshot/snapshot-1", b"mine") is True
    finally:
        del fio.fs.pipe_file
    assert len(calls) == 2 and fio.read_bytes(f"{root}/snapshot/snapshot-1") == b"mine"
