"""Tables with ``file.suffix.include.compression = true`` against pypaimon 2.1 and pypaimon-rust 0.4.

Neither names files with the codec: pypaimon 2.1 builds its path factory with the flag hard-coded
false (``FileStoreTable.path_factory``), so its files of such a table are ``.parquet`` (a pypaimon
deviation, not ours to copy; names are never parsed for anything but the format). Both read
lake_assets' ``.zst.parquet`` / ``.gz.orc`` files, taking the format from the last extension
(pypaimon's ``format_identifier``, as Java's), and lake_assets reads and compacts a table mixing
their names with ours."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.interop.paimon import Pypaimon, PypaimonRust

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(ks: range) -> pa.Table:
    return pa.table({"k": list(ks), "v": [str(k) for k in ks]}, schema=SCHEMA)


def _names(cat: Catalog, name: str) -> list[str]:
    t = cat.get_table(name)
    return sorted(e.file.file_name for e in t.store.file_store_scan().live_entries(t.latest_snapshot()))


@pytest.mark.parametrize(("fmt", "codec", "suffix"), [("parquet", "zstd", ".zst.parquet"),
                                                      ("orc", "zstd", ".zst.orc"),
                                                      ("parquet", "gzip", ".gz.parquet")])
def test_pypaimon_and_rust_read_our_suffixed_files(pypaimon: Pypaimon, rust: PypaimonRust, tmp_warehouse: str,
                                                   fmt: str, codec: str, suffix: str) -> None:
    cat = Catalog(tmp_warehouse)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "2", "file.format": fmt, "file.compression": codec, "file.suffix.include.compression": "true"})
    t.write_arrow(_rows(range(10)))
    t.write_arrow(_rows(range(5, 12)))
    assert all(n.endswith(suffix) for n in _names(cat, "db.t"))
    want = _rows(range(12)).to_pylist()
    assert pypaimon.read(tmp_warehouse, "db.t").sort_by("k").to_pylist() == want
    assert sorted(rust.read_rows(tmp_warehouse, "db.t"), key=lambda r: r["k"]) == want
    # pypaimon appends to the table: its names are plain, ours keep the codec; all read and compact together
    pypaimon.write(tmp_warehouse, "db.t", _rows(range(20, 23)))
    names = _names(cat, "db.t")
    assert any(n.endswith(f".{fmt}") and not n.endswith(suffix) for n in names)
    t = cat.get_table("db.t")
    t.compact(full=True)
    assert all(n.endswith(suffix) for n in _names(cat, "db.t"))
    both = pa.concat_tables([_rows(range(12)), _rows(range(20, 23))]).to_pylist()
    assert t.to_arrow().sort_by("k").to_pylist() == both
    assert pypaimon.read(tmp_warehouse, "db.t").sort_by("k").to_pylist() == both
