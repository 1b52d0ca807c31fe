"""The aggregation engine's reset by a -D under ``aggregation.remove-record-on-delete``, as Paimon
1.4.1+ (PR #7645, `lsm.merge_engine.aggregate_reset`): the row becomes the -D's whole image and
later records aggregate onto it. Cases follow Paimon's AggregateMergeFunctionTest
(testInitRowWithNullableFieldOnDelete) and MergeFunctionTestUtils' expectations, written here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.lsm.merge_engine.segment_reduce import MAX_RUN
from tests.unit.engine_records import DEL, INS, KIND, UB, Record, agg, by_key, int_schema, merge, pu, raw_table, run
from tests.unit.test_collection_aggregates import ROW, UA, merge_column

REMOVE = {"aggregation.remove-record-on-delete": "true"}


def test_a_delete_resets_to_its_whole_image_nullable_columns_included() -> None:
    # AggregateMergeFunctionTest.testInitRowWithNullableFieldOnDelete: k, a NOT NULL, b, c nullable
    s = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("a", pa.int32(), nullable=False),
                   ("b", pa.int32()), ("c", pa.int32())])
    fn = agg(s, {"fields.default-aggregate-function": "sum", **REMOVE})
    out = run(fn, s, [(INS, {"k": 1, "a": 0, "b": 0, "c": 5}), (DEL, {"k": 1, "a": 2, "b": 2, "c": None})])
    row = out.to_pylist()[0]
    assert (row[KIND], row["a"], row["b"], row["c"]) == (DEL, 2, 2, None)


@pytest.mark.parametrize("width", [1, MAX_RUN + 2])  # numpy segment sums, then Arrow's hash aggregate
def test_records_after_a_delete_aggregate_onto_its_image(width: int) -> None:
    # MergeFunctionTestUtils (1.4.1+): with an insert in the group, the sum restarts from the last
    # -D's value; without one, the result is the last -D as it is
    s = int_schema("v")
    fn = agg(s, {"fields.v.aggregate-function": "sum", **REMOVE})
    pad: list[Record] = [(INS, {"k": 1, "v": 0})] * width
    out = by_key(run(fn, s, [
        *pad, (INS, {"k": 1, "v": 5}), (DEL, {"k": 1, "v": 2}), (INS, {"k": 1, "v": 3}), *pad,
        (DEL, {"k": 2, "v": 4}), (DEL, {"k": 2, "v": 7}),
        (INS, {"k": 3, "v": 1}), (DEL, {"k": 3, "v": 6}), (UB, {"k": 3, "v": 2}),  # -U after: +I again
        (INS, {"k": 4, "v": 1}), (DEL, {"k": 4, "v": None}), (INS, {"k": 4, "v": 8}),  # a null image
    ]))
    assert {k: (kind, row["v"]) for k, (kind, row) in out.items()} == {
        1: (INS, 5), 2: (DEL, 7), 3: (INS, 4), 4: (INS, 8)}


def test_first_value_functions_keep_their_initialized_flag_across_the_reset() -> None:
    # FieldFirstValueAgg / FieldFirstNonNullValueAgg: initRow sets the image without resetting
    # the aggregator, so one that took a value before the -D (in this merge) keeps the image
    s = int_schema("f", "n")
    fn = agg(s, {"fields.f.aggregate-function": "first_value",
                 "fields.n.aggregate-function": "first_non_null_value", **REMOVE})
    out = by_key(run(fn, s, [
        (INS, {"k": 1, "f": 1, "n": 1}), (DEL, {"k": 1, "f": 2, "n": None}), (INS, {"k": 1, "f": 3, "n": 3}),
        (DEL, {"k": 2, "f": 2, "n": 2}), (INS, {"k": 2, "f": 3, "n": 3}),
        (INS, {"k": 3, "f": 1, "n": None}), (DEL, {"k": 3, "f": 2, "n": 2}), (INS, {"k": 3, "f": None, "n": 3}),
        (DEL, {"k": 4, "f": 2, "n": 2}), (INS, {"k": 4, "f": None, "n": None}),
        (DEL, {"k": 5, "f": 1, "n": 1}), (DEL, {"k": 5, "f": 2, "n": 2}), (INS, {"k": 5, "f": 9, "n": 9}),
    ]))
    got = {k: (kind, row["f"], row["n"]) for k, (kind, row) in out.items()}
    assert got == {
        1: (INS, 2, None),  # both initialized before the -D: the image, null included
        2: (INS, 3, 3),  # nothing before: the first record after
        3: (INS, 2, 3),  # first_value initialized by the +I; first_non_null_value not (its value was null)
        4: (INS, None, 2),  # first_value takes the null +I; first_non_null_value finds none: the image
        5: (INS, 9, 9),  # two resets and no insert before them: the +I after
    }


def test_ignore_retract_with_remove_record_on_delete_is_refused() -> None:
    # FieldAggregatorFactory.create (Paimon 1.1+): "conflicting behavior", for any column
    s = int_schema("v")
    with pytest.raises(OptionError, match=r"remove-record-on-delete.*fields\.v\.ignore-retract"):
        agg(s, {"fields.v.aggregate-function": "sum", "fields.v.ignore-retract": "true", **REMOVE})


@pytest.mark.parametrize(("options", "refused"), [
    # HEAD's PartialUpdateMergeFunction builds a FieldAggregator (FieldAggregatorFactory.create,
    # which refuses the pair) for the key and every column with an aggregate function
    ({"fields.v.aggregate-function": "sum", "fields.v.ignore-retract": "true"}, "v"),
    ({"fields.default-aggregate-function": "sum", "fields.v.ignore-retract": "true"}, "v"),
    ({"fields.k.ignore-retract": "true"}, "k"),
    # no aggregator: a group member without a function, the sequence field itself
    ({"fields.v.ignore-retract": "true"}, None),
    ({"fields.g.ignore-retract": "true"}, None),
    # partial-update.remove-record-on-delete is no part of the check (it refuses groups itself)
    ({"partial-update.remove-record-on-delete": "true", "aggregation.remove-record-on-delete": "false",
      "fields.g.sequence-group": None, "fields.v.aggregate-function": "last_non_null_value",
      "fields.v.ignore-retract": "true"}, None),
])
def test_partial_update_ignore_retract_with_aggregation_remove_on_delete(
        options: dict[str, str | None], refused: str | None) -> None:
    s = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("g", pa.int64())])
    opts = {k: v for k, v in {**REMOVE, "fields.g.sequence-group": "v", **options}.items() if v is not None}
    if refused is None:
        pu(s, opts)
        return
    with pytest.raises(OptionError, match=rf"'aggregation\.remove-record-on-delete' and "
                                          rf"'fields\.{refused}\.ignore-retract' have conflicting behavior"):
        pu(s, opts)


def test_merging_in_parts_follows_java_level_by_level() -> None:
    # A merged -D carries the image, so a later merge resets to the same row: +I 5, -D 2 merged
    # first, then +I 3, gives 2 + 3 as merging all three at once does
    s = int_schema("v")
    fn = agg(s, {"fields.v.aggregate-function": "sum", **REMOVE})
    first = merge(fn, raw_table(s, [(INS, {"k": 1, "v": 5}), (DEL, {"k": 1, "v": 2})], first_seq=1))
    later = merge(fn, pa.concat_tables([first, raw_table(s, [(INS, {"k": 1, "v": 3})], first_seq=3)]))
    whole = run(fn, s, [(INS, {"k": 1, "v": 5}), (DEL, {"k": 1, "v": 2}), (INS, {"k": 1, "v": 3})])
    assert later.column("v").to_pylist() == whole.column("v").to_pylist() == [5]


def test_a_reset_image_of_negative_zero_is_kept() -> None:
    s = int_schema("d", dtype=pa.float64())
    fn = agg(s, {"fields.d.aggregate-function": "sum", **REMOVE})
    rows: Any = run(fn, s, [(INS, {"k": 1, "d": 1.0}), (DEL, {"k": 1, "d": -0.0}), (INS, {"k": 1, "d": -0.0})])
    assert np.signbit(rows.column("d").to_pylist()[0])


def test_lookup_merges_take_the_image_and_vector_tables_drop_the_delete(tmp_path: Any) -> None:
    # The lookup / deletion-vector merges merge a key's lone record too (merges_singles): a lone
    # -D is its image. Across commits a plain table's read resets to the stored -D's image
    # (2 + 3); a vector table drops the -D at its compaction, so the insert starts empty (3),
    # as Paimon's DV mode does
    s = int_schema("v")
    fn = agg(s, {"fields.v.aggregate-function": "sum", **REMOVE})
    fn.merges_singles = True
    lone = run(fn, s, [(DEL, {"k": 1, "v": 4})]).to_pylist()[0]
    assert (lone[KIND], lone["v"]) == (DEL, 4)
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("op", pa.string())])
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    got = {}
    for name, extra in (("plain", {}), ("dv", {"deletion-vectors.enabled": "true"})):
        table = catalog.create_table(f"db.{name}", schema, primary_keys=["k"], options={
            "bucket": "1", "merge-engine": "aggregation", "rowkind.field": "op", "fields.v.aggregate-function": "sum",
            **REMOVE, **extra})
        for v, op in ((5, "+I"), (2, "-D"), (3, "+I")):
            table.write_arrow(pa.Table.from_pylist([{"k": 1, "v": v, "op": op}], schema=schema))
        got[name] = table.to_arrow().column("v").to_pylist()
    assert got == {"plain": [5], "dv": [3]}


def _r(i: int, v: str) -> dict[str, Any]:
    return {"id": i, "v": v, "s": None}


# (function, options, records (key 1), element type or None, HEAD's result): after a -D, HEAD
# aggregates onto the image as it is, agg(image, v) (AggregateMergeFunction.initRow; results
# written from FieldCollectAgg / FieldNestedUpdateAgg); [-U, +U] is a retraction on nothing.
IMAGE_CASES = [
    # distinct collect of ints: a HashSet dedups the image too (its order carries no meaning)
    ("collect", {"fields.c.distinct": "true"}, [(DEL, [1, 1, 2]), (INS, [2, 3]), (INS, [4])], None, [1, 2, 3, 4]),
    # ROW / VARBINARY elements: compared by an equaliser over a list that keeps the image's twins
    ("collect", {"fields.c.distinct": "true"}, [(DEL, [_r(1, "a"), _r(1, "a")]), (INS, [_r(2, "b")])], "row",
     [_r(1, "a"), _r(1, "a"), _r(2, "b")]),
    ("collect", {"fields.c.distinct": "true"}, [(DEL, [b"x", b"x"]), (INS, [b"y"]), (UB, [b"x"])], "binary",
     [b"x", b"y"]),  # a retracted element removes one equal element
    ("nested_update", {"fields.c.nested-key": "id"},
     [(DEL, [_r(1, "a"), _r(2, "b")]), (INS, [_r(2, "c")]), (INS, [_r(3, "d")])], None,
     [_r(1, "a"), _r(2, "c"), _r(3, "d")]),
    ("nested_update", {}, [(DEL, [_r(1, "a"), _r(2, "b")]), (INS, [_r(3, "c")]), (INS, [_r(1, "a")])], None,
     [_r(1, "a"), _r(2, "b"), _r(3, "c"), _r(1, "a")]),
    # count-limit: the image's keys all stay (only new keys are limited), a full image takes no rows
    ("nested_update", {"fields.c.nested-key": "id", "fields.c.count-limit": "2"},
     [(DEL, [_r(1, "a"), _r(2, "b"), _r(3, "c")]), (INS, [_r(4, "d")]), (INS, [_r(1, "z")])], None,
     [_r(1, "z"), _r(2, "b"), _r(3, "c")]),
    ("nested_update", {"fields.c.count-limit": "2"}, [(DEL, [_r(1, "a"), _r(2, "b"), _r(3, "c")]),
                                                      (INS, [_r(4, "d")])], None, [_r(1, "a"), _r(2, "b"), _r(3, "c")]),
    # a null input returns the image as it is, its null element included; a non-null one drops it
    ("nested_update", {}, [(DEL, [_r(1, "a"), None]), (INS, None)], None, [_r(1, "a"), None]),
    ("nested_update", {}, [(DEL, [_r(1, "a"), None]), (INS, [_r(2, "b")])], None, [_r(1, "a"), _r(2, "b")]),
    ("nested_update", {"fields.c.nested-key": "id"}, [(UB, [_r(1, "a")]), (UA, [_r(2, "b")])], None, [_r(2, "b")]),
    ("collect", {"fields.c.distinct": "true"}, [(UB, [1]), (UA, [2, 2])], None, [2]),
]


@pytest.mark.parametrize(("func", "options", "records", "element", "expected"), IMAGE_CASES)
def test_collections_aggregate_onto_the_delete_image_as_head(
        func: str, options: dict[str, str], records: list[tuple[int, Any]], element: str | None, expected: Any) -> None:
    dtype = {"row": pa.list_(ROW), "binary": pa.list_(pa.binary()), None: None}[element]
    got = merge_column(func, {**REMOVE, **options}, [(1, kind, value) for kind, value in records], dtype)
    assert got == {1: expected}


def test_listagg_distinct_stays_refused_by_name() -> None:
    # its -D image question does not arise: Paimon 1.x's distinct listagg is refused
    with pytest.raises(UnsupportedFeatureError, match="distinct"):
        agg(int_schema("v", dtype=pa.string()), {"fields.v.aggregate-function": "listagg",
                                                 "fields.v.distinct": "true", **REMOVE})
