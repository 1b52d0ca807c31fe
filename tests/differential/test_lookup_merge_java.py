"""Lookup tables (``changelog-producer = lookup``, default ``num-levels``) both ways with Paimon Java 0.9.

Paimon's lookup compaction writes a key's merged row (its level-0 records merged with its row
looked up above the output level) to a level above its older rows, which stay; reads and
compactions then take a key's level-0 records plus only its newest row above level 0
(``LookupMergeFunction``; lsm/lookup_merge.py). Several compactions per scenario (each commit of
Java's writer and of lake_assets' compacts level 0 up, dedicated compactions in between, a full one
at the end) leave keys in several levels. Each scenario runs on four tables: Java alone,
lake_assets alone and the two alternating from either side; both engines read the merged state,
each snapshot's changes (the lookup changelog) and a streaming scan after every step, and every
retained snapshot by time travel (scenario.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .scenario import C, Scenario, W, assert_agree

PATTERNS = ("java", "lake", "java-lake", "lake-java")
LOOKUP = {"changelog-producer": "lookup", "rowkind.field": "op", "bucket": "1"}
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.int64()), ("b", pa.string()),
                    ("g", pa.int64()), ("op", pa.string())])


def _w(*rows: tuple[str, dict]) -> W:
    return W(*({**r, "op": kind} for kind, r in rows))


def _ins(*rows: dict) -> W:
    return _w(*(("+I", r) for r in rows))


# Three commits of [1, 2], [1, 2], [2] (the reported case: Java reads 5 for key 2, not 9), then
# dedicated compactions that leave keys in levels 1..5, retractions and a full compaction.
AGG_STEPS: list = [
    _ins({"k": 1, "a": 1, "b": "x"}, {"k": 2, "a": 1, "b": "p"}),
    _ins({"k": 1, "a": 1, "b": "y"}, {"k": 2, "a": 1, "b": "q"}),
    _ins({"k": 2, "a": 3, "b": "r"}),
    C(full=False),
    _ins({"k": 3, "a": 7, "b": "z"}, {"k": 2, "a": 10}),
    C(full=False),
    _w(("-U", {"k": 2, "a": 1}), ("+I", {"k": 1, "a": 100, "b": "w"})),
    _ins({"k": 4, "a": 1}),
    C(),
    _ins({"k": 1, "a": 5, "b": "v"}, {"k": 3, "a": 1}),
]


def _run(options: dict[str, str], steps: Sequence, java: PaimonJava, wh: str,
         patterns: Sequence[str] = PATTERNS) -> dict:
    sc = Scenario(java, wh, SCHEMA, ["k"], {**LOOKUP, **options}, steps)
    obs = sc.run_all(patterns)
    assert_agree(obs)
    return obs


def _final(wh: str, name: str = "db.t_lake") -> list[tuple]:
    rows = Catalog(wh).get_table(name).to_arrow().sort_by("k").to_pylist()
    return [(r["k"], r["a"], r["b"]) for r in rows]


def test_aggregation_sum_and_listagg(java: PaimonJava, wh: str) -> None:
    """sum and listagg (neither idempotent: a row merged twice shows) agree with Java's reads of
    its own lookup table in every read path, whoever wrote and compacted."""
    _run({"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
          "fields.b.aggregate-function": "listagg", "fields.b.ignore-retract": "true"}, AGG_STEPS, java, wh)
    # not vacuous: the hand-computed final state (key 2: 1 + 1 + 3 + 10 - 1)
    assert _final(wh) == [(1, 107, "x,y,w,v"), (2, 14, "p,q,r"), (3, 8, "z"), (4, 1, None)]


def _levels_used(wh: str, name: str) -> int:
    """The most levels above 0 holding files in one snapshot of ``name`` (keys in several levels)."""
    t = Catalog(wh).get_table(name)
    scan = t.store.file_store_scan()
    return max(len({e.file.level for e in scan.live_entries(s) if e.file.level > 0}) for s in t.snapshots())


PARTIAL_STEPS: list = [
    _ins({"k": 1, "a": 1, "g": 5, "b": "x"}, {"k": 2, "b": "y"}, {"k": 3, "a": 3, "g": 1}),
    # a's sequence group: g = 2 is older than 5, so a stays 1; b is updated
    _ins({"k": 1, "a": 9, "g": 2}, {"k": 1, "b": "x2"}, {"k": 2, "a": 20, "g": 1}),
    C(full=False),
    _ins({"k": 1, "a": 7, "g": 6}, {"k": 3, "b": "z"}, {"k": 4, "a": 4}),
    C(full=False),
    _ins({"k": 2, "b": "y2"}, {"k": 5, "b": "new"}),
    # (a -D of a sequence group is left out: a merge of a key's retractions alone - the lookup
    # wrapper merges a key's only record too - makes Java 0.9 write a file it cannot read, fixed
    # in Paimon 1.1; test_partial_update_group_retract_java.py)
    _ins({"k": 3, "a": 31, "g": 2}, {"k": 1, "b": "x3"}),
    C(full=False),
    _ins({"k": 3, "a": 30, "g": 0}, {"k": 4, "b": "w"}),
    C(),
    _ins({"k": 2, "a": 21, "g": 3}),
]


def test_partial_update_sequence_group(java: PaimonJava, wh: str) -> None:
    """Partial-update with a sequence group: no old value of a key comes back from a deeper level."""
    _run({"merge-engine": "partial-update", "fields.g.sequence-group": "a"}, PARTIAL_STEPS, java, wh)
    assert _levels_used(wh, "db.t_java") >= 2
    # k=3: a = 30 with g = 0 is older than g = 2's 31; k=4: a without its g is never taken
    assert _final(wh) == [(1, 7, "x3"), (2, 21, "y2"), (3, 31, "z"), (4, None, "w"), (5, None, "new")]


DEDUP_STEPS: list = [
    _ins({"k": 1, "a": 1, "g": 5}, {"k": 2, "a": 2, "g": 5}, {"k": 3, "a": 3, "g": 5}),
    _ins({"k": 1, "a": 10, "g": 4}, {"k": 2, "a": 20, "g": 6}),
    C(full=False),
    _w(("-D", {"k": 3, "a": 3, "g": 6}), ("+I", {"k": 4, "a": 4, "g": 0})),
    C(full=False),
    _ins({"k": 3, "a": 30, "g": 1}, {"k": 1, "a": 11, "g": 5}),
    _ins({"k": 4, "a": 40, "g": 9}, {"k": 2, "a": 0, "g": 1}),
    C(),
]


def test_deduplicate_with_and_without_sequence_field(java: PaimonJava, wh: str) -> None:
    """Deduplicate, with ``sequence.field`` (an older g loses to the row above) and without."""
    _run({"sequence.field": "g"}, DEDUP_STEPS, java, wh)
    # k=3: the re-insert's g = 1 is older than its delete's 6, so the delete stays
    assert _final(wh) == [(1, 11, None), (2, 20, None), (4, 40, None)]


def test_deduplicate_and_first_row(java: PaimonJava, wh: str) -> None:
    """Plain deduplicate and first-row (which Java does not wrap) read and compact as Java (their
    merges take no level pick: three writer patterns suffice)."""
    _run({}, DEDUP_STEPS, java, wh + "/dedup", PATTERNS[:3])
    assert _final(wh + "/dedup") == [(1, 11, None), (2, 0, None), (3, 30, None), (4, 40, None)]
    first_row = [s for s in DEDUP_STEPS if not (isinstance(s, W) and any(r["op"] == "-D" for r in s.rows))]
    _run({"merge-engine": "first-row"}, first_row, java, wh + "/first", PATTERNS[:3])
    assert _final(wh + "/first") == [(1, 1, None), (2, 2, None), (3, 3, None), (4, 40, None)]


def test_sequence_field_pick_follows_paimon_1x_not_0_9(java: PaimonJava, wh: str) -> None:
    """Java 0.9 predates the 1.x pick here (a documented disagreement). With ``sequence.field`` on
    an aggregation, k=1's merged row (a = 1 + 10) lands one level above its old row (a = 1, the
    newer g); 0.9's LookupMergeFunction keeps the LAST row above level 0 in merge order (by g, then
    sequence number), the old one, so Java 0.9 reads 1 of its own table. Paimon 1.2+ keeps the
    lowest level's row (#5632, "keep lowest high-level kv for lookup compaction"), as lake_assets
    does: 11. k=2, whose new g is the newer, reads 22 either way."""
    name = "db.t"
    options = {**LOOKUP, "merge-engine": "aggregation", "fields.a.aggregate-function": "sum", "sequence.field": "g"}
    java.create_table(wh, name, SCHEMA, ["k"], [], options)
    for ident, rows in enumerate([[(1, 1, 5), (2, 2, 5)], [(1, 10, 4), (2, 20, 6)]], start=1):
        with java.open_writer(wh, name, commit_user="java-writer") as writer:
            writer.write([{"k": k, "a": a, "g": g, "op": "+I"} for k, a, g in rows], schema=SCHEMA)
            writer.commit(ident, wait_compaction=True)
    java.compact(wh, name, [], 0, full=False, options={"write-only": "false"})
    table = Catalog(wh).get_table(name)
    assert sorted(f.level for sp in table.plan() for f in sp.files) == [4, 5]
    java_rows = sorted((r["k"], r["a"]) for r in java.read(wh, name).to_pylist())
    assert java_rows == [(1, 1), (2, 22)]  # 0.9: k=1's old row (level 5) wins
    assert sorted(table.to_arrow().select(["k", "a"]).to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "a": 11}, {"k": 2, "a": 22}]  # 1.2+: the lowest level's merged row
