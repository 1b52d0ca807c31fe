"""Code outside `lake_assets.io` that used to branch on the backend, now asking the contract."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets.io import FileIO

SCHEMA = pa.schema([("k", pa.int64())])


def _sink(url: str, opts: dict):
    pytest.importorskip("pyspark")
    from lake_assets.spark.jobs.changelog import ParquetSink

    return ParquetSink(url, opts, SCHEMA)


@pytest.mark.parametrize("backend", ["local", "s3"])
def test_changelog_export_publishes_one_whole_file(backend: str, tmp_path, request) -> None:
    url, opts = (str(tmp_path / "out"), {}) if backend == "local" else request.getfixturevalue("s3_warehouse")
    fio, root = FileIO.for_url(url, **opts)
    sink = _sink(url, opts)
    sink.start(1, 3)
    sink.write(pa.table({"k": [1, 2]}))
    # a reader of the export directory never sees a partial export under its final name
    assert "changelog-000000000001-000000000003.parquet" not in fio.list_names(root)
    done = sink.finish()
    assert done["file"] == fio.uri(f"{root}/changelog-000000000001-000000000003.parquet")
    assert fio.list_names(root) == ["changelog-000000000001-000000000003.parquet"]  # no temporary left
    assert sink.last_exported() == 3
    with fio.open_input(f"{root}/changelog-000000000001-000000000003.parquet") as src:
        assert pq.ParquetFile(src).read().column("k").to_pylist() == [1, 2]


@pytest.mark.parametrize("backend", ["local", "s3"])
def test_aborted_changelog_export_leaves_nothing(backend: str, tmp_path, request) -> None:
    url, opts = (str(tmp_path / "out"), {}) if backend == "local" else request.getfixturevalue("s3_warehouse")
    fio, root = FileIO.for_url(url, **opts)
    sink = _sink(url, opts)
    sink.start(4, 5)
    sink.write(pa.table({"k": [1]}))
    sink.abort()
    assert fio.list_names(root) == []
