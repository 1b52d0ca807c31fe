"""A partial-update key whose first record in a merge is a retraction (Paimon 1.4.1+ and 2.0).

Paimon's ``PartialUpdateMergeFunction.add`` starts the row from the first record's whole image
when that record is a -U/-D (``initRow``: #5077 in 1.1 for NOT NULL columns, #7645 in 1.4.1/2.0
for every column, both bug fixes), before it looks at ``ignore-delete``; the record then acts as
any retraction would (sequence groups retract from the image, ignore-delete drops it). The cases
below are Paimon's own unit test vectors (``PartialUpdateMergeFunctionTest``, facts only) and
cases worked out from its source, rule by rule; `tests/unit/test_engines.py` checks the rule on
random records, merged at once and in parts (by level), against a record-at-a-time model.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.dv_old_values import lookup_merge_function
from tests.unit.engine_records import DEL, INS, KIND, SEQ, UB, Record, int_schema, merge, pu, raw_table, run

# fields.f3.sequence-group = f1,f2; fields.f6.sequence-group = f4,f5 (Paimon's test schema)
SCHEMA = int_schema("f1", "f2", "f3", "f4", "f5", "f6", dtype=pa.int32())
GROUPS = {"fields.f3.sequence-group": "f1,f2", "fields.f6.sequence-group": "f4,f5"}
NAMES = SCHEMA.names


def _rec(kind: int, *values: int | None) -> Record:
    return kind, dict(zip(NAMES, values, strict=True))


def _merged(options: dict[str, str], *records: Record) -> tuple[int, tuple[Any, ...], int]:
    """(kind, values, sequence number) of the one key ``records`` merge to (sequence numbers 0, 1, ...)."""
    out = run(pu(SCHEMA, options), SCHEMA, list(records)).to_pylist()
    assert len(out) == 1, out
    return out[0][KIND], tuple(out[0][c] for c in NAMES), out[0][SEQ]


# ------------------------------------------------------------------ Paimon's own vectors


def test_java_init_row_with_nullable_field_on_delete() -> None:
    """``testInitRowWithNullableFieldOnDelete`` (#7645): remove-record-on-delete, a -D whose
    nullable field is null resets the row to its whole image, nulls included."""
    s = pa.schema([pa.field("k", pa.int32(), nullable=False), pa.field("a", pa.int32(), nullable=False),
                   ("b", pa.int32()), ("c", pa.int32())])
    fn = pu(s, {"partial-update.remove-record-on-delete": "true"})
    out = run(fn, s, [(INS, {"k": 1, "a": 3, "b": 5, "c": 7}), (DEL, {"k": 1, "a": 2, "b": 2, "c": None})])
    assert [(r[KIND], r["a"], r["b"], r["c"]) for r in out.to_pylist()] == [(DEL, 2, 2, None)]


def test_java_delete_reproduces_the_sequence_number() -> None:
    """``testDeleteReproduceCorrectSequenceNumber``: the -D result carries the -D's sequence number."""
    options = {"partial-update.remove-record-on-delete": "true"}
    assert _merged(options, _rec(INS, 1, 1, 1, 1, 1, 1, 1), _rec(DEL, 1, 1, 1, 1, 1, 1, 1))[2] == 1


def test_java_sequence_group_partial_delete_with_projection() -> None:
    """``testSequenceGroupPartialDeleteWithProjection`` (#7586/#7645), without the projection: a -D
    of a named group not older than the row's becomes the row, whole."""
    options = {**GROUPS, "partial-update.remove-record-on-sequence-group": "f3,f6"}
    values = (100, 200, 1, 11, 12, 21, 22)
    assert _merged(options, _rec(INS, *values), _rec(DEL, *values))[:2] == (DEL, values)


# ------------------------------------------------------------------ the rule, case by case


def test_groups_leading_retraction_starts_from_its_image() -> None:
    """Groups: the leading -U's image sets every column; it then retracts the group its sequence
    sets (f3: f1, f2 null) and leaves the unset group (f6) and ungrouped columns with its values.
    An insert older in f3 changes nothing there. Before the rule the row started empty."""
    lead = _rec(UB, 1, 1, 2, 5, 7, 8, None)
    assert _merged(GROUPS, lead, _rec(DEL, 1, 3, 3, 1, 3, 3, None)) == (DEL, (1, None, None, 5, 7, 8, None), 1)
    assert _merged(GROUPS, lead, _rec(INS, 1, 9, 9, 4, None, None, None)) == (INS, (1, None, None, 5, 7, 8, None), 1)
    # a newer insert wins f3; an insert setting f6 wins it over the image's null sequence
    assert _merged(GROUPS, lead, _rec(INS, 1, 9, None, 6, 4, None, 0)) == (INS, (1, 9, None, 6, 4, None, 0), 1)


def test_groups_sum_retracts_from_the_image() -> None:
    """An aggregate retracts from the image's own value: a sum starts at 0 after a leading
    retraction, and a key of only retractions is -D of the later ones' negated sum."""
    s = int_schema("g", "total", "u")
    fn = pu(s, {"fields.g.sequence-group": "total", "fields.total.aggregate-function": "sum"})
    out = {r["k"]: (r[KIND], r["g"], r["total"], r["u"]) for r in run(fn, s, [
        (DEL, {"k": 1, "g": 1, "total": 5, "u": 1}), (DEL, {"k": 1, "g": 2, "total": 3, "u": None}),
        (UB, {"k": 2, "g": 1, "total": 5, "u": 1}), (INS, {"k": 2, "g": 0, "total": 4, "u": None}),
    ]).to_pylist()}
    assert out == {1: (DEL, 2, -3, 1), 2: (INS, 1, 4, 1)}


def test_remove_record_on_sequence_group_leading_update_before() -> None:
    """A leading -U of a named group retracts (only a -D removes); a leading -D of it is its image."""
    options = {**GROUPS, "partial-update.remove-record-on-sequence-group": "f6"}
    ins = _rec(INS, 1, 4, 4, 0, 5, 5, 0)
    assert _merged(options, _rec(UB, 1, 1, 1, 3, 1, 1, 4), ins) == (INS, (1, None, None, 3, None, None, 4), 1)
    assert _merged(options, _rec(DEL, 1, 1, 1, 3, 1, 1, 4), ins) == (INS, (1, 1, 1, 3, 1, 1, 4), 1)


def test_ignore_delete_keeps_only_the_leading_image() -> None:
    """ignore-delete: Paimon runs initRow before it drops the record, so a leading retraction's
    image is the row the inserts overwrite; later retractions are dropped. A key of only
    retractions merges to -D of the first one's image with sequence number 0 (an ignored record
    never sets it); a key's only record comes out as it is."""
    for key in ("ignore-delete", "partial-update.ignore-delete"):
        opts = {key: "true"}
        assert _merged(opts, _rec(DEL, 1, 1, 2, 3, 4, 5, 6), _rec(INS, 1, 9, None, None, 9, None, None)) == (
            INS, (1, 9, 2, 3, 9, 5, 6), 1)
        assert _merged(opts, _rec(INS, 1, 1, None, 1, 1, 1, 1), _rec(DEL, 1, 7, 8, 7, 8, 7, 8),
                       _rec(INS, 1, 2, None, None, None, None, None)) == (INS, (1, 2, None, 1, 1, 1, 1), 2)
        assert _merged(opts, _rec(UB, 1, 1, 2, 3, 4, 5, 6), _rec(DEL, 1, 9, 9, 9, 9, 9, 9)) == (
            DEL, (1, 1, 2, 3, 4, 5, 6), 0)
        assert _merged(opts, _rec(UB, 1, 1, 2, 3, 4, 5, 6)) == (UB, (1, 1, 2, 3, 4, 5, 6), 0)
    # the lookup compaction merges a lone record too (LookupChangelogMergeFunctionWrapper)
    fn = lookup_merge_function(pu(SCHEMA, {"ignore-delete": "true"}))
    out = run(fn, SCHEMA, [_rec(UB, 1, 1, 2, 3, 4, 5, 6)]).to_pylist()
    assert [(r[KIND], r[SEQ], r["f6"]) for r in out] == [(DEL, 0, 6)]


def test_ignore_delete_with_groups() -> None:
    """ignore-delete with groups: the image sets every group (f3 = 5), the dropped retraction
    retracts nothing, and an insert older in f3 does not win it; one setting f6 wins f6 (its null
    f5 included, as any winning record)."""
    opts = {**GROUPS, "ignore-delete": "true"}
    lead = _rec(DEL, 1, 1, 2, 5, 7, 8, None)
    assert _merged(opts, lead, _rec(INS, 1, 9, 9, 4, 6, None, 1)) == (INS, (1, 1, 2, 5, 6, None, 1), 1)


def test_ignore_delete_by_level_differs_from_at_once() -> None:
    """Where the rule makes merging in parts differ from merging at once, Java's result depends
    on the levels: a key's ignored retractions merged on their own (a flush of one commit, a
    compaction of level-0 files) give -D of sequence 0, which a later merge sorts before the
    key's older insert, so its image comes back under it; merged at once they are ignored."""
    fn = pu(SCHEMA, {"ignore-delete": "true"})
    older = raw_table(SCHEMA, [_rec(INS, 1, None, 3, None, None, None, None)], first_seq=1)
    deletes = raw_table(SCHEMA, [_rec(DEL, 1, 7, 8, 7, 8, 7, 8), _rec(DEL, 1, 9, 9, 9, 9, 9, 9)], first_seq=2)
    at_once = merge(fn, pa.concat_tables([older, deletes])).to_pylist()
    assert [(r[KIND], r["f1"], r["f2"], r[SEQ]) for r in at_once] == [(INS, None, 3, 1)]
    middle = merge(fn, deletes)
    assert [(r[KIND], r["f1"], r[SEQ]) for r in middle.to_pylist()] == [(DEL, 7, 0)]
    by_level = merge(fn, pa.concat_tables([older, middle])).to_pylist()
    assert [(r[KIND], r["f1"], r["f2"], r["f3"], r[SEQ]) for r in by_level] == [(INS, 7, 3, 7, 1)]


# ------------------------------------------------------------------ through a table

TABLE_SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("a", pa.string()), ("g1", pa.int32()),
                          ("c", pa.string()), ("g2", pa.int32()), ("u", pa.string()), ("op", pa.string())])


def test_table_flush_merges_a_leading_retraction_by_level(tmp_path) -> None:
    """One commit's records are merged when the writer flushes them (as Paimon's write buffer),
    so a commit starting a key with a -U leaves its image in the level-0 file: its ungrouped ``u``
    then overwrites the older row's at read and in a full compaction. The same records in
    separate commits are merged at once by the read, where the -U is not first: ``u`` stays."""
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    options = {"bucket": "1", "merge-engine": "partial-update", "rowkind.field": "op", "write-only": "true",
               "fields.g1.sequence-group": "a", "fields.g2.sequence-group": "c"}
    first = {"k": 1, "a": "a1", "g1": 1, "c": "c1", "g2": 1, "u": "u1", "op": "+I"}
    lead = {"k": 1, "a": "x", "g1": 0, "c": "c9", "g2": None, "u": "u9", "op": "-U"}
    after = {"k": 1, "a": None, "g1": None, "c": None, "g2": None, "u": None, "op": "+I"}
    results = []
    for name, commits in (("t1", [[first], [lead, after]]), ("t2", [[first], [lead], [after]])):
        t = catalog.create_table(f"db.{name}", TABLE_SCHEMA, primary_keys=["k"], options=options)
        for rows in commits:
            t.write_arrow(pa.Table.from_pylist(rows, schema=TABLE_SCHEMA))
        read = t.to_arrow().to_pylist()
        t.compact(full=True)
        assert t.to_arrow().to_pylist() == read
        results.append(read)
    assert results[0] == [{**first, "u": "u9"}]
    assert results[1] == [first]


@pytest.mark.parametrize("extra", [{"changelog-producer": "lookup"}, {"deletion-vectors.enabled": "true"},
                                   {"changelog-producer": "full-compaction", "full-compaction.delta-commits": "1"}])
def test_lookup_and_changelog_paths_see_the_flushed_image(tmp_path, extra: dict[str, str]) -> None:
    """Lookup compaction (its old row put first, a lone level-0 record merged too), deletion-vector
    compaction and the full-compaction changelog merge the flushed row: key 1's commit starting
    with a -U leaves its ``u`` (read and changelog agree); key 2's lone leading -U has no row above,
    so it merges to a -D (its image, retracted) that reads and the changelog drop."""
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    t = catalog.create_table("db.t", TABLE_SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "partial-update", "rowkind.field": "op",
        "fields.g1.sequence-group": "a", "fields.g2.sequence-group": "c", **extra})
    first = {"k": 1, "a": "a1", "g1": 1, "c": "c1", "g2": 1, "u": "u1", "op": "+I"}
    t.write_arrow(pa.Table.from_pylist([first], schema=TABLE_SCHEMA))
    start = t.latest_snapshot().id
    t.write_arrow(pa.Table.from_pylist([
        {"k": 1, "a": "x", "g1": 0, "c": "c9", "g2": None, "u": "u9", "op": "-U"},
        {"k": 1, "a": None, "g1": None, "c": None, "g2": None, "u": None, "op": "+I"},
        {"k": 2, "a": "y", "g1": 5, "c": "c5", "g2": None, "u": "u5", "op": "-U"},
    ], schema=TABLE_SCHEMA))
    assert t.to_arrow().to_pylist() == [{**first, "u": "u9"}]
    changes = t.read_changes(start, source="changelog").to_pylist()
    if "changelog-producer" in extra:
        assert sorted((r["_row_kind"], r["k"], r["u"]) for r in changes) == [("+U", 1, "u9"), ("-U", 1, "u1")]
