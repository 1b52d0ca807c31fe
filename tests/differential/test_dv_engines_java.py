"""Deletion-vector tables of every merge engine Paimon allows, both ways with Paimon Java 0.9.

Java's lookup compaction of such a table merges each level-0 key with its live row above
(partial-update, aggregation, ``sequence.field``), marks that row deleted and, with
``changelog-producer = lookup``, writes the -U/+U of the old and new value (ops/dv_old_values.py).
Each scenario runs on four tables: Java alone, lake_assets alone, and the two alternating step by
step from either side, so each engine reads, writes and compacts on top of the other's files and
vectors; both read the merged state after every step, the changes of every snapshot
(incremental) and a streaming changelog scan kept open across steps (scenario.py).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import LakeError
from lake_assets.ops.deletion_vectors import snapshot_index
from tests.java.oracle import JavaError, PaimonJava

from .helpers import assert_same_rows
from .scenario import C, Scenario, W, assert_agree
from .test_deletion_vectors_java import _assert_vectors_agree

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.string()),
                    ("g", pa.int64()), ("op", pa.string())])
DV = {"deletion-vectors.enabled": "true", "rowkind.field": "op", "bucket": "2"}
PATTERNS = ("java", "lake", "java-lake", "lake-java")


def _w(*rows: tuple[str, dict]) -> W:
    return W(*({**r, "op": kind} for kind, r in rows))


PARTIAL_UPDATE_STEPS = [
    _w(("+I", {"k": 1, "a": 1, "g": 5, "b": "x"}), ("+I", {"k": 2, "b": "y"}), ("+I", {"k": 3, "a": 3, "g": 1})),
    # a's sequence group: g = 2 is older than 5, so a stays 1; b is updated
    _w(("+I", {"k": 1, "a": 9, "g": 2}), ("+I", {"k": 1, "b": "x2"}), ("+I", {"k": 2, "a": 20, "g": 1})),
    C(full=False),
    _w(("+I", {"k": 1, "a": 7, "g": 6}), ("+I", {"k": 3, "b": "z"}), ("+I", {"k": 4, "a": 4})),
    _w(("+I", {"k": 2, "b": "y2"}), ("+I", {"k": 5, "b": "new"})),
    C(full=False),
    _w(("+I", {"k": 3, "a": 30, "g": 0}), ("+I", {"k": 4, "b": "w"})),
    # whole rows with the newest group sequence: the merge with the rows above changes none of
    # them, and lake_assets relabels the level-0 file it would rewrite (dv_old_values.relabel_candidate)
    _w(*(("+I", {"k": k, "a": 10 * k, "b": f"f{k}", "g": 9}) for k in range(1, 6))),
    C(),
]

AGGREGATION_STEPS = [
    _w(("+I", {"k": 1, "a": 1, "b": "x", "g": 3}), ("+I", {"k": 2, "a": 5, "b": "y"})),
    _w(("+I", {"k": 1, "a": 2}), ("-U", {"k": 2, "a": 5, "b": "ignored"}), ("+U", {"k": 2, "a": 7})),
    C(full=False),
    _w(("+I", {"k": 1, "a": 10, "b": "x2", "g": 1}), ("+I", {"k": 3, "a": 3})),
    _w(("+I", {"k": 2, "b": "y2"}), ("+I", {"k": 3, "a": -1, "g": 8})),
    C(full=False),
    _w(("+I", {"k": 1, "a": 100}),),
    C(),
]
AGGREGATION = {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
               "fields.b.aggregate-function": "last_non_null_value", "fields.b.ignore-retract": "true",
               "fields.g.aggregate-function": "max", "fields.g.ignore-retract": "true"}

SEQUENCE_FIELD_STEPS = [
    _w(("+I", {"k": 1, "a": 1, "g": 5}), ("+I", {"k": 2, "a": 2, "g": 5}), ("+I", {"k": 3, "a": 3, "g": 5})),
    # k=1: an older g loses to the row above; k=2: a newer one wins; k=3: a delete with a newer g
    _w(("+I", {"k": 1, "a": 10, "g": 4}), ("+I", {"k": 2, "a": 20, "g": 6}), ("-D", {"k": 3, "a": 3, "g": 6})),
    C(full=False),
    # k=3 again with an older g than its delete: vector compaction dropped the delete, so it shows
    _w(("+I", {"k": 3, "a": 30, "g": 1}), ("+I", {"k": 1, "a": 11, "g": 5}), ("+I", {"k": 4, "a": 4, "g": 0})),
    C(full=False),
    _w(("-D", {"k": 2, "a": 0, "g": 1}), ("+I", {"k": 4, "a": 40, "g": 9})),
    C(),
]

IGNORE_DELETE_STEPS = [
    _w(("+I", {"k": 1, "a": 1}), ("+I", {"k": 2, "a": 2}), ("+I", {"k": 3, "a": 3})),
    _w(("-D", {"k": 1}), ("+I", {"k": 2, "a": 20}), ("-U", {"k": 3, "a": 3}), ("+U", {"k": 3, "a": 30})),
    C(full=False),
    _w(("-D", {"k": 2}), ("-D", {"k": 9}), ("+I", {"k": 4, "a": 4})),
    C(),
]


@pytest.mark.parametrize(("options", "steps"), [
    pytest.param({"merge-engine": "partial-update", "fields.g.sequence-group": "a"}, PARTIAL_UPDATE_STEPS,
                 id="partial-update-sequence-group"),
    pytest.param(AGGREGATION, AGGREGATION_STEPS, id="aggregation"),
    pytest.param({"sequence.field": "g"}, SEQUENCE_FIELD_STEPS, id="sequence-field"),
    pytest.param({"ignore-delete": "true"}, IGNORE_DELETE_STEPS, id="ignore-delete"),
    pytest.param({"merge-engine": "partial-update", "fields.g.sequence-group": "a", "changelog-producer": "lookup"},
                 PARTIAL_UPDATE_STEPS, id="lookup-partial-update"),
    pytest.param({**AGGREGATION, "changelog-producer": "lookup"}, AGGREGATION_STEPS, id="lookup-aggregation"),
    pytest.param({"sequence.field": "g", "changelog-producer": "lookup"}, SEQUENCE_FIELD_STEPS,
                 id="lookup-sequence-field"),
])
def test_both_ways(java: PaimonJava, wh: str, options: dict[str, str], steps: list) -> None:
    # without a changelog producer Java 0.9 reads no changes of these tables: their states only
    # (so neither engine reads changes or streams there: nothing would compare them)
    changes = "changelog-producer" in options
    sc = Scenario(java, wh, SCHEMA, ["k"], {**DV, **options}, steps, compare_changes=changes,
                  compare_streams=changes)
    observations = sc.run_all(PATTERNS)
    assert_agree(observations, what=("states", "changes", "streams") if changes else ("states",))
    # each engine's compactions wrote vectors (else the scenario tested the plain path only)
    for name in ("db.t_java", "db.t_lake"):
        table = Catalog(wh).get_table(name)
        assert any(snapshot_index(table.store, snap) for snap in table.snapshots()), name


@pytest.mark.parametrize(("options", "reason"), [
    ({"merge-engine": "first-row"}, "First row merge engine does not need deletion vectors"),
    ({"changelog-producer": "full-compaction"}, "only supported for NONE/INPUT/LOOKUP changelog producer"),
])
def test_refuses_what_java_refuses(java: PaimonJava, wh: str, lake: Catalog, options: dict[str, str],
                                   reason: str) -> None:
    with pytest.raises(JavaError, match=reason):
        java.create_table(wh, "db.j", SCHEMA, primary_keys=["k"], options={**DV, **options})
    with pytest.raises(LakeError, match=reason):
        lake.create_table("db.l", SCHEMA, primary_keys=["k"], options={**DV, **options})


@pytest.mark.parametrize("options", [
    pytest.param({"merge-engine": "partial-update", "fields.g.sequence-group": "a"}, id="partial-update"),
    # no sequence group and no retraction: our compactions merge each key's old row and its record
    # column by column (lsm/merge_engine/pair_merge.py), as the aggregation table's do
    pytest.param({"merge-engine": "partial-update"}, id="partial-update-plain"),
    pytest.param(AGGREGATION, id="aggregation"),
])
def test_random_turns_mark_the_rows_java_marks(java: PaimonJava, wh: str, lake: Catalog,
                                               options: dict[str, str]) -> None:
    """Writes, write-only writes and dedicated compactions of both engines in random order on one
    table: after every step both read the same rows, and our vectors mark exactly the positions
    Java reads from them (the old row of each merged key, found at the same level)."""
    import random

    rng = random.Random(15)
    marked = 0
    lake.create_table("db.ours", SCHEMA, primary_keys=["k"], options={**DV, **options})
    for step in range(12):
        keys = sorted(rng.sample(range(60), rng.randint(3, 25)))
        data = pa.table({"k": keys, "a": [rng.choice([None, step, -step]) for _ in keys],
                         "b": [rng.choice([None, f"s{step}"]) for _ in keys],
                         "g": [rng.randint(0, 9) for _ in keys], "op": ["+I"] * len(keys)}, schema=SCHEMA)
        who = rng.choice(["ours", "ours-write-only", "java", "java-write-only", "ours-compact", "java-compact"])
        if who == "ours":
            lake.get_table("db.ours").write_arrow(data)
        elif who == "ours-write-only":
            writer = lake.get_table("db.ours").new_writer(f"w{step}", write_only=True)
            writer.write_arrow(data)
            lake.get_table("db.ours").new_committer(f"w{step}").commit(writer.prepare_commit(), 1)
        elif who == "java-compact":
            java.compact(wh, "db.ours", full=rng.random() < 0.3)
        elif who.startswith("java"):
            java.write(wh, "db.ours", data, options={"write-only": "true"} if who == "java-write-only" else None)
        else:
            lake.get_table("db.ours").compact(full=rng.random() < 0.3)
        table = lake.get_table("db.ours")
        assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))
        marked = max(marked, _assert_vectors_agree(java, wh, table))
    assert marked, "no step left vectors: the turns tested no marks"
    table.compact()
    assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))
