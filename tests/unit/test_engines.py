"""Partial-update and aggregation merge engines: hand-checked cases, pypaimon vectors, float32
rounding (the models and associativity: tests/unit/test_engines_models.py)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lake_assets.errors import InvalidDataError, OptionError, UnsupportedFeatureError
from lake_assets.lsm.merge_engine.aggregate_arithmetic import sum_fold
from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.lsm.merge_engine.partial_update import PartialUpdate
from lake_assets.lsm.merge_engine.registry import merge_engine
from lake_assets.lsm.merge_engine.segment_reduce import MAX_RUN
from lake_assets.options import CoreOptions
from tests.unit.engine_records import (
    DEL,
    INS,
    KIND,
    SEQ,
    UA,
    UB,
    Record,
    agg,
    by_key,
    fields_of,
    int_schema,
    one,
    pu,
    raw_table,
    run,
)
from tests.vectors import load_json

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
