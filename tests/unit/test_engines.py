"""Partial-update and aggregation merge engines: hand-checked cases, models, associativity, vectors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lake_assets.errors import InvalidDataError, OptionError, UnsupportedFeatureError
from lake_assets.lsm.merge import sort_for_merge
from lake_assets.lsm.merge_engine.aggregate_arithmetic import sum_fold
from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.lsm.merge_engine.function import MergeFunction
from lake_assets.lsm.merge_engine.partial_update import PartialUpdate
from lake_assets.lsm.merge_engine.registry import merge_engine
from lake_assets.lsm.merge_engine.segment_reduce import MAX_RUN
from lake_assets.options import CoreOptions
from tests.vectors import load_json

INS, UB, UA, DEL = 0, 1, 2, 3
SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
Record = tuple[int, dict[str, Any]]

HYPO = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- helpers


def fields_of(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    return [(f.name, f.type) for f in schema]


def raw_table(schema: pa.Schema, records: Sequence[Record], first_seq: int = 0) -> pa.Table:
    """Records in arrival order, numbered from first_seq, not yet sorted."""
    t = pa.Table.from_pylist([r for _, r in records], schema=schema)
    n = len(records)
    t = t.append_column(SEQ, pa.array(range(first_seq, first_seq + n), type=pa.int64()))
    return t.append_column(KIND, pa.array([k for k, _ in records], type=pa.int8()))


def merge(fn: MergeFunction, table: pa.Table, keys: Sequence[str] = ("k",)) -> pa.Table:
    return fn.merge(sort_for_merge(table, keys), keys)


def run(fn: MergeFunction, schema: pa.Schema, records: Sequence[Record], keys: Sequence[str] = ("k",)) -> pa.Table:
    return merge(fn, raw_table(schema, records), keys)


def by_key(table: pa.Table, key: str = "k") -> dict[Any, tuple[int, dict[str, Any]]]:
    return {r[key]: (r[KIND], r) for r in table.to_pylist()}


def one(table: pa.Table) -> dict[str, Any]:
    rows = table.to_pylist()
    assert len(rows) == 1, rows
    return rows[0]


def agg(schema: pa.Schema, options: Mapping[str, str], keys: Sequence[str] = ("k",)) -> Aggregation:
    return Aggregation(fields_of(schema), keys, CoreOptions(options))


def pu(schema: pa.Schema, options: Mapping[str, str], keys: Sequence[str] = ("k",)) -> PartialUpdate:
    return PartialUpdate(fields_of(schema), keys, CoreOptions(options))


def int_schema(*cols: str, dtype: pa.DataType | None = None) -> pa.Schema:
    return pa.schema([pa.field("k", pa.int64(), nullable=False), *[(c, dtype or pa.int64()) for c in cols]])


# ---------------------------------------------------------------- aggregation: functions


def test_sum_skips_nulls_and_subtracts_retractions() -> None:
    s = int_schema("v", dtype=pa.int32())
    fn = agg(s, {"fields.v.aggregate-function": "sum"})
    out = by_key(run(fn, s, [
        (INS, {"k": 1, "v": 1}), (INS, {"k": 1, "v": None}), (UA, {"k": 1, "v": 3}), (UB, {"k": 1, "v": 2}),
        (INS, {"k": 2, "v": None}),
        (DEL, {"k": 3, "v": 5}),
    ]))
    assert out[1] == (INS, {"k": 1, "v": 2, SEQ: 3, KIND: INS})
    assert out[2][1]["v"] is None
    # a key's only record is kept as written (Paimon's ReducerMergeFunctionWrapper): a later
    # merge with older records retracts it from them
    assert out[3] == (DEL, {"k": 3, "v": 5, SEQ: 5, KIND: DEL})
    two = by_key(run(fn, s, [(DEL, {"k": 3, "v": 5}), (UB, {"k": 3, "v": 1})]))
    assert two[3] == (INS, {"k": 3, "v": -6, SEQ: 1, KIND: INS})  # retract on empty = negative
    assert run(fn, s, [(INS, {"k": 1, "v": 1})]).schema == raw_table(s, []).schema


def test_sum_decimal_keeps_type_and_overflow_raises() -> None:
    s = pa.schema([pa.field("k", pa.int64(), nullable=False), ("d", pa.decimal128(5, 2))])
    fn = agg(s, {"fields.d.aggregate-function": "sum"})
    out = run(fn, s, [(INS, {"k": 1, "d": Decimal("1.25")}), (INS, {"k": 1, "d": Decimal("2.50")}),
                      (UB, {"k": 1, "d": Decimal("0.05")})])
    assert out.schema.field("d").type == pa.decimal128(5, 2)
    assert one(out)["d"] == Decimal("3.70")
    with pytest.raises(InvalidDataError, match="'d'"):
        run(fn, s, [(INS, {"k": 1, "d": Decimal("999.99")}), (INS, {"k": 1, "d": Decimal("0.01")})])


@pytest.mark.parametrize("dtype,big", [(pa.int32(), 2**31 - 1), (pa.int64(), 2**63 - 1), (pa.int8(), 127)])
@pytest.mark.parametrize("width", [0, MAX_RUN + 2])  # numpy passes (narrow types), then running sums
def test_sum_integer_overflow_fails_at_its_step(dtype: pa.DataType, big: int, width: int) -> None:
    # Paimon 2.0+ FieldSumAgg (#7992): addExact / subtractExact / negateExact per step, an
    # excursion a later record would bring back included (Java 0.9 to 1.4 wrapped around)
    s = int_schema("total", dtype=dtype)
    fn = agg(s, {"fields.total.aggregate-function": "sum"})
    pad: list[Record] = [(INS, {"k": 1, "total": 0})] * width
    for records in ([(INS, {"k": 1, "total": big}), (INS, {"k": 1, "total": 1})],
                    [(INS, {"k": 1, "total": big}), (INS, {"k": 1, "total": 1}), (UB, {"k": 1, "total": 1})],
                    [(UB, {"k": 1, "total": -big - 1}), (INS, {"k": 1, "total": 0})],  # minus MIN
                    [(INS, {"k": 1, "total": -1}), (UB, {"k": 1, "total": big})]):  # -1 - big = MIN: fits
        if records[-1][1]["total"] == big and records[0][1]["total"] == -1:
            assert one(run(fn, s, [*pad, *records]))["total"] == -big - 1
            continue
        with pytest.raises(InvalidDataError, match=r"overflowed column 'total'.*Paimon 2\.0"):
            run(fn, s, [*pad, *records, (INS, {"k": 2, "total": 1})])
    assert one(run(fn, s, [*pad, (INS, {"k": 1, "total": big}), (UB, {"k": 1, "total": 1}),
                           (INS, {"k": 1, "total": 1})]))["total"] == big


def test_product_multiplies_divides_and_starts_with_first_value() -> None:
    s = int_schema("p")
    fn = agg(s, {"fields.p.aggregate-function": "product"})
    out = by_key(run(fn, s, [
        (INS, {"k": 1, "p": 2}), (INS, {"k": 1, "p": 3}), (INS, {"k": 1, "p": None}), (INS, {"k": 1, "p": 4}),
        (UB, {"k": 1, "p": 3}),
        (UB, {"k": 2, "p": 5}), (INS, {"k": 2, "p": 2}),  # Paimon: a retract on empty yields the value
        (INS, {"k": 3, "p": -7}), (UB, {"k": 3, "p": 2}),  # integer division truncates toward zero
    ]))
    assert out[1][1]["p"] == 8
    assert out[2][1]["p"] == 10
    assert out[3][1]["p"] == -3
    # Paimon 2.0+ (#7906): multiplyExact per step fails, even when a later factor would bring the
    # product back (2**62 * 4 / 8) or zero it; Java divides step by step: 10 / 3 * 7 is 21, not 23
    for records in ([(INS, {"k": 1, "p": 2**40}), (INS, {"k": 1, "p": 2**40})],
                    [(INS, {"k": 1, "p": 2**62}), (INS, {"k": 1, "p": 4}), (UB, {"k": 1, "p": 8})],
                    [(INS, {"k": 1, "p": 2**40}), (INS, {"k": 1, "p": 2**40}), (INS, {"k": 1, "p": 0})],
                    [(INS, {"k": 1, "p": -(2**63)}), (UB, {"k": 1, "p": -1})]):
        with pytest.raises(InvalidDataError, match="overflowed column 'p'"):
            run(fn, s, records)
    out = one(run(fn, s, [(INS, {"k": 1, "p": 10}), (UB, {"k": 1, "p": 3}), (INS, {"k": 1, "p": 7})]))
    assert out["p"] == 21
    with pytest.raises(InvalidDataError, match="zero"):
        run(fn, s, [(INS, {"k": 1, "p": 2}), (UB, {"k": 1, "p": 0})])


def test_product_float_and_decimal() -> None:
    s = pa.schema([pa.field("k", pa.int64(), nullable=False), ("f", pa.float64()), ("d", pa.decimal128(6, 2))])
    fn = agg(s, {"fields.f.aggregate-function": "product", "fields.d.aggregate-function": "product"})
    out = one(run(fn, s, [
        (INS, {"k": 1, "f": 2.0, "d": Decimal("1.15")}),
        (INS, {"k": 1, "f": 3.0, "d": Decimal("1.10")}),
        (UB, {"k": 1, "f": 0.5, "d": None}),
    ]))
    assert out["f"] == pytest.approx(12.0)
    assert out["d"] == Decimal("1.27")  # 1.265 rounded half-up to the column scale
    out = one(run(fn, s, [(INS, {"k": 1, "f": None, "d": Decimal("3.00")}),
                          (UB, {"k": 1, "f": None, "d": Decimal("2.00")})]))
    assert out["d"] == Decimal("1.50")
    # past the precision Decimal.fromBigDecimal gives null, and the next record starts afresh
    out = one(run(fn, s, [(INS, {"k": 1, "f": None, "d": Decimal("9999.99")}),
                          (INS, {"k": 1, "f": None, "d": Decimal("9999.99")})]))
    assert out["d"] is None
    out = one(run(fn, s, [(INS, {"k": 1, "f": None, "d": Decimal("9999.99")}),
                          (INS, {"k": 1, "f": None, "d": Decimal("9999.99")}),
                          (INS, {"k": 1, "f": None, "d": Decimal("2.50")})]))
    assert out["d"] == Decimal("2.50")


@pytest.mark.parametrize("func,expected", [("min", (1, "a")), ("max", (7, "c"))])
def test_min_max_skip_nulls(func: str, expected: tuple[int, str]) -> None:
    s = pa.schema([pa.field("k", pa.int64(), nullable=False), ("i", pa.int32()), ("s", pa.string())])
    fn = agg(s, {"fields.i.aggregate-function": func, "fields.s.aggregate-function": func})
    out = one(run(fn, s, [(INS, {"k": 1, "i": 3, "s": "b"}), (INS, {"k": 1, "i": None, "s": "c"}),
                          (INS, {"k": 1, "i": 7, "s": None}), (INS, {"k": 1, "i": 1, "s": "a"})]))
    assert (out["i"], out["s"]) == expected


@pytest.mark.parametrize(
    "func", ["min", "max", "first_value", "first_non_null_value", "listagg", "bool_and", "bool_or"]
)
def test_functions_without_retract_raise_unless_ignore_retract(func: str) -> None:
    dtype = {"listagg": pa.string(), "bool_and": pa.bool_(), "bool_or": pa.bool_()}.get(func, pa.int64())
    s = int_schema("v", dtype=dtype)
    value = {pa.string(): "x", pa.bool_(): True}.get(dtype, 1)
    records = [(INS, {"k": 1, "v": value}), (UB, {"k": 1, "v": value})]
    with pytest.raises(InvalidDataError, match=r"fields\.v\.ignore-retract"):
        run(agg(s, {"fields.v.aggregate-function": func}), s, records)
    out = one(run(agg(s, {"fields.v.aggregate-function": func, "fields.v.ignore-retract": "true"}), s, records))
    assert out["v"] == value


def test_last_value_and_last_non_null_value() -> None:
    s = int_schema("lv", "lnn")
    fn = agg(s, {"fields.lv.aggregate-function": "last_value"})  # lnn: the default function
    out = by_key(run(fn, s, [
        (INS, {"k": 1, "lv": 1, "lnn": 1}), (INS, {"k": 1, "lv": None, "lnn": None}),
        (INS, {"k": 2, "lv": 1, "lnn": 1}), (UB, {"k": 2, "lv": 1, "lnn": None}),
        (INS, {"k": 3, "lv": 1, "lnn": 1}), (UB, {"k": 3, "lv": None, "lnn": 5}),
    ]))
    assert (out[1][1]["lv"], out[1][1]["lnn"]) == (None, 1)
    assert (out[2][1]["lv"], out[2][1]["lnn"]) == (None, 1)  # retracting null keeps the value
    assert (out[3][1]["lv"], out[3][1]["lnn"]) == (None, None)  # retracting a value clears it


@pytest.mark.parametrize("name", ["first_non_null_value", "first_not_null_value"])
def test_first_value_and_first_non_null_value(name: str) -> None:
    s = int_schema("fv", "fnn")
    fn = agg(s, {"fields.fv.aggregate-function": "first_value", "fields.fnn.aggregate-function": name})
    out = one(run(fn, s, [(INS, {"k": 1, "fv": None, "fnn": None}), (INS, {"k": 1, "fv": 2, "fnn": 2}),
                          (INS, {"k": 1, "fv": 3, "fnn": 3})]))
    assert (out["fv"], out["fnn"]) == (None, 2)


def test_listagg_delimiters_and_bools() -> None:
    s = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.string()), ("b", pa.string()),
                   ("x", pa.bool_()), ("y", pa.bool_())])
    fn = agg(s, {"fields.a.aggregate-function": "listagg", "fields.b.aggregate-function": "listagg",
                 "fields.b.list-agg-delimiter": " | ", "fields.x.aggregate-function": "bool_and",
                 "fields.y.aggregate-function": "bool_or"})
    out = by_key(run(fn, s, [
        (INS, {"k": 1, "a": "p", "b": "p", "x": True, "y": False}),
        (INS, {"k": 1, "a": None, "b": "q", "x": None, "y": None}),
        (INS, {"k": 1, "a": "r", "b": None, "x": False, "y": True}),
        (INS, {"k": 2, "a": None, "b": None, "x": None, "y": None}),
    ]))
    assert {c: out[1][1][c] for c in "abxy"} == {"a": "p,r", "b": "p | q", "x": False, "y": True}
    assert {c: out[2][1][c] for c in "abxy"} == dict.fromkeys("abxy")


def test_default_function_and_sequence_field_uses_last_value() -> None:
    s = int_schema("v", "w", "ts")
    out = one(run(agg(s, {"fields.default-aggregate-function": "sum", "sequence.field": "ts",
                          "fields.w.aggregate-function": "max"}), s, [
        (INS, {"k": 1, "v": 1, "w": 4, "ts": 1}), (INS, {"k": 1, "v": 2, "w": 3, "ts": None}),
    ]))
    assert (out["v"], out["w"], out["ts"]) == (3, 4, None)


def test_aggregation_remove_record_on_delete_and_ignore_delete() -> None:
    s = int_schema("v")
    fn = agg(s, {"fields.v.aggregate-function": "sum", "aggregation.remove-record-on-delete": "true"})
    out = by_key(run(fn, s, [
        (INS, {"k": 1, "v": 1}), (DEL, {"k": 1, "v": None}),
        (INS, {"k": 2, "v": 1}), (DEL, {"k": 2, "v": None}), (INS, {"k": 2, "v": 5}), (UB, {"k": 2, "v": 2}),
    ]))
    assert out[1][0] == DEL and out[1][1]["v"] is None
    assert out[2] == (INS, {"k": 2, "v": 3, SEQ: 5, KIND: INS})
    fn = agg(s, {"fields.v.aggregate-function": "sum", "ignore-delete": "true"})
    out = by_key(run(fn, s, [(INS, {"k": 1, "v": 1}), (DEL, {"k": 1, "v": 1}), (UB, {"k": 2, "v": 9})]))
    assert list(out) == [1] and out[1][1]["v"] == 1


def test_aggregation_keeps_not_null_values_in_delete_rows() -> None:
    s = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.int64(), nullable=False)])
    fn = agg(s, {"aggregation.remove-record-on-delete": "true"})
    row = one(run(fn, s, [(INS, {"k": 1, "v": 1}), (DEL, {"k": 1, "v": 7})]))
    assert (row[KIND], row["v"]) == (DEL, 7)


def test_aggregation_option_errors_at_construction() -> None:
    s = pa.schema([pa.field("k", pa.int64(), nullable=False), ("s", pa.string()), ("i", pa.int32()),
                   ("b", pa.bool_()), ("l", pa.list_(pa.int32()))])
    with pytest.raises(UnsupportedFeatureError, match=r"no 'count'.*sum"):
        agg(s, {"fields.i.aggregate-function": "count"})
    with pytest.raises(UnsupportedFeatureError, match="sumx"):
        agg(s, {"fields.i.aggregate-function": "sumx"})
    for func, col in [("sum", "s"), ("product", "b"), ("listagg", "i"), ("bool_and", "i"), ("bool_or", "s"),
                      ("max", "l"), ("collect", "s"), ("merge_map", "l"), ("nested_update", "l"),
                      ("nested_partial_update", "i"), ("merge_map_with_keytime", "l")]:
        with pytest.raises(OptionError, match=rf"{func}.*'{col}'"):
            agg(s, {f"fields.{col}.aggregate-function": func})
    with pytest.raises(OptionError, match="nope"):
        agg(s, {"fields.nope.aggregate-function": "sum"})
    with pytest.raises(OptionError, match="'s'"):
        agg(s, {"fields.default-aggregate-function": "sum"})  # the default must fit every column
    with pytest.raises(OptionError, match="ignore-retract"):
        agg(s, {"fields.i.ignore-retract": "yes"})


def test_registry_checks_engine_options() -> None:
    s = int_schema("v")
    nonsense = CoreOptions({"fields.v.aggregate-function": "nonsense"})
    merge_engine("deduplicate").create(fields_of(s), ["k"], nonsense)
    with pytest.raises(UnsupportedFeatureError):
        merge_engine("aggregation").create(fields_of(s), ["k"], nonsense)
    with pytest.raises(OptionError):
        merge_engine("partial-update").create(fields_of(s), ["k"], CoreOptions({"fields.v.sequence-group": "k"}))
    with pytest.raises(OptionError):
        merge_engine("partial-update").create(fields_of(s), ["k"], CoreOptions({"fields.zz.sequence-group": "v"}))
    assert isinstance(merge_engine("aggregation").create(fields_of(s), ["k"], CoreOptions({})), Aggregation)
    assert isinstance(merge_engine("Partial-Update").create(fields_of(s), ["k"], CoreOptions({})), PartialUpdate)


# ---------------------------------------------------------------- partial-update


def test_partial_update_overwrites_non_null_fields() -> None:
    s = int_schema("a", "b")
    out = one(run(pu(s, {}), s, [(INS, {"k": 1, "a": 1, "b": None}), (UA, {"k": 1, "a": None, "b": 2}),
                                 (INS, {"k": 1, "a": 3, "b": None})]))
    assert out == {"k": 1, "a": 3, "b": 2, SEQ: 2, KIND: INS}


def test_partial_update_retract_needs_an_option() -> None:
    s = int_schema("a")
    records = [(INS, {"k": 1, "a": 1}), (DEL, {"k": 1, "a": 1}), (UB, {"k": 2, "a": 3})]
    with pytest.raises(InvalidDataError, match=r"ignore-delete.*remove-record-on-delete"):
        run(pu(s, {}), s, records)
    for opt in ("ignore-delete", "partial-update.ignore-delete"):
        out = by_key(run(pu(s, {opt: "true"}), s, records))
        assert out[1] == (INS, {"k": 1, "a": 1, SEQ: 0, KIND: INS})
        # a key's only record comes out as it is (Paimon's reducer wrapper), an ignored -U too
        assert out[2] == (UB, {"k": 2, "a": 3, SEQ: 2, KIND: UB})


def test_partial_update_remove_record_on_delete() -> None:
    s = int_schema("a", "b")
    fn = pu(s, {"partial-update.remove-record-on-delete": "true"})
    out = by_key(run(fn, s, [
        (INS, {"k": 1, "a": 1, "b": 1}), (DEL, {"k": 1, "a": None, "b": None}),
        (INS, {"k": 2, "a": 1, "b": 1}), (DEL, {"k": 2, "a": None, "b": None}), (INS, {"k": 2, "a": 5, "b": None}),
        (INS, {"k": 3, "a": 1, "b": 1}), (UB, {"k": 3, "a": 9, "b": None}),  # -U changes no field
        (UB, {"k": 4, "a": 1, "b": 1}),
        (INS, {"k": 5, "a": 1, "b": 1}), (DEL, {"k": 5, "a": 2, "b": None}), (UB, {"k": 5, "a": 3, "b": 3}),
        (UB, {"k": 6, "a": 6, "b": None}), (INS, {"k": 6, "a": None, "b": 7}),
        (DEL, {"k": 7, "a": 7, "b": None}), (UB, {"k": 7, "a": None, "b": 8}),
    ]))
    assert out[1][0] == DEL and out[1][1]["a"] is None
    assert out[2] == (INS, {"k": 2, "a": 5, "b": None, SEQ: 4, KIND: INS})  # a new row: b not carried over
    # Paimon HEAD's add(): every record's sequence number is the result's, a -U's too
    assert out[3] == (INS, {"k": 3, "a": 1, "b": 1, SEQ: 6, KIND: INS})
    assert out[4] == (UB, {"k": 4, "a": 1, "b": 1, SEQ: 7, KIND: UB})  # a key's only record, as written
    # a -U after a -D flips the row back to +I (an insert came first): the -D's image
    assert out[5] == (INS, {"k": 5, "a": 2, "b": None, SEQ: 10, KIND: INS})
    # a leading -U's whole image is the row the insert overwrites (Paimon 1.4.1+/2.0 initRow)
    assert out[6] == (INS, {"k": 6, "a": 6, "b": 7, SEQ: 12, KIND: INS})
    # no insert seen: -D, whatever follows the -D
    assert out[7][0] == DEL and out[7][1]["a"] == 7


def test_partial_update_option_conflicts_and_group_validation() -> None:
    s = int_schema("a", "b", "g")
    with pytest.raises(OptionError, match="conflict"):
        pu(s, {"ignore-delete": "true", "partial-update.remove-record-on-delete": "true"})
    with pytest.raises(OptionError, match="conflict"):
        pu(s, {"fields.g.sequence-group": "a", "partial-update.remove-record-on-delete": "true"})
    with pytest.raises(OptionError, match="'k'"):
        pu(s, {"fields.g.sequence-group": "a,k"})
    with pytest.raises(OptionError, match="'zz'"):
        pu(s, {"fields.g.sequence-group": "a,zz"})
    with pytest.raises(OptionError, match="more than one"):
        pu(s, {"fields.g.sequence-group": "a", "fields.b.sequence-group": "a"})
    with pytest.raises(OptionError, match="sequence group"):
        pu(s, {"fields.a.aggregate-function": "sum"})
    with pytest.raises(OptionError, match="sequence group"):
        pu(s, {"fields.default-aggregate-function": "max"})
    pu(s, {"fields.a.aggregate-function": "last_non_null_value"})  # allowed outside groups
    with pytest.raises(UnsupportedFeatureError):
        pu(s, {"fields.g.sequence-group": "a", "fields.a.aggregate-function": "count"})
    # remove-record-on-sequence-group names sequence fields of groups; conflicts with ignore-delete
    pu(s, {"fields.g.sequence-group": "a", "partial-update.remove-record-on-sequence-group": "g"})
    for bad in ("a", "g,b", "zz"):
        with pytest.raises(OptionError, match="must be part of sequence groups"):
            pu(s, {"fields.g.sequence-group": "a", "partial-update.remove-record-on-sequence-group": bad})
    with pytest.raises(OptionError, match="conflict"):
        pu(s, {"fields.g.sequence-group": "a", "partial-update.remove-record-on-sequence-group": "g",
               "partial-update.ignore-delete": "true"})


def test_sequence_group_documentation_example() -> None:
    # The example of Paimon's partial-update docs: g_1 guards a,b; g_2 guards c,d.
    s = int_schema("a", "b", "g_1", "c", "d", "g_2")
    fn = pu(s, {"fields.g_1.sequence-group": "a,b", "fields.g_2.sequence-group": "c,d"})
    first = [(INS, dict(zip(s.names, [1, 1, 1, 1, 1, 1, 1], strict=True))),
             (INS, dict(zip(s.names, [1, 2, 2, 2, 2, 2, None], strict=True)))]
    row = one(run(fn, s, first))
    assert [row[c] for c in s.names] == [1, 2, 2, 2, 1, 1, 1]
    more = [*first, (INS, dict(zip(s.names, [1, 3, 3, 1, 3, 3, 3], strict=True)))]
    row = one(run(fn, s, more))
    assert [row[c] for c in s.names] == [1, 2, 2, 2, 3, 3, 3]


def test_sequence_group_retracts_null_their_group() -> None:
    names = ["k", "f1", "f2", "f3", "f4", "f5", "f6"]
    s = int_schema(*names[1:])
    fn = pu(s, {"fields.f3.sequence-group": "f1,f2", "fields.f6.sequence-group": "f4,f5"})
    recs: list[Record] = []

    def add(kind: int, values: list[Any]) -> list[Any]:
        recs.append((kind, dict(zip(names, values, strict=True))))
        row = one(run(fn, s, recs))
        return [row[c] for c in names]

    add(INS, [1, 1, 1, 1, 1, 1, 1])
    add(INS, [1, 2, 2, 2, 2, 2, None])
    assert add(INS, [1, 3, 3, 1, 3, 3, 3]) == [1, 2, 2, 2, 3, 3, 3]
    assert add(DEL, [1, 1, 1, 3, 1, 1, None]) == [1, None, None, 3, 3, 3, 3]
    assert add(DEL, [1, 1, 1, 3, 1, 1, 4]) == [1, None, None, 3, None, None, 4]
    assert add(INS, [1, 4, 4, 4, 5, 5, 5]) == [1, 4, 4, 4, 5, 5, 5]
    assert add(DEL, [1, 1, 1, 6, 1, 1, 6]) == [1, None, None, 6, None, None, 6]
    # A retract with the current sequence counts as not older: it deletes the group.
    assert add(UB, [1, 9, 9, 6, None, None, None]) == [1, None, None, 6, None, None, 6]


def test_multi_field_sequence_groups() -> None:
    names = ["k", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8"]
    s = int_schema(*names[1:])
    fn = pu(s, {"fields.f3,f4.sequence-group": "f1,f2", "fields.f7,f8.sequence-group": "f5,f6"})

    def rows_of(*vals: list[Any]) -> list[Any]:
        row = one(run(fn, s, [(INS, dict(zip(names, v, strict=True))) for v in vals]))
        return [row[c] for c in names]

    assert rows_of([1, None, None, None, None, 1, 1, 1, 3], [1, 2, 2, None, None, 2, 2, 1, 3]) == [
        1, None, None, None, None, 2, 2, 1, 3]
    # (1, null) is older than (1, 3): nulls compare smallest.
    assert rows_of([1, 1, 1, 1, 1, 1, 1, 1, 3], [1, 2, 2, 2, 2, 2, 1, 1, None]) == [1, 2, 2, 2, 2, 1, 1, 1, 3]


def test_aggregation_inside_sequence_groups_documentation_example() -> None:
    s = int_schema("a", "b", "c", "d")
    fn = pu(s, {"fields.a.sequence-group": "b", "fields.b.aggregate-function": "first_value",
                "fields.c.sequence-group": "d", "fields.d.aggregate-function": "sum"})
    n = None
    row = one(run(fn, s, [(INS, {"k": 1, "a": 1, "b": 1, "c": n, "d": n}),
                          (INS, {"k": 1, "a": n, "b": n, "c": 1, "d": 1}),
                          (INS, {"k": 1, "a": 2, "b": 2, "c": n, "d": n}),
                          (INS, {"k": 1, "a": n, "b": n, "c": 2, "d": 2})]))
    assert [row[c] for c in "kabcd"] == [1, 2, 1, 2, 3]


def test_sum_in_sequence_group_retracts_and_only_retracts_give_delete() -> None:
    s = int_schema("g", "total", "u")
    fn = pu(s, {"fields.g.sequence-group": "total", "fields.total.aggregate-function": "sum"})
    out = by_key(run(fn, s, [
        (INS, {"k": 1, "g": 1, "total": 5, "u": 1}), (INS, {"k": 1, "g": 3, "total": 2, "u": None}),
        (UB, {"k": 1, "g": 2, "total": 5, "u": 9}),  # older, but a sum retracts whatever its sequence
        (UB, {"k": 2, "g": 1, "total": 4, "u": 1}),
    ]))
    assert out[1] == (INS, {"k": 1, "g": 3, "total": 2, "u": 1, SEQ: 2, KIND: INS})
    assert out[2][0] == UB  # a key's only record is kept as written


# ---------------------------------------------------------------- pypaimon vectors


def _expected(name: str) -> list[dict[str, Any]]:
    # the vectors live in the repository: a missing one fails (FileNotFoundError), never skips
    return load_json(f"{name}/expected.json")["rows"]


def _commits(schema: pa.Schema, commits: list[dict[str, list[Any]]]) -> list[Record]:
    return [(INS, row) for c in commits for row in pa.table(c, schema=schema).to_pylist()]


def test_vector_04_partial_update() -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("a", pa.int32()), ("b", pa.string()),
                        ("c", pa.float64())])
    records = _commits(schema, [
        {"id": [1, 2, 3], "a": [1, 2, None], "b": [None, "x", None], "c": [None, None, 3.0]},
        {"id": [1, 2, 4], "a": [None, 20, 4], "b": ["y", None, None], "c": [1.5, None, None]},
        {"id": [1, 3], "a": [100, None], "b": [None, "z"], "c": [None, None]},
    ])
    fn = merge_engine("partial-update").create(fields_of(schema), ["id"], CoreOptions({"bucket": "2"}))
    out = run(fn, schema, records, keys=["id"]).drop_columns([SEQ, KIND])
    assert out.to_pylist() == _expected("04_partial_update")


def test_vector_05_aggregation() -> None:
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), ("total", pa.float64()), ("cnt", pa.int64()),
                        ("mx", pa.int32()), ("label", pa.string())])
    records = _commits(schema, [
        {"k": ["apple", "banana", "cherry-long-key"], "total": [1.5, 10.0, None], "cnt": [1, 1, 1],
         "mx": [5, 1, None], "label": ["first", None, "c"]},
        {"k": ["apple", "banana"], "total": [2.5, None], "cnt": [1, 2], "mx": [3, 9], "label": [None, "b"]},
        {"k": ["apple", "cherry-long-key", "date"], "total": [-1.0, 7.25, 0.0], "cnt": [1, 1, 1],
         "mx": [7, 2, 0], "label": ["third", None, "d"]},
    ])
    fn = merge_engine("aggregation").create(fields_of(schema), ["k"], CoreOptions({
        "fields.total.aggregate-function": "sum", "fields.cnt.aggregate-function": "sum",
        "fields.mx.aggregate-function": "max"}))
    out = run(fn, schema, records).drop_columns([SEQ, KIND])
    assert out.to_pylist() == _expected("05_aggregation")


# ---------------------------------------------------------------- pure-Python models


class CannotApply(Exception):
    """The model rejects the stream where the engine must raise InvalidDataError."""


class Acc:
    """One column's accumulator, applying records one at a time as Paimon's field aggregators do."""

    def __init__(self, func: str, ignore_retract: bool = False, delimiter: str = ",") -> None:
        self.func, self.ignore_retract, self.delimiter = func, ignore_retract, delimiter
        self.v: Any = None
        self.init = False

    def add(self, x: Any) -> None:
        f, v = self.func, self.v
        if f in ("sum", "product", "listagg", "bool_and", "bool_or", "min", "max"):
            if x is None:
                return
            if v is None:
                self.v = Fraction(x) if f == "product" else x
                return
            self.v = {
                "sum": lambda: v + x, "product": lambda: v * x, "listagg": lambda: v + self.delimiter + x,
                "bool_and": lambda: v and x, "bool_or": lambda: v or x,
                "min": lambda: min(v, x), "max": lambda: max(v, x),
            }[f]()
        elif f == "last_value":
            self.v = x
        elif f == "last_non_null_value":
            self.v = x if x is not None else v
        elif f == "first_value":
            if not self.init:
                self.init, self.v = True, x
        elif f == "first_non_null_value" and not self.init and x is not None:
            self.init, self.v = True, x

    def retract(self, x: Any) -> None:
        if self.ignore_retract:
            return
        f, v = self.func, self.v
        if f == "sum":
            self.v = (None if x is None else -x) if v is None else (v if x is None else v - x)
        elif f == "product":
            if x == 0 and v is not None:
                raise CannotApply(f)  # retracting a zero from a product: division by zero
            if x is not None:
                self.v = Fraction(x) if v is None else v / x
        elif f == "last_value":
            self.v = None
        elif f == "last_non_null_value":
            self.v = None if x is not None else v
        else:
            raise CannotApply(f)

    def value(self) -> Any:
        return int(self.v) if isinstance(self.v, Fraction) else self.v


def group_records(records: Sequence[Record]) -> dict[Any, list[Record]]:
    out: dict[Any, list[Record]] = {}
    for rec in records:
        out.setdefault(rec[1]["k"], []).append(rec)
    return out


def retracting(kind: int) -> bool:
    return kind in (UB, DEL)


def model_aggregation(records: Sequence[Record], funcs: Mapping[str, tuple[str, bool]], ignore_delete: bool,
                      remove_on_delete: bool) -> dict[Any, tuple[int, dict[str, Any]]]:
    out = {}
    for k, recs in group_records(records).items():
        if ignore_delete:
            recs = [r for r in recs if not retracting(r[0])]
        if not recs:
            continue
        accs = {c: Acc(f, ign) for c, (f, ign) in funcs.items()}
        deleted = False
        for kind, row in recs:
            if remove_on_delete and kind == DEL:
                # Paimon 1.4.1+ initRow: every column becomes the -D's image, which later records
                # aggregate onto; a first-value function's `initialized` flag is kept
                for c, acc in accs.items():
                    acc.v = Fraction(row[c]) if acc.func == "product" and row[c] is not None else row[c]
                deleted = True
                continue
            deleted = False
            for c, acc in accs.items():
                (acc.retract if retracting(kind) else acc.add)(row[c])
        out[k] = single_or(recs, (DEL if deleted else INS, {c: a.value() for c, a in accs.items()}))
    return out


def single_or(recs: Sequence[Record], folded: tuple[int, dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """A key's only record comes out as it is, kind included (Paimon's ReducerMergeFunctionWrapper);
    the fold still runs first, so a record the engine cannot apply is rejected either way."""
    if len(recs) == 1:
        kind, rec = recs[0]
        return kind, {c: rec[c] for c in folded[1]}
    return folded


def model_partial_update(records: Sequence[Record], cols: Sequence[str], ignore_delete: bool,
                         remove_on_delete: bool) -> dict[Any, tuple[int, dict[str, Any]]]:
    out = {}
    for k, recs in group_records(records).items():
        # Paimon 1.4.1+ PartialUpdateMergeFunction.add, record by record
        row: dict[str, Any] = dict.fromkeys(cols)
        deleted = seen_insert = False
        for i, (kind, rec) in enumerate(recs):
            deleted = False
            if retracting(kind):
                if i == 0:
                    row = {c: rec[c] for c in cols}  # initRow: before ignore-delete is looked at
                if ignore_delete:
                    continue
                if not remove_on_delete:
                    raise CannotApply("retract")
                if kind == DEL:
                    # the row becomes the -D's image (initRow) and is marked deleted
                    row, deleted = {c: rec[c] for c in cols}, True
                continue
            seen_insert = True
            row.update({c: rec[c] for c in cols if rec[c] is not None})
        out[k] = single_or(recs, (DEL if deleted or not seen_insert else INS, row))
    return out


def _seq_key(values: Sequence[Any]) -> tuple[tuple[Any, ...], ...]:
    return tuple((0,) if v is None else (1, v) for v in values)


def model_partial_update_groups(
    records: Sequence[Record], ungrouped: Sequence[str], groups: Sequence[tuple[tuple[str, ...], tuple[str, ...]]],
    funcs: Mapping[str, tuple[str, bool]], ignore_delete: bool = False,
) -> dict[Any, tuple[int, dict[str, Any]]]:
    """Plain grouped columns follow Paimon's record-at-a-time rule (a record not older than the
    group's current sequence wins); aggregated ones fold the group's records in sequence order.
    A key whose first record is a retraction starts from its whole image (Paimon 1.4.1+), which
    the retraction then retracts from its groups (unless ignore-delete drops it)."""
    out = {}
    for k, recs in group_records(records).items():
        has_insert = any(not retracting(kind) for kind, _ in recs)
        lead = recs[0][1] if retracting(recs[0][0]) else None
        counted = [(kind, rec) for kind, rec in recs if not (ignore_delete and retracting(kind))]
        vals: dict[str, Any] = {}
        for c in ungrouped:
            vals[c] = None if lead is None else lead[c]
            for kind, rec in recs:
                if not retracting(kind) and rec[c] is not None:
                    vals[c] = rec[c]
        for seq_cols, members in groups:
            current: tuple[Any, ...] | None = None
            plain = {m: None for m in members if m not in funcs}
            events = []
            if lead is not None:  # the image: sets the group, its sequence even if unset
                current = tuple(lead[c] for c in seq_cols)
                plain = {m: lead[m] for m in plain}
                events.append((_seq_key(current), -1, INS, lead))
            for idx, (kind, rec) in enumerate(counted):
                s = tuple(rec[c] for c in seq_cols)
                if all(v is None for v in s):
                    continue
                events.append((_seq_key(s), idx, kind, rec))
                if current is None or _seq_key(s) >= _seq_key(current):
                    current = s
                    for m in plain:
                        plain[m] = None if retracting(kind) else rec[m]
            vals.update(zip(seq_cols, current or (None,) * len(seq_cols), strict=True))
            vals.update(plain)
            events.sort(key=lambda e: (e[0], e[1]))
            for m in members:
                if m in funcs:
                    acc = Acc(*funcs[m])
                    for _, _, kind, rec in events:
                        (acc.retract if retracting(kind) else acc.add)(rec[m])
                    vals[m] = acc.value()
        out[k] = single_or(recs, (INS if has_insert else DEL, vals))
    return out


def engine_result(fn: MergeFunction, schema: pa.Schema, records: Sequence[Record]) -> Any:
    try:
        return by_key(run(fn, schema, records))
    except InvalidDataError:
        return "error"


def model_result(model: Any, *args: Any) -> Any:
    try:
        return model(*args)
    except CannotApply:
        return "error"


def assert_same(got: Any, expected: Any, cols: Sequence[str]) -> None:
    if expected == "error" or got == "error":
        event("both reject the stream")
        assert got == expected
        return
    event("results compared")
    assert set(got) == set(expected)
    for k, (kind, vals) in expected.items():
        assert got[k][0] == kind, (k, got[k], vals)
        if kind in (INS, UA):  # a retract row's values are internal (they only matter if merged again)
            assert {c: got[k][1][c] for c in cols} == {c: vals[c] for c in cols}, k


# ---------------------------------------------------------------- strategies

KINDS = st.sampled_from([INS, INS, UA, UB, DEL])
SMALL_INT = st.one_of(st.none(), st.integers(-5, 5))
NONZERO = st.one_of(st.none(), st.sampled_from([-3, -2, -1, 1, 2, 3]))
TEXT = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))
BOOL = st.one_of(st.none(), st.booleans())
SEQV = st.one_of(st.none(), st.integers(0, 4), st.integers(0, 4))

AGG_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("i", pa.int32()), ("p", pa.int64()),
                        ("s", pa.string()), ("b", pa.bool_())])
INT_FUNCS = ["sum", "min", "max", "last_value", "last_non_null_value", "first_value", "first_non_null_value",
             "product"]
STR_FUNCS = ["listagg", "min", "max", "last_value", "last_non_null_value", "first_value", "first_non_null_value"]
BOOL_FUNCS = ["bool_and", "bool_or", "last_value", "last_non_null_value", "first_value"]


def stream(values: Mapping[str, st.SearchStrategy[Any]], kinds: st.SearchStrategy[int] = KINDS,
           max_size: int = 24, keys: int = 4) -> st.SearchStrategy[list[Record]]:
    row = st.fixed_dictionaries({"k": st.integers(0, keys - 1), **values})
    return st.lists(st.tuples(kinds, row), max_size=max_size)


AGG_STREAM = stream({"i": SMALL_INT, "p": NONZERO, "s": TEXT, "b": BOOL})


def agg_options(funcs: Mapping[str, tuple[str, bool]], ignore_delete: bool, remove: bool) -> dict[str, str]:
    opts = {f"fields.{c}.aggregate-function": f for c, (f, _) in funcs.items()}
    opts.update({f"fields.{c}.ignore-retract": "true" for c, (_, ign) in funcs.items() if ign})
    if ignore_delete:
        opts["ignore-delete"] = "true"
    if remove:
        opts["aggregation.remove-record-on-delete"] = "true"
    return opts


Split = tuple[int, int]
# (start, width) of the slice merged on its own; narrow slices are the interesting ones (a slice
# that holds only retractions of a key merges to a -D row that must act like them later).
SPLITS = st.lists(st.tuples(st.integers(0, 30), st.one_of(st.integers(0, 3), st.integers(0, 30))),
                  min_size=1, max_size=4)


def three_way(records: list[Record], split: Split) -> tuple[list[Record], list[Record], list[Record]]:
    lo = split[0] % (len(records) + 1)
    hi = min(len(records), lo + split[1])
    return records[:lo], records[lo:hi], records[hi:]


def merged_in_two_steps(fn: MergeFunction, schema: pa.Schema, records: list[Record], split: Split) -> pa.Table:
    """merge(X + merge(Y) + Z): Y merged on its own first, as a partial compaction would."""
    x, y, z = three_way(records, split)
    middle = merge(fn, raw_table(schema, y, first_seq=1 + len(x)))
    parts = [raw_table(schema, x, first_seq=1), middle, raw_table(schema, z, first_seq=1 + len(x) + len(y))]
    return merge(fn, pa.concat_tables(parts))


def assert_associative(fn: MergeFunction, schema: pa.Schema, records: list[Record], splits: list[Split],
                       resets: bool = False, leads: bool = False) -> None:
    """merge(X + merge(Y) + Z) == merge(X + Y + Z) for each split.

    With ``resets`` (remove-record-on-delete) slices where a retraction is followed by more
    records of its key are skipped (`retraction_then_more`): one merged row cannot say "reset,
    then these". With ``leads`` (partial-update's sequence groups or ignore-delete) slices where a
    key's first record is a retraction followed by more are skipped (`leading_retraction`): Paimon
    1.4.1+ starts such a key from the retraction's image only where a merge starts, so a merge in
    parts differs from one at once (`assert_parts_by_level` checks those against Paimon's rule).
    Sequence numbers start at 1 so that the 0 of a merged key of only ignored retractions sorts first.
    """
    full = visible(merge(fn, raw_table(schema, records, first_seq=1)))
    for split in splits:
        if resets and retraction_then_more(*three_way(records, split)):
            continue
        if leads and leading_retraction(three_way(records, split)[1]):
            continue
        assert visible(merged_in_two_steps(fn, schema, records, split)) == full, split


def leading_retraction(y: Sequence[Record]) -> bool:
    """Whether a key of ``y`` has more than one record there, the first of them a retraction."""
    return any(len(recs) > 1 and retracting(recs[0][0]) for recs in group_records(y).values())


def model_by_level(model: Any, x: Sequence[Record], y: Sequence[Record], z: Sequence[Record],
                   ignore_delete: bool) -> dict[Any, tuple[int, dict[str, Any]]]:
    """Paimon's merge function applied as a compaction by level does: to Y alone, then to X, Y's
    merged rows and Z in sequence order. A merged key of only ignored retractions has sequence
    number 0, so it comes first (before X's records of the key)."""
    middle = model(y)
    y_keys = group_records(y)
    ordered = [(1 + i, 0, r) for i, r in enumerate(x)]
    for k, (kind, row) in middle.items():
        recs = y_keys[k]
        only_ignored = ignore_delete and len(recs) > 1 and all(retracting(kd) for kd, _ in recs)
        ordered.append((0 if only_ignored else 1 + len(x), 1, (kind, {**row, "k": k})))
    ordered += [(1 + len(x) + len(y) + j, 2, r) for j, r in enumerate(z)]
    ordered.sort(key=lambda e: (e[0], e[1]))
    return model([r for _, _, r in ordered])  # type: ignore[no-any-return]


def assert_parts_by_level(fn: MergeFunction, schema: pa.Schema, records: list[Record], splits: list[Split],
                          cols: Sequence[str], ignore_delete: bool, model: Any) -> None:
    """merge(X + merge(Y) + Z) is what Paimon 1.4.1+ gives merging Y first, then the rest, for each
    split: the Java rule's own result by level wherever merging in parts differs from at once."""
    for split in splits:
        x, y, z = three_way(records, split)
        try:
            got: Any = by_key(merged_in_two_steps(fn, schema, records, split))
        except InvalidDataError:
            got = "error"
        expected = model_result(model_by_level, model, x, y, z, ignore_delete)
        assert_same(got, expected, cols)


def visible(table: pa.Table) -> dict[Any, Any]:
    """Kind, sequence and (for +I rows) values per key: what a later merge or a reader depends on."""
    return {k: (kind, row[SEQ], row if kind == INS else None) for k, (kind, row) in by_key(table).items()}


def retraction_then_more(x: Sequence[Record], y: Sequence[Record], z: Sequence[Record]) -> bool:
    """Whether a key of ``y`` holds a retraction and more records, in ``y`` or after it: merged on
    its own, ``y`` loses what the whole merge sees (a -U after a -D flips the row back to +I only
    if an insert came before; a leading -U's image is the row only at the start of a merge), as
    Paimon's merge of a writer's flush does."""
    later = set(group_records(z))
    return any(any(retracting(kind) for kind, _ in recs) and (len(recs) > 1 or k in later)
               for k, recs in group_records(y).items())


# ---------------------------------------------------------------- differential tests


@HYPO
@given(records=AGG_STREAM, fi=st.sampled_from(INT_FUNCS), fs=st.sampled_from(STR_FUNCS),
       fb=st.sampled_from(BOOL_FUNCS), ignores=st.tuples(*[st.booleans()] * 4), ignore_delete=st.booleans(),
       remove=st.booleans())
def test_aggregation_matches_model(records: list[Record], fi: str, fs: str, fb: str, ignores: tuple[bool, ...],
                                   ignore_delete: bool, remove: bool) -> None:
    funcs = {"i": (fi, ignores[0]), "p": ("product", ignores[1]), "s": (fs, ignores[2]), "b": (fb, ignores[3])}
    if remove:  # Paimon refuses ignore-retract with remove-record-on-delete
        funcs = {c: (f, False) for c, (f, _) in funcs.items()}
    fn = agg(AGG_SCHEMA, agg_options(funcs, ignore_delete, remove))
    expected = model_result(model_aggregation, records, funcs, ignore_delete, remove)
    assert_same(engine_result(fn, AGG_SCHEMA, records), expected, list(funcs))


# Functions whose merged row carries all the state a later merge needs (see the module docstring).
# first_value is left out: a slice holding only ignored retractions merges to a null that a later
# merge would take as the first value.
ASSOC_INT = [("sum", False), ("sum", True), ("max", True), ("min", True), ("last_value", False),
             ("last_non_null_value", True), ("first_non_null_value", True)]
ASSOC_STR = [("listagg", True), ("max", True), ("last_value", False), ("first_non_null_value", True)]
ASSOC_BOOL = [("bool_or", True), ("bool_and", True), ("last_value", False)]


@HYPO
@given(records=AGG_STREAM, fi=st.sampled_from(ASSOC_INT), fs=st.sampled_from(ASSOC_STR),
       fb=st.sampled_from(ASSOC_BOOL), ignore_delete=st.booleans(), remove=st.booleans(),
       splits=SPLITS)
def test_aggregation_is_associative(records: list[Record], fi: tuple[str, bool], fs: tuple[str, bool],
                                    fb: tuple[str, bool], ignore_delete: bool, remove: bool,
                                    splits: list[Split]) -> None:
    # Products of inserts only: a retract on an empty product cannot be carried by a merged row.
    records = [(kind, r) for kind, r in records if not (retracting(kind) and r["p"] is not None)]
    funcs = {"i": fi, "p": ("product", False), "s": fs, "b": fb}
    if remove:  # Paimon refuses ignore-retract with remove-record-on-delete: no -U for them then
        records = [(kind, r) for kind, r in records if kind != UB or all(not ign for _, ign in funcs.values())]
        funcs = {c: (f, False) for c, (f, _) in funcs.items()}
    fn = agg(AGG_SCHEMA, agg_options(funcs, ignore_delete, remove))
    assert_associative(fn, AGG_SCHEMA, records, splits, resets=remove and not ignore_delete)


@HYPO
@given(records=AGG_STREAM, fi=st.sampled_from(INT_FUNCS), fs=st.sampled_from(STR_FUNCS),
       fb=st.sampled_from(BOOL_FUNCS), splits=SPLITS)
def test_aggregation_of_inserts_is_associative(records: list[Record], fi: str, fs: str, fb: str,
                                               splits: list[Split]) -> None:
    records = [(kind, r) for kind, r in records if not retracting(kind)]
    fn = agg(AGG_SCHEMA, agg_options({"i": (fi, False), "p": ("product", False), "s": (fs, False),
                                      "b": (fb, False)}, False, False))
    assert_associative(fn, AGG_SCHEMA, records, splits)


PU_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.int32()), ("s", pa.string()),
                       ("n", pa.int64())])
PU_STREAM = stream({"a": SMALL_INT, "s": TEXT, "n": SMALL_INT})
PU_MODES = st.sampled_from([{}, {"ignore-delete": "true"}, {"partial-update.ignore-delete": "true"},
                            {"partial-update.remove-record-on-delete": "true"}])


@HYPO
@given(records=PU_STREAM, opts=PU_MODES)
def test_partial_update_matches_model(records: list[Record], opts: dict[str, str]) -> None:
    fn = pu(PU_SCHEMA, opts)
    ignore = any(k.endswith("ignore-delete") for k in opts)
    expected = model_result(model_partial_update, records, ["a", "s", "n"], ignore, not ignore and bool(opts))
    assert_same(engine_result(fn, PU_SCHEMA, records), expected, ["a", "s", "n"])


@HYPO
@given(records=PU_STREAM, opts=PU_MODES, splits=SPLITS)
def test_partial_update_is_associative(records: list[Record], opts: dict[str, str], splits: list[Split]) -> None:
    fn = pu(PU_SCHEMA, opts)
    if not opts:
        records = [r for r in records if not retracting(r[0])]
    ignore = any(k.endswith("ignore-delete") for k in opts)
    remove = "partial-update.remove-record-on-delete" in opts
    assert_associative(fn, PU_SCHEMA, records, splits, resets=remove, leads=ignore)
    assert_parts_by_level(fn, PU_SCHEMA, records, splits, ["a", "s", "n"], ignore,
                          lambda recs: model_partial_update(recs, ["a", "s", "n"], ignore, remove))


GROUP_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("g1", pa.int32()), ("a", pa.int32()),
                          ("b", pa.int64()), ("g2", pa.int64()), ("c", pa.string()), ("d", pa.string()),
                          ("g3", pa.int32()), ("g4", pa.string()), ("e", pa.int32()), ("u", pa.int32())])
GROUPS = [(("g1",), ("a", "b")), (("g2",), ("c", "d")), (("g3", "g4"), ("e",))]
GROUP_STREAM = stream({"g1": SEQV, "a": SMALL_INT, "b": SMALL_INT, "g2": SEQV, "c": TEXT, "d": TEXT,
                       "g3": SEQV, "g4": st.one_of(st.none(), st.sampled_from(["x", "y"])), "e": SMALL_INT,
                       "u": SMALL_INT}, keys=3)


def group_options(fb: tuple[str, bool] | None, fd: tuple[str, bool] | None) -> tuple[dict[str, str], dict[str, Any]]:
    opts = {"fields.g1.sequence-group": "a,b", "fields.g2.sequence-group": "c,d", "fields.g3,g4.sequence-group": "e"}
    funcs = {}
    for col, f in (("b", fb), ("d", fd)):
        if f is not None:
            opts[f"fields.{col}.aggregate-function"] = f[0]
            if f[1]:
                opts[f"fields.{col}.ignore-retract"] = "true"
            funcs[col] = f
    return opts, funcs


GROUP_INT_FUNCS = st.one_of(st.none(), st.tuples(st.sampled_from(INT_FUNCS), st.booleans()))
GROUP_STR_FUNCS = st.one_of(st.none(), st.tuples(st.sampled_from(STR_FUNCS), st.booleans()))
COLS = [f.name for f in GROUP_SCHEMA][1:]


@HYPO
@given(records=GROUP_STREAM, fb=GROUP_INT_FUNCS, fd=GROUP_STR_FUNCS, ignore_delete=st.booleans())
def test_sequence_groups_match_model(records: list[Record], fb: tuple[str, bool] | None,
                                     fd: tuple[str, bool] | None, ignore_delete: bool) -> None:
    if fb and fb[0] == "product":
        records = [(kind, {**r, "b": None if r["b"] == 0 else r["b"]}) for kind, r in records]
    opts, funcs = group_options(fb, fd)
    if ignore_delete:
        opts["ignore-delete"] = "true"
    expected = model_result(model_partial_update_groups, records, ["u"], GROUPS, funcs, ignore_delete)
    assert_same(engine_result(pu(GROUP_SCHEMA, opts), GROUP_SCHEMA, records), expected, COLS)


# sum is drawn most: it is where a -D row's retract image matters.
ASSOC_GROUP_INT = st.sampled_from([("sum", False), ("sum", False), None, ("max", True), ("min", True),
                                   ("last_value", False)])
ASSOC_GROUP_STR = st.sampled_from([None, ("last_value", False), ("max", True)])


@settings(HYPO, max_examples=300)
@given(records=GROUP_STREAM, fb=ASSOC_GROUP_INT, fd=ASSOC_GROUP_STR, ignore_delete=st.booleans(), splits=SPLITS)
def test_sequence_groups_are_associative(records: list[Record], fb: tuple[str, bool] | None,
                                         fd: tuple[str, bool] | None, ignore_delete: bool,
                                         splits: list[Split]) -> None:
    opts, funcs = group_options(fb, fd)
    if ignore_delete:
        opts["ignore-delete"] = "true"
    fn = pu(GROUP_SCHEMA, opts)
    assert_associative(fn, GROUP_SCHEMA, records, splits, leads=True)
    assert_parts_by_level(fn, GROUP_SCHEMA, records, splits, COLS, ignore_delete,
                          lambda recs: model_partial_update_groups(recs, ["u"], GROUPS, funcs, ignore_delete))


@HYPO
@given(records=stream({"g1": SEQV, "a": SMALL_INT, "b": SMALL_INT, "g2": SEQV, "c": TEXT, "d": TEXT, "g3": SEQV,
                       "g4": st.none(), "e": SMALL_INT, "u": SMALL_INT}, kinds=st.sampled_from([INS, UA])),
       fb=st.tuples(st.sampled_from(INT_FUNCS), st.just(False)),
       fd=st.tuples(st.sampled_from(STR_FUNCS), st.just(False)), splits=SPLITS)
def test_order_dependent_group_functions_are_associative_for_ordered_sequences(
    records: list[Record], fb: tuple[str, bool], fd: tuple[str, bool], splits: list[Split]
) -> None:
    # Group sequences that never go backwards in arrival order (nulls still skip the group).
    ordered = [(kind, {**r, **{g: None if r[g] is None else i // 3 for g in ("g1", "g2", "g3")}})
               for i, (kind, r) in enumerate(records)]
    assert_associative(pu(GROUP_SCHEMA, group_options(fb, fd)[0]), GROUP_SCHEMA, ordered, splits)


@pytest.mark.parametrize("width", [3, MAX_RUN + 25])  # numpy passes only, then accumulate's tail
def test_float32_sum_and_product_round_at_every_step(width: int) -> None:
    # Java's FieldSumAgg / FieldProductAgg: (float) a + (float) b, in entry order, retractions too
    kinds = [INS if i % 5 else UB for i in range(width)]
    signs = np.where(np.array(kinds) == INS, 1, -1).astype(np.float32)
    for seed in range(100):  # inputs whose float64-then-round sum (the old one) differs from Java's
        vals = (np.random.default_rng(seed).standard_normal((2, width)) * 1000).astype(np.float32)
        vals[1] /= np.float32(1000)
        in_order = np.float32(0)
        for i, f in enumerate(vals[0] * signs):
            in_order = f if i == 0 else in_order + f
        if in_order != np.float32((vals[0] * signs).astype(np.float64).sum()):
            break
    s = pa.schema([pa.field("k", pa.int64(), nullable=False), ("f", pa.float32()), ("p", pa.float32())])
    fn = agg(s, {"fields.f.aggregate-function": "sum", "fields.p.aggregate-function": "product"})
    out = one(run(fn, s, [(kind, {"k": 1, "f": float(f), "p": float(p)})
                          for kind, f, p in zip(kinds, vals[0], vals[1], strict=True)]))
    acc_f, acc_p = np.float32(0), np.float32(0)
    for i, (kind, f, p) in enumerate(zip(kinds, vals[0], vals[1], strict=True)):
        if i == 0:
            acc_f, acc_p = (f if kind == INS else -f), p
        else:
            acc_f = acc_f + f if kind == INS else acc_f - f
            acc_p = acc_p * p if kind == INS else acc_p / p
    assert (out["f"], out["p"]) == (float(acc_f), float(acc_p)) and acc_f == in_order


def test_float32_sums_of_many_runs_of_mixed_lengths() -> None:
    # passes over many runs at once, then one accumulate per run still going (aggregate_arithmetic)
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 3 * MAX_RUN, 120)
    gid = np.repeat(np.arange(sizes.size), sizes)
    v = (rng.standard_normal(gid.size) * 100).astype(np.float32)
    retract = rng.random(gid.size) < 0.2
    got = sum_fold("f", pa.array(v), retract, gid, sizes.size).to_numpy()
    signed = np.where(retract, -v, v)
    expected = []
    for start, size in zip(np.cumsum(sizes) - sizes, sizes, strict=True):
        acc = signed[start]
        for x in signed[start + 1:start + size]:
            acc = acc + x
        expected.append(acc)
    assert got.dtype == np.float32 and got.tolist() == expected
