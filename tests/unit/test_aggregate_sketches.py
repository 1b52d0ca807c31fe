"""rbm32 / rbm64 / hll_sketch / theta_sketch without Java: options, nulls, retractions, bad bytes,
and every merging path (partial-update sequence groups, writes, compaction, lookup changelog).
Byte-identity with Paimon Java: tests/differential/test_aggregate_sketches_java.py."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import datasketches
import pyarrow as pa
import pytest
from pyroaring import BitMap

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError, OptionError
from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.lsm.merge_engine.partial_update import PartialUpdate
from lake_assets.lsm.merge_engine.roaring64_bitmap import deserialize
from lake_assets.options import CoreOptions
from lake_assets.spec.row_kind import RowKind

SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
FUNCTIONS = ("rbm32", "rbm64", "hll_sketch", "theta_sketch")


def rbm(*values: int, optimize: bool = True) -> bytes:
    b = BitMap(values)
    if optimize:
        b.run_optimize()
    out: bytes = b.serialize()
    return out


def members(data: bytes) -> set[int]:
    return set(BitMap.deserialize(data))


def records(rows: Sequence[tuple[int, bytes | None]], kinds: Sequence[int] | None = None,
            extra: Mapping[str, list[object]] | None = None) -> pa.Table:
    cols: dict[str, pa.Array] = {
        "k": pa.array([k for k, _ in rows], type=pa.int64()),
        "v": pa.array([v for _, v in rows], type=pa.binary()),
    }
    for name, values in (extra or {}).items():
        cols[name] = pa.array(values, type=pa.int64())
    cols[SEQ] = pa.array(range(len(rows)), type=pa.int64())
    cols[KIND] = pa.array(kinds or [RowKind.INSERT] * len(rows), type=pa.int8())
    return pa.table(cols)


def aggregation(function: str, **options: str) -> Aggregation:
    return Aggregation([("k", pa.int64()), ("v", pa.binary())], ["k"],
                       CoreOptions({"merge-engine": "aggregation", "fields.v.aggregate-function": function, **options}))


@pytest.mark.parametrize("function", FUNCTIONS)
def test_needs_a_binary_column(function: str) -> None:
    with pytest.raises(OptionError, match=f"{function}.*'v'.*VARBINARY"):
        Aggregation([("k", pa.int64()), ("v", pa.int64())], ["k"],
                    CoreOptions({"fields.v.aggregate-function": function}))
    aggregation(function)  # a binary column is fine


def test_nulls_and_single_values_come_out_unchanged() -> None:
    plain = rbm(1, 2, 3, 4, optimize=False)  # not run-optimized: Java's agg(null, v) returns v as it is
    merged = aggregation("rbm32").merge(
        records([(1, None), (1, plain), (1, None), (2, None), (2, None), (3, rbm(7)), (3, rbm(9, 10))]), ["k"])
    assert merged.column("v").to_pylist() == [plain, None, rbm(7, 9, 10)]


def test_retraction_is_refused_as_by_paimon_unless_ignored() -> None:
    table = records([(1, rbm(1)), (1, rbm(2))], kinds=[RowKind.INSERT, RowKind.UPDATE_BEFORE])
    with pytest.raises(InvalidDataError, match=r"'rbm32'.*cannot retract.*ignore-retract.*Paimon"):
        aggregation("rbm32").merge(table, ["k"])
    merged = aggregation("rbm32", **{"fields.v.ignore-retract": "true"}).merge(table, ["k"])
    assert merged.column("v").to_pylist() == [rbm(1)]


@pytest.mark.parametrize(("function", "bad"), [
    ("rbm32", b"\x01\x02\x03"), ("rbm64", b"\x01garbage"), ("rbm64", b"\x07"),
    ("hll_sketch", b"\x02\x01\x07\x0c"), ("theta_sketch", b"\x01\x02"),
])
def test_bytes_that_are_no_bitmap_or_sketch_fail_naming_the_column(function: str, bad: bytes) -> None:
    good = {"rbm32": rbm(1), "rbm64": b"\x00", "hll_sketch": _hll(1), "theta_sketch": _theta(1)}[function]
    with pytest.raises(InvalidDataError, match=f"'{function}' of column 'v' cannot merge"):
        aggregation(function).merge(records([(1, good), (1, bad)]), ["k"])


def _hll(*values: int) -> bytes:
    s = datasketches.hll_sketch(12)
    for v in values:
        s.update(v)
    out: bytes = s.serialize_compact()
    return out


def _theta(*values: int) -> bytes:
    s = datasketches.update_theta_sketch(12)
    for v in values:
        s.update(v)
    out: bytes = s.compact().serialize()
    return out


def test_sketch_unions_estimate_the_distinct_count() -> None:
    rows = [(1, _hll(1, 2, 3)), (1, _hll(3, 4)), (2, _theta(1, 2)), (2, _theta(2, 5, 6))]
    hll = aggregation("hll_sketch").merge(records(rows[:2]), ["k"]).column("v")[0].as_py()
    theta = aggregation("theta_sketch").merge(records(rows[2:]), ["k"]).column("v")[0].as_py()
    assert datasketches.hll_sketch.deserialize(hll).get_estimate() == pytest.approx(4)
    assert datasketches.compact_theta_sketch.deserialize(theta).get_estimate() == 4


def test_rbm64_of_an_empty_and_a_filled_bitmap() -> None:
    empty = b"\x00"  # Roaring64Bitmap's empty image
    assert aggregation("rbm64").merge(records([(1, empty), (1, empty)]), ["k"]).column("v").to_pylist() == [empty]
    # the filled side comes back as written when the other is empty (Java's or() of an empty bitmap)
    filled = deserialize(b"\x00")
    assert filled.serialize() == empty


def test_partial_update_sequence_group_unions_bitmaps() -> None:
    fn = PartialUpdate([("k", pa.int64()), ("v", pa.binary()), ("g", pa.int64())], ["k"], CoreOptions({
        "merge-engine": "partial-update", "fields.g.sequence-group": "v", "fields.v.aggregate-function": "rbm32"}))
    merged = fn.merge(records([(1, rbm(1)), (1, rbm(5)), (1, None)], extra={"g": [1, 2, 3]}), ["k"])
    assert members(merged.column("v")[0].as_py()) == {1, 5}


SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.binary()), ("op", pa.string())])


def test_table_writes_compaction_and_lookup_changelog(catalog: Catalog) -> None:
    t = catalog.create_table("db.bitmaps", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "aggregation", "fields.v.aggregate-function": "rbm32",
        "changelog-producer": "lookup", "rowkind.field": "op"})

    def write(*rows: tuple[int, bytes]) -> None:
        t.write_arrow(pa.table({"k": [k for k, _ in rows], "v": [v for _, v in rows],
                                "op": ["+I"] * len(rows)}, schema=SCHEMA))

    write((1, rbm(1)), (1, rbm(2)), (2, rbm(10)))  # the write buffer merges key 1
    start = t.latest_snapshot().id
    write((1, rbm(3)), (2, rbm(11, 12)))
    state = {r["k"]: members(r["v"]) for r in t.to_arrow().to_pylist()}  # merge on read
    assert state == {1: {1, 2, 3}, 2: {10, 11, 12}}
    t.compact(full=True)
    assert {r["k"]: members(r["v"]) for r in t.to_arrow().to_pylist()} == state
    changes = [(r["k"], r["_row_kind"], members(r["v"])) for r in t.read_changes(start).to_pylist()]
    assert (1, "+U", {1, 2, 3}) in changes and (2, "+U", {10, 11, 12}) in changes
    assert (1, "-U", {1, 2}) in changes



def test_binary_n_columns_are_refused_at_create_as_by_java(catalog: Catalog) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.binary(8))])  # BINARY(8)
    with pytest.raises(OptionError, match="'rbm64' of column 'v' needs a VARBINARY"):
        catalog.create_table("db.fixed", schema, primary_keys=["k"], options={
            "merge-engine": "aggregation", "fields.v.aggregate-function": "rbm64"})
