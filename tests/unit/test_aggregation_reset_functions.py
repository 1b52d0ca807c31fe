"""Every aggregate function after a -D's image (``aggregation.remove-record-on-delete``), as Paimon
HEAD (5dacde5; 2.0.0 alike).

HEAD's ``AggregateMergeFunction.add`` makes the key's row the -D's image (``initRow``) and folds
the records after it with ``agg(image value, v)``; `Aggregation.merge` folds the image as a
leading insert, ``agg(agg(null, image), v)``. Java's ``agg(null, x)`` is ``x`` for each function
here, so the two agree where lake_assets' fold of the image alone gives the image back; the
cases below pin where it did not (float min/max, a blank listagg image, a merge_map image with a
repeated key) and the rest. Each expected value is written from the HEAD source named with it
(``paimon-core/.../mergetree/compact/aggregate/``) and the FieldAggregatorTest case it extends.
[-U, +U] is a retraction from nothing: no reset (``currentDeleteRow`` only for a -D).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError
from lake_assets.lsm.merge import sort_for_merge
from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.options import CoreOptions
from tests.unit.test_aggregate_sketches import _hll, _theta, rbm

INS, UB, UA, DEL = 0, 1, 2, 3
REMOVE = {"aggregation.remove-record-on-delete": "true"}
NAN = float("nan")
REFUSED = "refused"  # FieldAggregator.retract throws UnsupportedOperationException
MAP = pa.map_(pa.string(), pa.int32())
KEYTIME = pa.map_(pa.string(), pa.struct([("v", pa.int32()), ("ts", pa.string())]))


def merged(func: str, dtype: pa.DataType, records: Sequence[tuple[int, Any]], singles: bool,
           options: Mapping[str, str] | None = None) -> tuple[int, Any]:
    """(kind, value) of key 1's column ``c`` merged by the aggregation engine; ``singles``: as the
    lookup / deletion-vector compactions merge (a lone record merged too)."""
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("c", dtype)])
    fn = Aggregation([(f.name, f.type) for f in schema], ["k"],
                     CoreOptions({"fields.c.aggregate-function": func, **REMOVE, **(options or {})}))
    fn.merges_singles = singles
    t = pa.Table.from_pylist([{"k": 1, "c": v} for _, v in records], schema=schema)
    t = t.append_column("_SEQUENCE_NUMBER", pa.array(range(len(records)), type=pa.int64()))
    t = t.append_column("_VALUE_KIND", pa.array([kind for kind, _ in records], type=pa.int8()))
    row = fn.merge(sort_for_merge(t, ["k"]), ["k"]).to_pylist()[0]
    return row["_VALUE_KIND"], row["c"]


def same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN and -0.0 apart from 0.0 (Java's Double.equals)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return bool(a == b) and type(a) is type(b)


# (function, type, records, HEAD's value); the kind is -D for a lone -D, else +I
CASES: list[tuple[str, pa.DataType, list[tuple[int, Any]], Any]] = [
    # FieldMaxAgg / FieldMinAgg: InternalRowUtils.compare = Double.compare / Float.compare (NaN
    # above +Inf, -0.0 below 0.0); max keeps the accumulator on a tie, min takes the input
    # (testFieldMaxAgg, testFieldMinAgg, testFieldMaxMinAggComparableTypesAreAllSupported)
    ("max", pa.float64(), [(DEL, NAN), (INS, 1.0)], NAN),
    ("max", pa.float64(), [(DEL, 1.0), (INS, NAN), (INS, 2.0)], NAN),
    ("max", pa.float64(), [(DEL, -0.0), (INS, 0.0)], 0.0),
    ("max", pa.float64(), [(DEL, None), (INS, 1.0), (INS, 2.0)], 2.0),
    ("max", pa.float64(), [(DEL, 2.0), (INS, None)], 2.0),
    ("max", pa.float64(), [(DEL, 3.0)], 3.0),
    ("max", pa.float32(), [(DEL, NAN), (INS, math.inf)], NAN),
    ("min", pa.float64(), [(DEL, 0.0), (INS, -0.0)], -0.0),
    ("min", pa.float64(), [(DEL, -0.0), (INS, 0.0)], -0.0),
    ("min", pa.float64(), [(DEL, NAN), (INS, 1.0)], 1.0),
    ("min", pa.float64(), [(DEL, 1.0), (INS, NAN), (INS, 0.5)], 0.5),
    ("min", pa.float32(), [(DEL, 0.0), (INS, -0.0), (INS, None)], -0.0),
    ("max", pa.float64(), [(UB, 1.0), (UA, 2.0)], REFUSED),
    # FieldListaggAgg (2.0+, #8480: blank inputs skipped, a blank accumulator replaced;
    # testFieldListAggWithDefaultDelimiterIgnoringBlankValues,
    # testFieldListAggFirstNonBlankValueWithoutLeadingDelimiter)
    ("listagg", pa.string(), [(DEL, " "), (INS, None)], " "),
    ("listagg", pa.string(), [(DEL, ""), (INS, "\u3000"), (INS, "\t")], ""),
    ("listagg", pa.string(), [(DEL, " "), (INS, "a"), (INS, "b")], "a,b"),
    ("listagg", pa.string(), [(DEL, "x"), (INS, ""), (INS, "b")], "x,b"),
    ("listagg", pa.string(), [(DEL, "x"), (INS, "\u00a0")], "x,\u00a0"),  # no-break space: not whitespace
    ("listagg", pa.string(), [(DEL, None), (INS, "a")], "a"),
    ("listagg", pa.string(), [(INS, "p"), (DEL, " \r\n")], " \r\n"),
    ("listagg", pa.string(), [(UB, "x"), (UA, "y")], REFUSED),
    # FieldMergeMapAgg: agg(acc, null) is acc as it is, else a HashMap of acc then v (a repeated
    # key's last value); retract of an empty map returns acc (testFieldMergeMapAgg, ...Retract)
    ("merge_map", MAP, [(DEL, [("a", 1), ("a", 2)]), (INS, None)], [("a", 1), ("a", 2)]),
    ("merge_map", MAP, [(DEL, [("a", 1), ("a", 2)]), (UB, [])], [("a", 1), ("a", 2)]),
    ("merge_map", MAP, [(DEL, [("a", 1), ("a", 2)]), (INS, [("b", 3)])], [("a", 2), ("b", 3)]),
    ("merge_map", MAP, [(DEL, [("a", 1), ("b", None)]), (INS, [("c", 3)]), (INS, [("a", 9)])],
     [("a", 9), ("b", None), ("c", 3)]),
    ("merge_map", MAP, [(DEL, [("a", 1), ("b", 2)]), (UB, [("a", 0)])], [("b", 2)]),
    ("merge_map", MAP, [(UB, [("a", 1)]), (UA, [("b", 2)])], [("b", 2)]),  # retract(null, _) = null
    ("merge_map", MAP, [(DEL, [("a", 1)])], [("a", 1)]),
    ("merge_map", MAP, [(INS, [("a", 1), ("a", 2)]), (INS, None)], [("a", 1), ("a", 2)]),  # no reset: alike
    # FieldMergeMapWithKeyTimeAgg: agg(acc, null) = acc; putToMap takes acc's entries as they are
    # (a null value, an untimed row), then a null time is replaced, a larger time wins
    # (testFieldMergeMapWithKeyTimeAgg)
    ("merge_map_with_keytime", KEYTIME,
     [(DEL, [("a", {"v": 1, "ts": "2"}), ("b", {"v": 2, "ts": None}), ("c", None)]), (INS, None)],
     [("a", {"v": 1, "ts": "2"}), ("b", {"v": 2, "ts": None}), ("c", None)]),
    ("merge_map_with_keytime", KEYTIME,
     [(DEL, [("a", {"v": 1, "ts": "2"}), ("b", {"v": 2, "ts": None}), ("c", None)]),
      (INS, [("a", {"v": 5, "ts": "1"}), ("b", {"v": 6, "ts": "0"}), ("c", {"v": 7, "ts": "0"})])],
     [("a", {"v": 1, "ts": "2"}), ("b", {"v": 6, "ts": "0"}), ("c", {"v": 7, "ts": "0"})]),
    # FieldBoolAndAgg / FieldBoolOrAgg (testFieldBoolAndAgg, testFieldBoolOrAgg)
    ("bool_and", pa.bool_(), [(DEL, False), (INS, True)], False),
    ("bool_or", pa.bool_(), [(DEL, False), (INS, True)], True),
    ("bool_and", pa.bool_(), [(DEL, None), (INS, True), (INS, False)], False),
    ("bool_or", pa.bool_(), [(DEL, True), (INS, None)], True),
    ("bool_and", pa.bool_(), [(UB, True), (UA, False)], REFUSED),
    # FieldFirstValueAgg / FieldFirstNonNullValueAgg (initialized survives initRow),
    # FieldLastValueAgg / FieldLastNonNullValueAgg (testFieldFirstValueAgg, ...LastValueAgg)
    ("first_value", pa.int32(), [(DEL, 1), (INS, None)], None),
    ("first_non_null_value", pa.int32(), [(DEL, 1), (INS, None)], 1),
    ("last_value", pa.int32(), [(DEL, 1), (INS, None)], None),
    ("last_non_null_value", pa.int32(), [(DEL, 1), (INS, None)], 1),
    ("first_value", pa.int32(), [(DEL, None), (INS, 2), (INS, 3)], 2),
    ("first_non_null_value", pa.int32(), [(DEL, None), (INS, 2), (INS, 3)], 2),
    ("last_value", pa.int32(), [(DEL, None), (INS, 2), (INS, 3)], 3),
    ("first_value", pa.int32(), [(UB, 1), (UA, 2)], REFUSED),
    ("last_value", pa.int32(), [(UB, 1), (UA, 2)], 2),  # retract = null, then agg
    ("last_non_null_value", pa.int32(), [(UB, 1), (UA, None)], None),
    ("first_non_null_value", pa.int32(), [(DEL, 4)], 4),
    # FieldSumAgg / FieldProductAgg: agg(null, v) = v (testFieldSumIntAgg, testFieldProductIntAgg)
    ("sum", pa.int32(), [(DEL, None), (INS, 3), (INS, 4)], 7),
    ("sum", pa.int32(), [(UB, 2), (UA, 3)], 1),  # retract(null, 2) = -2
    ("product", pa.int64(), [(DEL, 2), (INS, None), (INS, 4)], 8),
]
# min/max of every other comparable type: the image against a smaller input, a null image, a null input
_PAIRS: list[tuple[pa.DataType, Any, Any]] = [
    (pa.int8(), 5, -3), (pa.int16(), 5, -3), (pa.int32(), 5, -3), (pa.int64(), 5, -3),
    (pa.decimal128(5, 2), Decimal("5.00"), Decimal("3.10")), (pa.string(), "b", "a"),
    (pa.binary(), b"\xff", b"\x01"),  # unsigned bytes (byteArrayCompare)
    (pa.date32(), date(2020, 1, 2), date(2020, 1, 1)), (pa.time32("ms"), time(2), time(1)),
    (pa.timestamp("us"), datetime(2020, 1, 2), datetime(2020, 1, 1)), (pa.bool_(), True, False),
]
for _t, _big, _small in _PAIRS:
    CASES += [("max", _t, [(DEL, _big), (INS, _small)], _big), ("min", _t, [(DEL, _big), (INS, _small)], _small),
              ("max", _t, [(DEL, None), (INS, _small)], _small), ("min", _t, [(DEL, _small), (INS, None)], _small)]


@pytest.mark.parametrize("singles", [False, True], ids=["writer-compaction", "lookup-dv"])
@pytest.mark.parametrize(("func", "dtype", "records", "expected"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_head_value_after_a_delete_image(func: str, dtype: pa.DataType, records: list[tuple[int, Any]],
                                         expected: Any, singles: bool) -> None:
    if expected == REFUSED:
        with pytest.raises(InvalidDataError, match="cannot retract"):
            merged(func, dtype, records, singles)
        return
    kind, value = merged(func, dtype, records, singles)
    assert kind == (DEL if records[-1][0] == DEL else INS)
    assert same(value, expected), (value, expected)


@pytest.mark.parametrize("func", ["rbm32", "rbm64", "hll_sketch", "theta_sketch"])
def test_sketches_after_a_delete_image(func: str) -> None:
    # FieldRoaringBitmap32Agg / 64 / FieldHllSketchAgg / FieldThetaSketchAgg: agg(acc, null) is
    # acc's bytes as they are (an unoptimized bitmap stays so); agg(image, v) is the union of both,
    # which is what folding image then v from nothing gives (Java's agg(null, image) = image)
    image, other = {"rbm32": (rbm(1, 2, 3, optimize=False), rbm(7)), "rbm64": (b"\x00", b"\x00"),
                    "hll_sketch": (_hll(1, 2), _hll(3)), "theta_sketch": (_theta(1, 2), _theta(3))}[func]
    for singles in (False, True):
        assert merged(func, pa.binary(), [(INS, other), (DEL, image), (INS, None)], singles) == (INS, image)
        assert merged(func, pa.binary(), [(DEL, image)], singles) == (DEL, image)
        union = merged(func, pa.binary(), [(INS, image), (INS, other)], singles)
        assert merged(func, pa.binary(), [(DEL, image), (INS, other)], singles) == union


SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("mx", pa.float64()), ("mn", pa.float64()),
                    ("la", pa.string()), ("mm", MAP), ("bo", pa.bool_()), ("fn", pa.int32()), ("op", pa.string())])
FUNCTIONS = {"mx": "max", "mn": "min", "la": "listagg", "mm": "merge_map", "bo": "bool_or",
             "fn": "first_non_null_value"}
ROWS = [  # key 1: +I, the -D's image, +I
    {"k": 1, "mx": 1.0, "mn": 1.0, "la": "p", "mm": [("a", 1)], "bo": False, "fn": None, "op": "+I"},
    {"k": 1, "mx": NAN, "mn": -0.0, "la": " ", "mm": [("x", 1), ("y", None)], "bo": None, "fn": 7, "op": "-D"},
    {"k": 1, "mx": 2.0, "mn": 0.0, "la": None, "mm": None, "bo": True, "fn": 5, "op": "+I"},
]
# agg(image, last): NaN stays the max, -0.0 the min, the blank image with a null, the map as it
# is; bool_or(null, true); first_non_null_value not initialized before the -D, so the 5
AFTER_IMAGE = [(NAN, -0.0, " ", [("x", 1), ("y", None)], True, 5)]


def _values(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [tuple(r[c] for c in FUNCTIONS) for r in rows]


def _same_rows(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> bool:
    return len(a) == len(b) and all(same(x, y) for ra, rb in zip(a, b, strict=True)
                                    for x, y in zip(ra, rb, strict=True))


@pytest.mark.parametrize("path", ["writer", "compaction", "lookup", "dv"])
def test_every_merge_path_of_a_table(tmp_path: Any, path: str) -> None:
    # writer: one commit, merged by the writer's flush; compaction: a commit per record, read
    # (merge on read), then fully compacted; lookup: changelog-producer = lookup compacts each
    # commit with the old row first; dv: deletion vectors drop the merged -D at its compaction
    # (Paimon's DV mode), so the last insert starts empty (a lone record merged: agg(null, v))
    options = {"bucket": "1", "merge-engine": "aggregation", "rowkind.field": "op", **REMOVE,
               **{f"fields.{c}.aggregate-function": f for c, f in FUNCTIONS.items()},
               **{"writer": {"write-only": "true"}, "compaction": {"write-only": "true"},
                  "lookup": {"changelog-producer": "lookup"}, "dv": {"deletion-vectors.enabled": "true"}}[path]}
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options=options)
    for part in [ROWS] if path == "writer" else [[r] for r in ROWS]:
        table.write_arrow(pa.Table.from_pylist(part, schema=SCHEMA))
    expected = [(2.0, 0.0, None, None, True, 5)] if path == "dv" else AFTER_IMAGE
    assert _same_rows(_values(table.to_arrow().to_pylist()), expected)
    if path == "compaction":
        table.compact(full=True)
        assert _same_rows(_values(table.to_arrow().to_pylist()), expected)
