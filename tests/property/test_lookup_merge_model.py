"""Random rounds on lookup tables (``changelog-producer = lookup``, default ``num-levels``) read back
equal a model of Paimon's semantics, after every round: every input record counted once.

Lookup compaction writes each key's full merge above level 0 and leaves its older rows in deeper
levels; reads and compactions take a key's level-0 records plus its newest row above level 0
(lsm/lookup_merge.py). Merging every record of a key instead (the bug this pins) counts a sum's
older inputs again. The rounds mix writer commits (each compacts level 0 up) with dedicated and
full compactions, so keys spread over several levels. Java 0.9 checks the same in
tests/differential/test_lookup_merge_java.py.
"""

from __future__ import annotations

import tempfile
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.string())])
ENGINES = {
    "aggregation": {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
                    "fields.b.aggregate-function": "listagg"},
    "partial-update": {"merge-engine": "partial-update"},
}
ROW = st.tuples(st.integers(0, 9), st.integers(-5, 5) | st.none(), st.sampled_from(["x", "y", None]))
ROUND = st.tuples(st.lists(st.lists(ROW, min_size=1, max_size=6), min_size=1, max_size=3),
                  st.sampled_from(["none", "compact", "full"]))


def _apply(model: dict[int, dict[str, Any]], engine: str, k: int, a: int | None, b: str | None) -> None:
    """One input record merged into the model, as Paimon's engine merges it once."""
    old = model.get(k)
    if old is None:
        model[k] = {"k": k, "a": a, "b": b}
        return
    if engine == "aggregation":  # sum and listagg skip nulls
        old["a"] = old["a"] if a is None else (a if old["a"] is None else old["a"] + a)
        old["b"] = old["b"] if b is None else (b if old["b"] is None else f"{old['b']},{b}")
    else:  # partial-update: the newest non-null value of each field
        old["a"] = old["a"] if a is None else a
        old["b"] = old["b"] if b is None else b


def _replayed(changes: list[pa.Table]) -> dict[int, dict[str, Any]]:
    """The state the table's changelog adds up to (+I/+U set a key's row, -U/-D remove it)."""
    state: dict[int, dict[str, Any]] = {}
    for part in changes:
        for row in part.to_pylist():
            kind = row.pop("_row_kind")
            if kind in ("+I", "+U"):
                state[row["k"]] = row
            else:
                assert state.pop(row["k"], None) == row, f"{kind} of a row the changelog never added: {row}"
    return state


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds=st.lists(ROUND, min_size=3, max_size=8), engine=st.sampled_from(sorted(ENGINES)))
def test_lookup_table_equals_model_after_every_round(rounds, engine):
    with tempfile.TemporaryDirectory() as wh:
        cat = Catalog(wh)
        cat.create_database("db")
        t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "1", "changelog-producer": "lookup", **ENGINES[engine]})
        model: dict[int, dict[str, Any]] = {}
        changes: list[pa.Table] = []
        seen = 0
        for commits, compaction in rounds:
            for rows in commits:
                t.write_arrow(pa.Table.from_pylist([{"k": k, "a": a, "b": b} for k, a, b in rows], schema=SCHEMA))
                for k, a, b in rows:
                    _apply(model, engine, k, a, b)
            if compaction != "none":
                t.compact(full=compaction == "full")
            expected = sorted(model.values(), key=lambda r: r["k"])
            assert t.to_arrow().sort_by("k").to_pylist() == expected
            batches = list(t.to_batches(batch_size=3))
            assert pa.Table.from_batches(batches).sort_by("k").to_pylist() == expected
            latest = t.snapshot_manager.latest_id() or 0
            changes += [t.read_changes(s - 1, s) for s in range(seen + 1, latest + 1)]
            seen = latest
            # every commit compacts its level 0 (lookup): the changelog has caught up
            assert sorted(_replayed(changes).values(), key=lambda r: r["k"]) == expected
