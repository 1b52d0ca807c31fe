"""Random rounds of upserts and deletes on a deletion-vector table of each merge engine read the same
as the same rounds on the table without vectors, after every compaction.

A deletion-vector compaction merges each key's old row in and marks it deleted (ops/dv_old_values.py);
the table without vectors merges every level at read time. Both are lake_assets'; Java 0.9 checks the
vector side in tests/differential/test_dv_engines_java.py.
"""

from __future__ import annotations

import tempfile

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("a", pa.int64()), ("b", pa.string()),
                    ("g", pa.int64()), ("op", pa.string())])

# engine -> (options, row kinds its rounds write)
ENGINES: dict[str, tuple[dict[str, str], tuple[str, ...]]] = {
    "partial-update-seq-group-ignore-delete": (
        {"merge-engine": "partial-update", "fields.g.sequence-group": "a", "ignore-delete": "true"},
        ("+I", "+U", "-D")),
    "partial-update-remove-on-delete": (
        {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"}, ("+I", "-D")),
    "aggregation": (
        {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
         "fields.b.aggregate-function": "last_non_null_value", "fields.g.aggregate-function": "max"},
        ("+I", "+U")),
    # no deletes: a vector compaction drops a delete at once (Paimon's DV mode drops deletes at
    # every level), so an older-sequenced row arriving later is visible with vectors and hidden by
    # the retained delete without them - as in Java (pinned in tests/differential/test_dv_engines_java.py)
    "sequence-field": ({"sequence.field": "g"}, ("+I", "+U")),
    "ignore-delete": ({"ignore-delete": "true"}, ("+I", "-D")),
    "lookup-changelog-aggregation": (
        {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum", "changelog-producer": "lookup"},
        ("+I", "+U")),
}

VALUE = st.integers(-50, 50) | st.none()
# g is never null: a lone record with a null sequence group keeps its group's values in a plain
# table (Paimon's reducer emits it as it is) and loses them in a vector compaction (its lookup
# merge applies the function), in Java as here (tests/differential/test_dv_engines_java.py)
ROW = st.tuples(st.integers(0, 11), st.sampled_from(["p1", "p2"]), VALUE, st.sampled_from(["x", "y", None]),
                st.integers(0, 6))
ROUND = st.tuples(st.lists(st.tuples(st.integers(0, 2), ROW), min_size=1, max_size=10),
                  st.sampled_from(["none", "compact", "full"]))


def _table(cat: Catalog, name: str, options: dict[str, str]):
    return cat.create_table(f"db.{name}", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                            options={"bucket": "2", "rowkind.field": "op", **options})


def _sorted(t: pa.Table) -> list[dict]:
    return sorted(t.drop_columns(["op"]).to_pylist(), key=lambda r: (r["k"], r["p"]))


@pytest.mark.parametrize("engine", list(ENGINES))
def test_vectors_read_like_the_table_without_them(engine: str) -> None:
    options, kinds = ENGINES[engine]

    # no shrinking: each example writes, compacts and reads two tables, so shrinking a failure
    # took over five minutes (and stopped unfinished); the failing example is printed as found
    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow],
              phases=[Phase.explicit, Phase.reuse, Phase.generate])
    @given(rounds=st.lists(ROUND, min_size=1, max_size=5))
    def check(rounds) -> None:
        with tempfile.TemporaryDirectory() as wh:
            cat = Catalog(wh)
            cat.create_database("db")
            plain = _table(cat, "plain", options)
            dv = _table(cat, "dv", {**options, "deletion-vectors.enabled": "true"})
            for i, (ops, compaction) in enumerate(rounds):
                row_kinds = [kinds[kind % len(kinds)] for kind, _ in ops]
                # remove-record-on-delete starts a key's next row from the -D's image (Paimon 1.x+), which
                # only a table without vectors keeps: a vector compaction drops deletes at every level, as
                # Java's does (dropDelete with a deletion-vector maintainer). So -D rows carry no values here:
                # both tables then restart the key from an empty row.
                blank = [engine == "partial-update-remove-on-delete" and k == "-D" for k in row_kinds]
                data = pa.table({
                    "k": [r[0] for _, r in ops], "p": [r[1] for _, r in ops],
                    "a": [None if x else r[2] for x, (_, r) in zip(blank, ops, strict=True)],
                    "b": [None if x else r[3] for x, (_, r) in zip(blank, ops, strict=True)],
                    "g": [None if x else r[4] for x, (_, r) in zip(blank, ops, strict=True)],
                    "op": row_kinds}, schema=SCHEMA)
                for t in (plain, dv):
                    writer = t.new_writer("prop")
                    writer.write_arrow(data)
                    t.new_committer("prop").commit(writer.prepare_commit(), i + 1)
                if compaction == "none":
                    continue
                dv.compact(full=compaction == "full")
                assert _sorted(dv.to_arrow()) == _sorted(plain.to_arrow()), f"round {i} ({compaction})"
            dv.compact(full=True)
            assert _sorted(dv.to_arrow()) == _sorted(plain.to_arrow())

    check()
