"""Partial-update sequence groups: a -D of a group without lookup, against Paimon Java 0.9.

Found in session 15 (left out of test_lookup_merge_java.py) and investigated here against HEAD's
``PartialUpdateMergeFunction``. Where a key's merged records hold an insert, or a single retraction
is stored as written, Java 0.9 and lake_assets agree on every read path and writer pattern (the
scenario). They part where a merge sees only retractions of a key: Java 0.9 started the row empty
and set only the retracted group's fields, so the NOT NULL key column stayed null and its writer
put a broken Parquet page into the level-0 file (Java 0.9 then fails reading its own table:
``ParquetDecodingException``). Paimon 1.1 fixed it (#5077, ``initRow`` and ``meetInsert``): the row
starts from the retraction's image and the result is -D when no insert was seen - which lake_assets
does, so Java 0.9 reads our table (the key is gone) while it cannot read the table it wrote.
0.9 predates the 1.x behaviour; we follow 1.x.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import JavaError, PaimonJava

from .helpers import write_both
from .scenario import C, Scenario, W, assert_agree

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("a", pa.int64()), ("g", pa.int64()),
                    ("b", pa.string()), ("op", pa.string())])
OPTIONS = {"bucket": "1", "merge-engine": "partial-update", "rowkind.field": "op", "fields.g.sequence-group": "a"}


def _w(*rows: tuple[str, dict]) -> W:
    return W(*({**r, "op": kind} for kind, r in rows))


# k1: a newer -D nulls the group (b stays); k2: an older -D changes nothing; k3: -D then a newer
# insert in one commit; k4: a -D of a key never written; k5: -D then an insert leaving the group
# alone; later a -D of k2 with its current sequence (>=: it retracts), compactions in between
STEPS = [
    _w(("+I", {"k": 1, "a": 1, "g": 5, "b": "x"}), ("+I", {"k": 2, "a": 2, "g": 5, "b": "y"}),
       ("+I", {"k": 3, "a": 3, "g": 5, "b": "z"})),
    _w(("-D", {"k": 1, "a": 1, "g": 6}), ("-D", {"k": 2, "a": 2, "g": 4}), ("-D", {"k": 4, "a": 4, "g": 1, "b": "w"}),
       ("-D", {"k": 3, "a": 3, "g": 6}), ("+I", {"k": 3, "a": 30, "g": 7})),
    C(full=False),
    _w(("-D", {"k": 5, "a": 5, "g": 1}), ("+I", {"k": 5, "b": "v"})),
    C(),
    _w(("-D", {"k": 2, "a": 2, "g": 5}), ("+I", {"k": 1, "a": 10, "g": 8})),
    C(),
]


def test_a_group_retraction_agrees_with_java_0_9(java: PaimonJava, wh: str) -> None:
    obs = Scenario(java, wh, SCHEMA, ["k"], OPTIONS, STEPS).run_all()
    assert_agree(obs)
    # not vacuous: k1 retracted then re-set, k2's group retracted, k4 never visible
    assert obs["java"].states["java"][-1] == [(1, 10, 8, "x", "+I"), (2, None, 5, "y", "+I"),
                                              (3, 30, 7, "z", "+I"), (5, None, 1, "v", "+I")]


RETRACTS_ONLY = [{"k": 6, "a": 6, "g": 1, "b": "s", "op": "-D"}, {"k": 6, "a": 7, "g": 2, "op": "-D"},
                 {"k": 7, "a": 7, "g": 1, "b": "t", "op": "-U"}, {"k": 7, "a": 7, "g": 0, "op": "-D"},
                 {"k": 8, "a": 8, "g": 1, "b": "u", "op": "+I"}]


@pytest.mark.parametrize("writer", ["java", "lake"])
def test_only_retractions_of_a_key_in_one_merge(java: PaimonJava, wh: str, writer: str) -> None:
    """Two retractions of a key in one commit (merged when the writer flushes): Java 0.9 writes a
    file it cannot read back (the row's NOT NULL key left null); lake_assets writes the -D Paimon
    1.1+ writes, which Java 0.9 reads as the key deleted."""
    data = pa.Table.from_pylist(RETRACTS_ONLY, schema=SCHEMA)
    if writer == "java":
        java.create_table(wh, "db.t", SCHEMA, ["k"], [], OPTIONS)
        java.write(wh, "db.t", data, kinds=data.column("op").to_pylist())
        with pytest.raises(JavaError, match="ParquetDecodingException"):
            java.read(wh, "db.t")
        return
    catalog = Catalog(wh)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={**OPTIONS, "write-only": "true"})
    table.write_arrow(data)
    expected = [{"k": 8, "a": 8, "g": 1, "b": "u", "op": "+I"}]
    assert java.read(wh, "db.t").to_pylist() == expected
    assert table.to_arrow().to_pylist() == expected
    # the stored rows: one -D per key, carrying the key
    stored = sorted(table.read_changes(0, source="delta").to_pylist(), key=lambda r: r["k"])
    assert [(r["k"], r["_row_kind"]) for r in stored] == [(6, "-D"), (7, "-D"), (8, "+I")]


LEADING_IMAGE = [{"k": 9, "a": 9, "g": 1, "b": "img", "op": "-D"}, {"k": 9, "op": "+I"},
                 {"k": 10, "a": 1, "g": 1, "b": "old", "op": "+I"}]


def test_a_leading_retractions_image_java_0_9_predates(java: PaimonJava, wh: str) -> None:
    """One commit starting k9 with a -D whose ungrouped ``b`` is set, then an insert: Paimon
    1.4.1+/2.0 start the flush's row from the -D's whole image (#7645, a bug fix with no option:
    we follow it), so ``b`` = "img"; Java 0.9 started it empty, so ``b`` is null. Each engine reads
    the other's table as written (the flushed level-0 rows differ, not the reading)."""
    data = pa.Table.from_pylist(LEADING_IMAGE, schema=SCHEMA)
    theirs, ours = write_both(java, wh, SCHEMA, OPTIONS, data)
    k10 = {"k": 10, "a": 1, "g": 1, "b": "old", "op": "+I"}
    java_0_9 = [{"k": 9, "a": None, "g": 1, "b": None, "op": "+I"}, k10]
    paimon_1_4_1 = [{"k": 9, "a": None, "g": 1, "b": "img", "op": "+I"}, k10]
    assert java.read(theirs, "db.t").to_pylist() == java_0_9
    assert Catalog(theirs).get_table("db.t").to_arrow().to_pylist() == java_0_9
    assert Catalog(ours).get_table("db.t").to_arrow().to_pylist() == paimon_1_4_1
    assert java.read(ours, "db.t").to_pylist() == paimon_1_4_1
