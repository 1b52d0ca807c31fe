"""Tables indexed with range-bitmap (``file-index.range-bitmap.columns``, Paimon 1.x): writes and
compaction index every data file, reads prune by the indexes and return the rows a full read then
filtered returns."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog
from lake_assets.errors import CorruptMetadataError, UnsupportedFeatureError
from lake_assets.formats.file_index import read_container
from lake_assets.formats.range_bitmap_index import RangeBitmapIndex
from lake_assets.formats.range_bitmap_index_write import RangeBitmapIndexBuilder
from lake_assets.ops.file_index_prune import index_may_match, prunes_by_index
from lake_assets.predicate import Predicate

SCHEMA = pa.schema([("id", pa.int32()), ("i", pa.int32()), ("f", pa.float64()), ("s", pa.string()),
                    ("d", pa.date32()), ("ts", pa.timestamp("us")), ("bo", pa.bool_())])
COLUMNS = "i,f,s,d,ts,bo"
OPS = ("=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null")


def _rows(ids: list[int], seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    base = int(rng.integers(-50, 50))
    vals = [None if rng.random() < 0.15 else base + int(rng.integers(-20, 20)) for _ in ids]
    return pa.table({
        "id": ids, "i": vals,
        "f": [None if v is None else (-0.0 if v == 0 else float("nan") if v == 7 else v / 4) for v in vals],
        "s": [None if v is None else f"s{v}" for v in vals],
        "d": [None if v is None else dt.date(2000, 1, 1) + dt.timedelta(days=v) for v in vals],
        "ts": [None if v is None else dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=7 * v) for v in vals],
        "bo": [None if v is None else v % 3 == 0 for v in vals]}, schema=SCHEMA)


def _literal(column: str, v: int) -> Any:
    return {"i": v, "f": v / 4, "s": f"s{v}", "d": dt.date(2000, 1, 1) + dt.timedelta(days=v),
            "ts": dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=7 * v), "bo": v % 3 == 0}[column]


@pytest.fixture(scope="module")
def rb_table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    lake = Catalog(str(tmp_path_factory.mktemp("rb") / "wh"))
    lake.create_database("db")
    t = lake.create_table("db.t", SCHEMA, options={
        "bucket": "-1", "file-index.range-bitmap.columns": COLUMNS, "file-index.range-bitmap.s.chunk-size": "20 b",
        "file-index.in-manifest-threshold": "300 b"})
    for k in range(6):
        t.write_arrow(_rows(list(range(k * 30, k * 30 + 30)), k))
    return lake.get_table("db.t")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(terms=st.lists(st.tuples(st.sampled_from(COLUMNS.split(",")), st.sampled_from(OPS),
                                st.lists(st.integers(-75, 75), min_size=1, max_size=3)), min_size=1, max_size=2),
       second=st.booleans())
def test_pruned_read_equals_full_read_then_filtered(rb_table: Any, terms: list[Any], second: bool) -> None:
    clause: list[tuple[Any, ...]] = []
    for c, op, vs in terms:
        if op in ("is null", "is not null"):
            clause.append((c, op))
        else:
            clause.append((c, op, [_literal(c, v) for v in vs] if op in ("in", "not in") else _literal(c, vs[0])))
    flt: Any = [clause, [("id", "<", 5)]] if second else clause
    pred = Predicate.of(flt)
    assert pred is not None and prunes_by_index(rb_table.schema, pred)
    full = rb_table.to_arrow()
    got = rb_table.to_arrow(filter=flt).column("id").to_pylist()
    # the ids (the rows hold NaN, which no table equals)
    assert sorted(got) == sorted(pred.filter_table(full).column("id").to_pylist())


def _entries(t: Any) -> list[Any]:
    return sorted(t.store.file_store_scan().live_entries(t.latest_snapshot()), key=lambda e: e.file.min_sequence_number)


def test_every_file_is_indexed_and_prunes_by_a_range(rb_table: Any) -> None:
    t = rb_table
    entries = _entries(t)
    # over the 300-byte threshold: written beside the data files (the compaction test reads embedded ones)
    assert all(e.file.embedded_file_index is None and e.file.extra_files for e in entries)
    full = t.to_arrow()
    lo = min(v for v in full.column("i").to_pylist() if v is not None)
    for flt in ([("i", "<=", lo)], [("s", "=", f"s{lo}")], [("d", "<", _literal("d", lo + 1))]):
        pred = Predicate.of(flt)
        assert pred is not None
        kept = [index_may_match(t.store, e, pred, t.schema) for e in entries]
        assert any(kept) and not all(kept), flt  # the files holding the least value only


def test_compaction_indexes_its_outputs(tmp_path: Path) -> None:
    lake = Catalog(str(tmp_path / "wh"))
    lake.create_database("db")
    t = lake.create_table("db.c", SCHEMA, options={
        "bucket": "-1", "file-index.range-bitmap.columns": "s,i", "file-index.bitmap.columns": "s",
        "file-index.bsi.columns": "i", "file-index.range-bitmap.s.chunk-size": "10 b",
        "file-index.in-manifest-threshold": "1 mb"})
    for k in range(3):
        t.write_arrow(_rows(list(range(k * 10, k * 10 + 10)), 10 + k))
    before = t.to_arrow().sort_by("id")
    t.compact(full=True)
    t = lake.get_table("db.c")
    (entry,) = t.store.file_store_scan().live_entries(t.latest_snapshot())
    assert entry.file.embedded_file_index is not None
    container = read_container(entry.file.embedded_file_index)
    assert {c: set(types) for c, types in container.items()} == {"s": {"bitmap", "range-bitmap"},
                                                                 "i": {"bsi", "range-bitmap"}}
    compacted = t.to_arrow()
    for column, size in (("s", 10), ("i", None)):
        b = RangeBitmapIndexBuilder(t.schema.field(column).type, column, size)
        b.add(compacted.column(column))
        assert container[column]["range-bitmap"] == b.finish()
    assert RangeBitmapIndex(container["s"]["range-bitmap"], t.schema.field("s").type).rows == 30
    assert sorted(t.to_arrow(filter=[("s", ">", "s0")]).column("id").to_pylist()) == \
        before.filter(pa.compute.greater(before.column("s"), "s0")).column("id").to_pylist()


@pytest.mark.parametrize(("column_type", "match"), [
    (pa.binary(), "does not support type"),
    (pa.list_(pa.int32()), "does not support type ARRAY"),
    (pa.decimal128(20, 2), "precision 18"),
])
def test_types_java_refuses_refuse_writes_and_compaction(tmp_path: Path, column_type: pa.DataType,
                                                         match: str) -> None:
    lake = Catalog(str(tmp_path / "wh"))
    lake.create_database("db")
    schema = pa.schema([("id", pa.int32()), ("x", column_type)])
    t = lake.create_table("db.u", schema, options={"bucket": "-1"})
    t.write_arrow(pa.table({"id": [1], "x": [None]}, schema=schema))
    # refused at ALTER (tests/unit/test_range_bitmap_column_types.py): a schema another engine wrote
    schema_v1 = dataclasses.replace(t.schema, id=1, options={**t.schema.options,
                                                             "file-index.range-bitmap.columns": "x"})
    t.file_io.write_bytes(t.paths.schema_file(1), schema_v1.to_json().encode())
    t = lake.get_table("db.u")
    with pytest.raises(UnsupportedFeatureError, match=match):
        t.write_arrow(pa.table({"id": [2], "x": [None]}, schema=schema))
    with pytest.raises(UnsupportedFeatureError, match=match):
        t.compact(full=True)
    assert t.to_arrow().column("id").to_pylist() == [1]


def test_an_index_that_does_not_parse_fails_the_filtered_read(rb_table: Any, tmp_path: Path) -> None:
    lake = Catalog(str(tmp_path / "wh"))
    lake.create_database("db")
    t = lake.create_table("db.x", SCHEMA, options={
        "bucket": "-1", "file-index.range-bitmap.columns": "i", "file-index.in-manifest-threshold": "0"})
    rows = _rows(list(range(20)), 3)
    t.write_arrow(rows)
    (entry,) = _entries(t)
    (index_name,) = entry.file.extra_files
    (data_path,) = Path(tmp_path / "wh").rglob(entry.file.file_name)
    index_path = data_path.parent / index_name
    good = index_path.read_bytes()
    absent = max(v for v in rows.column("i").to_pylist() if v is not None) + 1
    pred = Predicate.of([("i", "=", absent)])
    assert pred is not None
    assert index_may_match(t.store, entry, pred, t.schema) is False
    index_path.write_bytes(good[:-8])  # the bit-sliced index cut short: parsed on demand, fails then
    # as Java 0.9's reader fails on a damaged .index file: never read past
    with pytest.raises(CorruptMetadataError, match=f"file index {index_name} of .* is corrupt"):
        index_may_match(t.store, entry, pred, t.schema)
    present = min(v for v in rows.column("i").to_pylist() if v is not None)  # stats cannot prune the file
    with pytest.raises(CorruptMetadataError, match=f"file index {index_name} of .* is corrupt"):
        t.to_arrow(filter=[("i", "in", [present, absent])])
    assert t.to_arrow().num_rows == 20
