"""``partial-update.remove-record-on-sequence-group`` (Paimon 1.0+): a -D in a named sequence group
removes the whole record, as Paimon HEAD's ``PartialUpdateMergeFunction`` does.

Java 0.9 predates the option, so the spec is HEAD's source: its own unit test's vector below, and
a sequential model of its merge function compared with our vectorized merge on random records.
pypaimon-rust 0.4 implements the option; `tests/interop/test_partial_update_group_delete_interop.py`
checks tables both ways against it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog
from lake_assets.errors import OptionError
from lake_assets.lsm.merge_engine.group_delete import last_resets, segmented_prior_max
from lake_assets.lsm.merge_engine.grouping import Grouping
from tests.unit.engine_records import DEL, INS, UA, UB, int_schema, pu, run

# fields.f3.sequence-group = f1,f2; fields.f6.sequence-group = f4,f5 (Paimon's test schema)
JAVA_SCHEMA = int_schema("f1", "f2", "f3", "f4", "f5", "f6", dtype=pa.int32())
JAVA_OPTIONS = {"fields.f3.sequence-group": "f1,f2", "fields.f6.sequence-group": "f4,f5"}


def _row(*values: int | None) -> dict[str, Any]:
    return dict(zip(JAVA_SCHEMA.names, values, strict=True))


def test_java_head_sequence_group_partial_delete_vector() -> None:
    """Paimon HEAD's ``PartialUpdateMergeFunctionTest.testSequenceGroupPartialDelete``: after each
    record, the merge of every record so far (values as Java validates them; kinds as its
    ``getResult`` gives them)."""
    fn = pu(JAVA_SCHEMA, {**JAVA_OPTIONS, "partial-update.remove-record-on-sequence-group": "f6"})
    steps: list[tuple[int, dict[str, Any], int, tuple[int | None, ...]]] = [
        (INS, _row(1, 1, 1, 1, 1, 1, 1), INS, (1, 1, 1, 1, 1, 1, 1)),
        (INS, _row(1, 2, 2, 2, 2, 2, None), INS, (1, 2, 2, 2, 1, 1, 1)),
        (INS, _row(1, 3, 3, 1, 3, 3, 3), INS, (1, 2, 2, 2, 3, 3, 3)),
        # a -D whose f6 is null retracts group f3 only (f6 is the named group)
        (DEL, _row(1, 1, 1, 3, 1, 1, None), INS, (1, None, None, 3, 3, 3, 3)),
        # a -D of group f6 (4 >= 3) removes the record: the row is the -D's image, kind -D
        (DEL, _row(1, 1, 1, 3, 1, 1, 4), DEL, (1, 1, 1, 3, 1, 1, 4)),
        (INS, _row(1, 4, 4, 4, 5, 5, 5), INS, (1, 4, 4, 4, 5, 5, 5)),
        (DEL, _row(1, 1, 1, 6, 1, 1, 6), DEL, (1, 1, 1, 6, 1, 1, 6)),
    ]
    records: list[tuple[int, dict[str, Any]]] = []
    for kind, row, want_kind, want in steps:
        records.append((kind, row))
        out = run(fn, JAVA_SCHEMA, records).to_pylist()
        assert len(out) == 1
        assert (out[0]["_VALUE_KIND"], tuple(out[0][c] for c in JAVA_SCHEMA.names)) == (want_kind, want), records


def test_older_insert_after_the_delete_changes_nothing_in_the_deleted_group() -> None:
    """The -D's image keeps its group sequence: a later insert older than the delete does not
    bring the deleted group back, a newer one does; other groups merge as usual."""
    fn = pu(JAVA_SCHEMA, {**JAVA_OPTIONS, "partial-update.remove-record-on-sequence-group": "f3"})
    records = [(INS, _row(1, 10, 10, 5, 20, 20, 5)), (DEL, _row(1, None, None, 7, None, None, None)),
               (INS, _row(1, 11, 11, 6, 21, 21, 6))]
    out = run(fn, JAVA_SCHEMA, records).to_pylist()[0]
    assert out["_VALUE_KIND"] == INS
    assert [out[c] for c in JAVA_SCHEMA.names] == [1, None, None, 7, 21, 21, 6]
    records.append((INS, _row(1, 12, None, 8, None, None, None)))
    out = run(fn, JAVA_SCHEMA, records).to_pylist()[0]
    assert [out[c] for c in JAVA_SCHEMA.names] == [1, 12, None, 8, 21, 21, 6]


def test_option_checks() -> None:
    with pytest.raises(OptionError, match="must be part of sequence groups"):
        pu(JAVA_SCHEMA, {**JAVA_OPTIONS, "partial-update.remove-record-on-sequence-group": "f1"})
    with pytest.raises(OptionError, match="conflict"):
        pu(JAVA_SCHEMA, {**JAVA_OPTIONS, "partial-update.remove-record-on-sequence-group": "f3",
                         "ignore-delete": "true"})


# ------------------------------------------------------------------ a sequential model of Java's merge

def _java_merge(records: Sequence[tuple[int, dict[str, Any]]], groups: Mapping[tuple[str, ...], tuple[str, ...]],
                named: set[str], free: Sequence[str]) -> tuple[int, dict[str, Any]]:
    """Paimon HEAD's ``PartialUpdateMergeFunction`` for one key: plain (last_value) sequence groups,
    ungrouped columns ``free``. A leading retraction first sets the row to its whole image
    (``initRow``, Paimon 1.4.1+), then acts as any retraction."""
    row: dict[str, Any] = dict(records[0][1]) if records[0][0] in (UB, DEL) else {}
    deleted, meet_insert = False, False

    def seq(rec: Mapping[str, Any], fields: tuple[str, ...]) -> tuple[tuple[int, Any], ...]:
        return tuple((0, None) if rec.get(f) is None else (1, rec[f]) for f in fields)

    for kind, rec in records:
        deleted = False
        row["k"] = rec["k"]
        retract = kind in (UB, DEL)
        if not retract:
            meet_insert = True
        reset = False
        for fields in groups:
            if all(rec.get(f) is None for f in fields) or seq(rec, fields) < seq(row, fields):
                continue
            if kind == DEL and named & set(fields):
                reset = True
                break
        if reset:
            row, deleted = dict(rec), True
            continue
        for fields, members in groups.items():
            if all(rec.get(f) is None for f in fields) or seq(rec, fields) < seq(row, fields):
                continue
            for f in fields:
                row[f] = rec.get(f)
            for m in members:
                row[m] = None if retract else rec.get(m)
        if not retract:
            for c in free:
                if rec.get(c) is not None:
                    row[c] = rec[c]
    return (DEL if deleted or not meet_insert else INS), row


MODEL_SCHEMA = int_schema("a", "g1", "b", "g2", "c", "g3", "free", dtype=pa.int32())
MODEL_GROUPS = {("g1",): ("a",), ("g2",): ("b",), ("g3",): ("c",)}
small = st.one_of(st.none(), st.integers(0, 3))
record = st.tuples(st.sampled_from([INS, INS, UA, UB, DEL, DEL]),
                   st.fixed_dictionaries({c: small for c in MODEL_SCHEMA.names[1:]}))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=st.lists(st.lists(record, min_size=1, max_size=7), min_size=1, max_size=6),
       named=st.sampled_from(["g1", "g1,g2", "g2,g3,g1"]))
def test_merge_equals_java_model(keys: list[list[tuple[int, dict[str, Any]]]], named: str) -> None:
    """Random keys of random records: our vectorized merge equals the model record by record,
    including keys reset several times, by -Ds that lower another named group's sequence, and
    keys starting with a retraction."""
    options = {f"fields.{s[0]}.sequence-group": m[0] for s, m in MODEL_GROUPS.items()}
    fn = pu(MODEL_SCHEMA, {**options, "partial-update.remove-record-on-sequence-group": named})
    records: list[tuple[int, dict[str, Any]]] = []
    expected: dict[int, tuple[int, dict[str, Any]]] = {}
    for k, recs in enumerate(keys):
        keyed = [(kind, {**rec, "k": k}) for kind, rec in recs]
        records += keyed
        if len(keyed) > 1:  # a key's only record is kept as written (Paimon's reducer wrapper)
            kind, row = _java_merge(keyed, MODEL_GROUPS, set(named.split(",")), ["free"])
            expected[k] = (kind, {c: row.get(c) for c in MODEL_SCHEMA.names})
    out = {r["k"]: (r["_VALUE_KIND"], {c: r[c] for c in MODEL_SCHEMA.names}) for r in
           run(fn, MODEL_SCHEMA, records).to_pylist()}
    assert {k: v for k, v in out.items() if k in expected} == expected


def test_segmented_prior_max_and_rounds() -> None:
    gid = np.array([0, 0, 0, 1, 1], dtype=np.int64)
    assert segmented_prior_max(np.array([2, -1, 5, 0, 3]), gid).tolist() == [-1, 2, 2, -1, 0]
    # key 0: row 1 resets by group B while lowering group A to unset, so the -D at row 2 (A = 0)
    # resets again, which needs a second round; key 1 never resets (its -D is older in A)
    group_a = np.array([4, -1, 0, 3, 1], dtype=np.int64)
    group_b = np.array([-1, 2, -1, -1, -1], dtype=np.int64)
    is_delete = np.array([False, True, True, False, True])
    grouping = Grouping(gid, np.array([0, 3]), np.array([2, 4]))
    assert last_resets(is_delete, [group_a, group_b], grouping).tolist() == [2, -1]
    assert last_resets(is_delete, [group_a], grouping).tolist() == [-1, -1]


# ------------------------------------------------------------------ through a table

TABLE_SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("a", pa.string()), ("g1", pa.int32()),
                          ("c", pa.string()), ("g2", pa.int32()), ("op", pa.string())])


def _table(tmp_path, **options: str) -> Any:
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    return catalog.create_table("db.t", TABLE_SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "merge-engine": "partial-update", "rowkind.field": "op",
        "fields.g1.sequence-group": "a", "fields.g2.sequence-group": "c",
        "partial-update.remove-record-on-sequence-group": "g1", **options})


def _write(t: Any, *rows: dict[str, Any]) -> None:
    t.write_arrow(pa.Table.from_pylist([{c: r.get(c) for c in TABLE_SCHEMA.names} for r in rows], schema=TABLE_SCHEMA))


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_table_reads_and_changelog(tmp_path, producer: str) -> None:
    """Writes, reads and the changelog producers see the removal: a -D of g1 deletes key 1
    (changelog -D of the whole row); a -D of g2 (not named) only retracts its group."""
    t = _table(tmp_path, **{"changelog-producer": producer, "full-compaction.delta-commits": "1"})
    _write(t, {"k": 1, "a": "a1", "g1": 1, "c": "c1", "g2": 1, "op": "+I"},
           {"k": 2, "a": "a2", "g1": 1, "c": "c2", "g2": 1, "op": "+I"})
    first = t.latest_snapshot().id
    _write(t, {"k": 1, "g1": 2, "op": "-D"}, {"k": 2, "c": "x", "g2": 2, "op": "-D"})
    assert t.to_arrow().to_pylist() == [{"k": 2, "a": "a2", "g1": 1, "c": None, "g2": 2, "op": "+I"}]
    changes = t.read_changes(first, source="changelog").to_pylist()
    assert sorted((r["_row_kind"], r["k"], r["a"], r["c"]) for r in changes) == [
        ("+U", 2, "a2", None), ("-D", 1, "a1", "c1"), ("-U", 2, "a2", "c2")]


def test_compaction_keeps_the_delete_until_the_top_level(tmp_path) -> None:
    """Level-0 runs merged by a full compaction: an insert older than the delete in g1 does not
    bring g1 back (the -D's image holds g1 = 2), g2 does come back. As in Paimon, the top level
    holds no -D record: once the removal is compacted there, its sequence is forgotten."""
    t = _table(tmp_path, **{"write-only": "true"})
    _write(t, {"k": 1, "a": "a1", "g1": 1, "c": "c1", "g2": 1, "op": "+I"})
    _write(t, {"k": 1, "g1": 2, "op": "-D"})
    _write(t, {"k": 1, "a": "old", "g1": 1, "c": "c3", "g2": 3, "op": "+I"})
    want = [{"k": 1, "a": None, "g1": 2, "c": "c3", "g2": 3, "op": "+I"}]
    assert t.to_arrow().to_pylist() == want
    t.compact(full=True)
    assert t.to_arrow().to_pylist() == want
    _write(t, {"k": 1, "g1": 3, "op": "-D"})
    t.compact(full=True)
    assert t.to_arrow().to_pylist() == []
