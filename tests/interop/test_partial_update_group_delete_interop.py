"""``partial-update.remove-record-on-sequence-group`` both ways with pypaimon-rust 0.4.

Java 0.9 predates the option (Paimon 1.0+); pypaimon-rust 0.4 implements it as Paimon HEAD's
``PartialUpdateMergeFunction`` does (a -D of a named group makes the row the -D's image, later
records merge on top of it). Random commits of inserts, updates and deletes over a few keys, three
sequence groups (two named, one with ``sum``), written once by pypaimon-rust (its writer merges
each commit's records at flush) and once by us (we merge at flush and compact at each commit):
both engines read both tables alike, and our full compaction of its table changes nothing it reads.

A key's first record in a commit (so in its flush's merge) may be any retraction: Paimon 1.4.1+
and 2.0 start the row from that retraction's whole image (``initRow``), then retract its groups
from it; pypaimon-rust 0.4 and we both follow it (docs/format.md §10.1).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa

from lake_assets import Catalog

from .paimon import PypaimonRust

SCHEMA = pa.schema([
    pa.field("k", pa.int32(), nullable=False), ("a", pa.string()), ("b", pa.int64()), ("g1", pa.int32()),
    ("c", pa.string()), ("g2", pa.int32()), ("d", pa.string()), ("g3", pa.int32()), ("free", pa.string()),
    ("op", pa.string()),
])
OPTIONS = {
    "bucket": "1", "merge-engine": "partial-update", "rowkind.field": "op",
    "fields.g1.sequence-group": "a,b", "fields.b.aggregate-function": "sum",
    "fields.g2.sequence-group": "c", "fields.g3.sequence-group": "d",
    "partial-update.remove-record-on-sequence-group": "g1,g2",
}
CREATE = ("CREATE TABLE paimon.db.t (k INT NOT NULL, a STRING, b BIGINT, g1 INT, c STRING, g2 INT, d STRING, "
          "g3 INT, free STRING, op STRING, PRIMARY KEY (k)) WITH ("
          + ", ".join(f"'{k}' = '{v}'" for k, v in OPTIONS.items()) + ")")


def _commits(seed: int, n_commits: int = 4, n_rows: int = 40, n_keys: int = 8) -> list[pa.Table]:
    rng = random.Random(seed)

    def maybe(value: Any) -> Any:
        return rng.choice([None, value])

    out = []
    for _ in range(n_commits):
        rows = []
        for _ in range(n_rows):
            rows.append({"k": rng.randrange(n_keys), "a": maybe(f"a{rng.randrange(9)}"),
                         "b": maybe(rng.randrange(5)), "g1": maybe(rng.randrange(6)),
                         "c": maybe(f"c{rng.randrange(9)}"), "g2": maybe(rng.randrange(6)),
                         "d": maybe("d"), "g3": maybe(rng.randrange(6)), "free": maybe(f"f{rng.randrange(9)}"),
                         "op": rng.choice(["+I", "+I", "+I", "+U", "-U", "-D", "-D"])})
        rows.sort(key=lambda r: r["k"])  # stable: each key's records keep their order
        out.append(pa.Table.from_pylist(rows, schema=SCHEMA))
    return out


def _rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["k"])


def test_both_ways_with_pypaimon_rust(rust: PypaimonRust, tmp_path: Path) -> None:
    commits = _commits(seed=8)
    theirs, ours = str(tmp_path / "rust"), str(tmp_path / "lake")
    rust.sql(theirs, "CREATE SCHEMA paimon.db", CREATE)
    for data in commits:
        rust.write_batch(theirs, "db.t", data)
    catalog = Catalog(ours)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options=OPTIONS)
    for data in commits:
        table.write_arrow(data)

    expected = _rows(rust.read_rows(theirs, "db.t"))
    # the data must exercise the option: some keys removed, some retracted without removal
    deletes = pa.concat_tables(commits).filter(pa.compute.equal(pa.concat_tables(commits)["op"], "-D"))
    assert deletes.num_rows > 10 and 0 < len(expected) < 8
    assert _rows(Catalog(theirs).get_table("db.t").to_arrow().to_pylist()) == expected
    assert _rows(table.to_arrow().to_pylist()) == expected
    assert _rows(rust.read_rows(ours, "db.t")) == expected
    Catalog(theirs).get_table("db.t").compact(full=True)
    assert _rows(rust.read_rows(theirs, "db.t")) == expected


PLAIN = pa.schema([pa.field("k", pa.int32(), nullable=False), ("a", pa.string()), ("b", pa.int32()),
                   ("op", pa.string())])


def test_remove_record_on_delete_keeps_the_delete_image(rust: PypaimonRust, tmp_path: Path) -> None:
    """``partial-update.remove-record-on-delete``: the row after a -D is the -D's image and later
    inserts overwrite its non-null fields (Paimon 2.0's ``initRow``; 1.0 started an empty row),
    within one commit and across commits, both ways with pypaimon-rust 0.4. A -U after a -D flips
    the row back to +I when an insert came before it in the same merge (k4; Paimon 1.1+ resets
    the delete flag on every record and gives -D only when no insert was seen, k3; k4 is a +I row
    whose rowkind.field column keeps the -D image's value), and a key
    whose first record is a -U starts from that -U's whole image (k5, k6: Paimon 1.4.1+ and 2.0)."""
    options = {"bucket": "1", "merge-engine": "partial-update", "rowkind.field": "op",
               "partial-update.remove-record-on-delete": "true"}
    commits = [
        pa.Table.from_pylist([{"k": 1, "a": "x", "b": 1, "op": "+I"}, {"k": 2, "a": "y", "b": 1, "op": "+I"},
                              {"k": 3, "a": "z", "b": 1, "op": "+I"}], schema=PLAIN),
        pa.Table.from_pylist([{"k": 1, "a": "x", "b": None, "op": "-D"}, {"k": 1, "a": None, "b": 2, "op": "+I"},
                              {"k": 2, "a": "y", "b": 5, "op": "-D"}, {"k": 3, "a": None, "b": 9, "op": "-D"},
                              {"k": 3, "a": "u", "b": 3, "op": "-U"},
                              {"k": 4, "a": "w", "b": 1, "op": "+I"}, {"k": 4, "a": "w2", "b": None, "op": "-D"},
                              {"k": 4, "a": None, "b": 8, "op": "-U"},
                              {"k": 5, "a": "v", "b": 4, "op": "-U"}, {"k": 5, "a": None, "b": 6, "op": "+I"},
                              {"k": 6, "a": "s", "b": 1, "op": "-U"}], schema=PLAIN),
        pa.Table.from_pylist([{"k": 2, "a": None, "b": 7, "op": "+I"}, {"k": 6, "a": None, "b": 2, "op": "+I"}],
                             schema=PLAIN),
    ]
    expected = [{"k": 1, "a": "x", "b": 2, "op": "+I"}, {"k": 2, "a": "y", "b": 7, "op": "+I"},
                {"k": 4, "a": "w2", "b": None, "op": "-D"}, {"k": 5, "a": "v", "b": 6, "op": "+I"},
                {"k": 6, "a": "s", "b": 2, "op": "+I"}]
    theirs, ours = str(tmp_path / "rust"), str(tmp_path / "lake")
    rust.sql(theirs, "CREATE SCHEMA paimon.db",
             "CREATE TABLE paimon.db.t (k INT NOT NULL, a STRING, b INT, op STRING, PRIMARY KEY (k)) WITH ("
             + ", ".join(f"'{k}' = '{v}'" for k, v in options.items()) + ")")
    catalog = Catalog(ours)
    catalog.create_database("db")
    table = catalog.create_table("db.t", PLAIN, primary_keys=["k"], options={**options, "write-only": "true"})
    for data in commits:
        rust.write_batch(theirs, "db.t", data)
        table.write_arrow(data)
    assert _rows(rust.read_rows(theirs, "db.t")) == expected
    assert _rows(Catalog(theirs).get_table("db.t").to_arrow().to_pylist()) == expected
    assert _rows(table.to_arrow().to_pylist()) == expected
    assert _rows(rust.read_rows(ours, "db.t")) == expected
    table.compact(full=True)  # merges every key's records at once (k3..k6 meet their inserts)
    assert _rows(table.to_arrow().to_pylist()) == expected
    assert _rows(rust.read_rows(ours, "db.t")) == expected
