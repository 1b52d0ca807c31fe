"""Partial-update and aggregation merge engines against pure-Python models: same results, and
associative merges (a slice merged on its own, then with the rest), for random record streams."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.engine_models import (
    AGG_SCHEMA,
    AGG_STREAM,
    BOOL_FUNCS,
    INT_FUNCS,
    SEQV,
    SMALL_INT,
    SPLITS,
    STR_FUNCS,
    TEXT,
    Split,
    agg_options,
    assert_associative,
    assert_parts_by_level,
    assert_same,
    engine_result,
    model_aggregation,
    model_partial_update,
    model_partial_update_groups,
    model_result,
    retracting,
    stream,
)
from tests.unit.engine_records import (
    HYPO,
    INS,
    UA,
    UB,
    Record,
    agg,
    pu,
)

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
