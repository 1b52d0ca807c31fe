"""A null in a NOT NULL column meets a merge (Paimon HEAD 5dacde5, 2.0 alike).

HEAD's ``initRow`` (``AggregateMergeFunction`` under ``aggregation.remove-record-on-delete``;
``PartialUpdateMergeFunction`` for a key's leading retraction, a remove-record-on-delete -D and a
remove-record-on-sequence-group -D) throws ``IllegalArgumentException("Field <i> can not be
null")`` when the image it copies is null in a NOT NULL column, and partial-update's
``updateNonNullFields`` (no sequence groups) throws the same for an insert. Both run at merge time
in ``add``, so a key's only record (emitted as it is by ReducerMergeFunctionWrapper) is not
checked, unless the merge takes lone records too (lookup / deletion-vector compaction). Java's
writer refuses such rows at write time (``TableWriteImpl.checkNullability``, every row kind), as
lake_assets' ``conform`` does: they reach a merge from files written before a column was made NOT
NULL (Java with ``alter-column-null-to-not-null.disabled = false``) or by an unchecking writer.
Java 0.9 predates ``initRow`` (1.1, #5077): no differential test.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError
from lake_assets.lsm.merge_engine.function import MergeFunction
from lake_assets.lsm.merge_engine.registry import merge_engine
from lake_assets.options import CoreOptions
from tests.unit.engine_records import DEL, INS, KIND, UB, run

# a NOT NULL (besides the key), b nullable; Java's field index of a is 1
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("a", pa.int64(), nullable=False),
                    ("b", pa.int64()), ("s", pa.int64())])
REFUSED = "refused"
AGG = {"merge-engine": "aggregation", "aggregation.remove-record-on-delete": "true",
       "fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "sum"}
PU = {"merge-engine": "partial-update"}
GROUP = {**PU, "fields.s.sequence-group": "a,b"}


def _fn(options: Mapping[str, str], singles: bool = False, checked: bool = True) -> MergeFunction:
    core = CoreOptions(dict(options))
    fn = merge_engine(core.merge_engine).create(
        [(f.name, f.type) for f in SCHEMA], ["k"], core, {"k", "a"} if checked else (), "Table db.t")
    fn.merges_singles = singles  # type: ignore[attr-defined]
    return fn


def _outcome(options: Mapping[str, str], records: Sequence[tuple[int, int | None, int | None, int | None]],
             singles: bool = False, checked: bool = True) -> Any:
    """(kind, a, b) of key 1 merged, or REFUSED when the merge raises the NOT NULL error."""
    rows = [(kind, {"k": 1, "a": a, "b": b, "s": s}) for kind, a, b, s in records]
    try:
        out = run(_fn(options, singles, checked), SCHEMA, rows).to_pylist()
    except InvalidDataError as exc:
        assert "Table db.t: column 'a' is NOT NULL" in str(exc) and "Field 1 can not be null" in str(exc), exc
        return REFUSED
    assert len(out) == 1
    return out[0][KIND], out[0]["a"], out[0]["b"]


CASES = [
    # (id, options, records (kind, a, b, s), lone records merged too, expected)
    # aggregation: AggregateMergeFunction.add -> initRow on a -D only
    ("agg -D image null after insert", AGG, [(INS, 1, 1, None), (DEL, None, 2, None)], False, REFUSED),
    ("agg -D image null, then insert", AGG, [(DEL, None, 2, None), (INS, 3, 4, None)], False, REFUSED),
    ("agg -D image null, earlier -D", AGG, [(DEL, None, 2, None), (DEL, 5, 6, None)], False, REFUSED),
    ("agg lone -D: emitted as it is", AGG, [(DEL, None, 2, None)], False, (DEL, None, 2)),
    ("agg lone -D merged (lookup)", AGG, [(DEL, None, 2, None)], True, REFUSED),
    ("agg -D image with a set", AGG, [(INS, 1, 1, None), (DEL, 7, None, None)], False, (DEL, 7, None)),
    # a -U is folded (sum retract), never copied: no check (HEAD's agg(acc, null) keeps acc)
    ("agg -U null", AGG, [(INS, 1, 1, None), (UB, None, 1, None)], False, (INS, 1, 0)),
    # without remove-record-on-delete no image is copied at all
    ("agg no reset: -D folded", {**AGG, "aggregation.remove-record-on-delete": "false"},
     [(INS, 4, 1, None), (DEL, None, 1, None)], False, (INS, 4, 0)),
    # partial-update, plain: updateNonNullFields refuses an insert's null; initRow a leading retraction
    ("pu insert null", PU, [(INS, 1, 1, None), (INS, None, 2, None)], False, REFUSED),
    ("pu lone insert null", PU, [(INS, None, 2, None)], False, (INS, None, 2)),
    ("pu lone insert null merged", PU, [(INS, None, 2, None)], True, REFUSED),
    ("pu ignore-delete leading -U null", {**PU, "ignore-delete": "true"},
     [(UB, None, 1, None), (INS, 3, None, None)], False, REFUSED),
    ("pu ignore-delete later -U null: dropped", {**PU, "ignore-delete": "true"},
     [(INS, 3, 1, None), (UB, None, 1, None)], False, (INS, 3, 1)),
    ("pu remove-on-delete -D null", {**PU, "partial-update.remove-record-on-delete": "true"},
     [(INS, 3, 1, None), (DEL, None, 1, None)], False, REFUSED),
    ("pu remove-on-delete -U null: no image", {**PU, "partial-update.remove-record-on-delete": "true"},
     [(INS, 3, 1, None), (UB, None, 1, None)], False, (INS, 3, 1)),
    # sequence groups: updateWithSequenceGroup checks nothing; initRow on the leading retraction
    # and on a remove-record-on-sequence-group -D
    ("pu groups insert null", GROUP, [(INS, 3, 1, 1), (INS, None, 2, 2)], False, (INS, None, 2)),
    ("pu groups leading -U null", GROUP, [(UB, None, 1, 1), (INS, 3, 4, 2)], False, REFUSED),
    ("pu groups later -U null", GROUP, [(INS, 3, 4, 1), (UB, None, 1, 2)], False, (INS, None, None)),
    ("pu group delete -D null", {**GROUP, "partial-update.remove-record-on-sequence-group": "s"},
     [(INS, 3, 4, 1), (DEL, None, 1, 2)], False, REFUSED),
    ("pu group delete: an earlier -D null", {**GROUP, "partial-update.remove-record-on-sequence-group": "s"},
     [(INS, 3, 4, 1), (DEL, None, 1, 2), (DEL, 5, 1, 3)], False, REFUSED),
    ("pu group delete: lone -D as it is", {**GROUP, "partial-update.remove-record-on-sequence-group": "s"},
     [(DEL, None, 1, 2)], False, (DEL, None, 1)),
    ("pu group delete: lone -D merged", {**GROUP, "partial-update.remove-record-on-sequence-group": "s"},
     [(DEL, None, 1, 2)], True, REFUSED),
    ("pu group delete -D with a set", {**GROUP, "partial-update.remove-record-on-sequence-group": "s"},
     [(INS, 3, 4, 1), (DEL, 8, None, 2)], False, (DEL, 8, None)),
]


@pytest.mark.parametrize(("options", "records", "singles", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_not_null_check_of_each_merge_path(options: Mapping[str, str], records: Any, singles: bool,
                                           expected: Any) -> None:
    assert _outcome(options, records, singles) == expected


def test_callers_without_nullability_are_unchecked() -> None:
    """The factory's old three-argument call (no ``not_null``) checks nothing, as before."""
    records = [(INS, 1, 1, None), (DEL, None, 2, None)]
    assert _outcome(AGG, records, checked=False) == (DEL, None, 2)
    core = CoreOptions(AGG)
    fn = merge_engine("aggregation").create([(f.name, f.type) for f in SCHEMA], ["k"], core)
    out = run(fn, SCHEMA, [(k, {"k": 1, "a": a, "b": b, "s": s}) for k, a, b, s in records]).to_pylist()
    assert [(r[KIND], r["a"]) for r in out] == [(DEL, None)]


TABLE = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.int64()),
                   ("op", pa.string())])


def _made_not_null(table_dir: Path, column: str) -> None:
    """Add schema 1 with ``column`` NOT NULL, as Java's ALTER with
    ``alter-column-null-to-not-null.disabled = false`` does (lake_assets refuses that change)."""
    schema = json.loads((table_dir / "schema" / "schema-0").read_text())
    for f in schema["fields"]:
        if f["name"] == column:
            f["type"] += " NOT NULL"
    schema["id"] = 1
    (table_dir / "schema" / "schema-1").write_text(json.dumps(schema))


@pytest.mark.parametrize("extra", [{}, {"deletion-vectors.enabled": "true"}])
def test_table_merges_refuse_an_old_null_image(tmp_path: Path, extra: dict[str, str]) -> None:
    """End to end: the writer refuses the null at write time (nothing committed); a -D with a null
    written while ``a`` was nullable is refused by the read's merge and by compaction (deletion
    vectors: the lookup merge), naming the table and column, and the compaction commits nothing."""
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    t = catalog.create_table("db.t", TABLE, primary_keys=["k"], options={
        "bucket": "1", "rowkind.field": "op", "merge-engine": "aggregation",
        "aggregation.remove-record-on-delete": "true", "fields.a.aggregate-function": "sum",
        "write-only": "true", **extra})
    # both files hold a null in ``a`` (the merge of a file without one and a file with one fails
    # earlier, in Arrow, on their differing nullability: see the module docstring)
    t.write_arrow(pa.Table.from_pylist([{"k": 1, "a": None, "b": 1, "op": "+I"}], schema=TABLE))
    t.write_arrow(pa.Table.from_pylist([{"k": 1, "a": None, "b": 2, "op": "-D"}], schema=TABLE))
    _made_not_null(tmp_path / "db.db" / "t", "a")
    t = catalog.get_table("db.t")
    snapshot = t.latest_snapshot().id
    with pytest.raises(InvalidDataError, match="column 'a' is NOT NULL"):
        t.write_arrow(pa.Table.from_pylist([{"k": 2, "a": None, "b": 2, "op": "-D"}], schema=TABLE))
    if not extra:  # a deletion-vector table's batch read merges nothing (level 0 is not read)
        with pytest.raises(InvalidDataError, match=r"Table db\.t: column 'a' is NOT NULL but a -D record's image"):
            t.to_arrow()
    with pytest.raises(InvalidDataError, match=r"Table db\.t: column 'a' is NOT NULL but a -D record's image"):
        t.compact(full=True)
    assert t.latest_snapshot().id == snapshot
