"""Sequence numbers of an unrouted Spark write: a task numbers each bucket's rows ``base + slot``,
``base + slot + 65536``, ... (`spark/task_sequences.py`), so a single task's rows lie 65,536 apart.

What that means for Paimon readers, pinned against Java 0.9 both ways: numbers only order (a key's
versions by their number, a fixed-bucket append bucket's files by their first number); nothing
needs them dense, and every writer numbers from the bucket's highest number + 1, so a gap is never
filled by a later write. A primary-key table: Java reads the versions the numbers order (the later
row of a task wins), a later write by Java is numbered above the gap and wins, and Java's full
compaction keeps each row's number. A fixed-bucket append table: Java's compaction numbers its
output one per row from its first input's number (the gap closes), and the bucket reads in write
order before and after. The rows (the write order within a task) are the same for every stride,
1 or 65,536; only the numbers differ.
"""

from __future__ import annotations

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.spark.task_sequences import TASK_SLOTS
from tests.java.oracle import PaimonJava

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def _rows(ids: list[int], tag: str) -> pa.Table:
    return pa.table({"id": ids, "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


def _strided_write(table: object, data: pa.Table) -> None:
    """What one Spark task of unrouted input does (slot 0, the only task): `write_task.py`."""
    w = table.new_writer("spark-task", write_only=True)  # type: ignore[attr-defined]
    w.interleave_sequences(0, TASK_SLOTS)
    w.write_arrow(data)
    table.new_committer("spark-task").commit(w.prepare_commit(), 1)  # type: ignore[attr-defined]
    w.close()


def _java_ranges(java: PaimonJava, wh: str) -> list[tuple[int, int, int]]:
    return [(f["min_sequence_number"], f["max_sequence_number"], f["row_count"])
            for split in java.splits(wh, "db.t") for f in split["files"]]


def _by_id(table: pa.Table) -> dict[int, str]:
    return dict(zip(table.column("id").to_pylist(), table.column("v").to_pylist(), strict=True))


def test_primary_key_table_with_strided_numbers_java_09_both_ways(java: PaimonJava, wh: str, lake: Catalog) -> None:
    t = lake.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(_rows([0, 1], "first-"))  # numbers 0 and 1: the base of the strided write is 2
    # one task, keys 0-5 then 3-7 again: the later version of 3, 4, 5 wins within the task
    _strided_write(t, pa.concat_tables([_rows(list(range(6)), "a"), _rows(list(range(3, 8)), "b")]))
    strided = [(f.min_sequence_number, f.max_sequence_number, f.row_count) for s in t.refresh().plan()
               for f in s.files if f.row_count == 8]
    # the writer's merge keeps one row per key (8 of 11), numbered as written: 65,536 apart
    assert strided == [(2, 2 + 10 * TASK_SLOTS, 8)]
    expected = {**_by_id(_rows(list(range(6)), "a")), **_by_id(_rows(list(range(3, 8)), "b"))}
    assert _by_id(java.read(wh, "db.t")) == _by_id(t.refresh().to_arrow()) == expected
    # Java numbers its write above the gap, and its versions win for both readers
    java.write(wh, "db.t", _rows([4, 6, 9], "java-"))
    top = max(hi for _, hi, _ in _java_ranges(java, wh))
    assert top == 2 + 10 * TASK_SLOTS + 3
    expected.update(_by_id(_rows([4, 6, 9], "java-")))
    assert _by_id(java.read(wh, "db.t")) == _by_id(t.refresh().to_arrow()) == expected
    # Java's full compaction keeps each row's number (the highest stays), and we write above it
    java.compact(wh, "db.t", full=True)
    assert max(hi for _, hi, _ in _java_ranges(java, wh)) == top
    t.refresh().write_arrow(_rows([9], "ours-"))
    expected[9] = "ours-9"
    assert _by_id(java.read(wh, "db.t")) == _by_id(t.refresh().to_arrow()) == expected


def test_fixed_bucket_append_table_with_strided_numbers_java_09_both_ways(java: PaimonJava, wh: str,
                                                                         lake: Catalog) -> None:
    t = lake.create_table("db.t", SCHEMA, options={"bucket": "1", "bucket-key": "id", "write-only": "true"})
    t.write_arrow(_rows([0, 1, 2], "x"))
    _strided_write(t, _rows([10, 11, 12, 13], "x"))
    java.write(wh, "db.t", _rows([20, 21], "x"))
    order = [0, 1, 2, 10, 11, 12, 13, 20, 21]
    top = 3 + 3 * TASK_SLOTS  # the strided file's last number; Java's write goes on from there
    assert _java_ranges(java, wh) == [(0, 2, 3), (3, top, 4), (top + 1, top + 2, 2)]
    assert java.read(wh, "db.t").column("id").to_pylist() == t.refresh().to_arrow().column("id").to_pylist() == order
    # Java's full compaction numbers its output one per row from 0: the gap closes, the order stays
    java.compact(wh, "db.t", full=True, options={"write-only": "false"})
    assert _java_ranges(java, wh) == [(0, 8, 9)]
    t.refresh().write_arrow(_rows([30], "x"))  # numbered from the bucket's highest + 1 = 9
    assert [(f.min_sequence_number, f.row_count) for s in t.refresh().plan() for f in s.files] == [(0, 9), (9, 1)]
    assert java.read(wh, "db.t").column("id").to_pylist() == t.refresh().to_arrow().column("id").to_pylist() \
        == [*order, 30]
