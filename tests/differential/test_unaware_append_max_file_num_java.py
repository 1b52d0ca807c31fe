"""``compaction.max.file-num`` on an unaware-bucket append table (``bucket = -1``), against Paimon
Java 0.9's ``UnawareAppendTableCompactionCoordinator`` (the oracle's ``append_compact``: Spark's
compact procedure, one coordinator run).

Java 0.9 sorts a partition's small files by size and closes a bin once it reaches
``target-file-size`` in ``compaction.min.file-num`` files or holds ``compaction.max.file-num``
files (default 50); a bin that is not ready waits. lake_assets takes the files in sequence order
and closes a group at the same count (`compact_strategy.pick_append_small_files`). With files that
grow in write order both orders agree: the same groups (Java 0.9's unaware writers number every
file from 0, so its files' sequence order is their row counts'). Documented, safe differences,
pinned here: files in another size order are grouped by adjacency (ours) rather than by size
(Java), the same number of groups of the same sizes; and without the option, ours compacts a run of at least
``compaction.min.file-num`` small files as one group (Paimon 1.1+, whose coordinator dropped the
option), where Java 0.9 waits for 50 files.

Each pick is made on its own copy of one table (Java's compaction on a copy, ours on the original),
and each engine then reads the other's compacted table: the same rows.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.compact.plan import plan_compaction
from lake_assets.ops.plan import plan_splits
from lake_assets.spec.snapshot import CommitKind
from lake_assets.table_support import Op
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


def _rows(start: int, n: int, dt: str) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "v": [f"value-{i}" for i in ids], "dt": [dt] * n}, schema=SCHEMA)


def _write(java: PaimonJava, wh: str, writer: str, counts: dict[str, list[int]]) -> None:
    """One commit per step, each writing ``counts[dt][step]`` rows into partition ``dt``."""
    start = 0
    for step in range(max(len(c) for c in counts.values())):
        parts = []
        for dt, c in counts.items():
            if step < len(c):
                parts.append(_rows(start, c[step], dt))
                start += c[step]
        batch = pa.concat_tables(parts)
        if writer == "java":
            java.write(wh, "db.t", batch)
        else:
            Catalog(wh).get_table("db.t").write_arrow(batch)


def _create(java: PaimonJava, wh: str, writer: str, options: dict[str, str]) -> None:
    opts = {"bucket": "-1", **options}
    if writer == "java":
        java.create_table(wh, "db.t", SCHEMA, partition_keys=["dt"], options=opts)
    else:
        cat = Catalog(wh)
        cat.create_database("db")
        cat.create_table("db.t", SCHEMA, partition_keys=["dt"], options=opts)


def _files_by_partition(wh: str) -> dict[str, list[Any]]:
    """Each partition's live files in sequence (write) order."""
    table = Catalog(wh).get_table("db.t")
    splits = plan_splits(table.store, table.latest_snapshot(), None, Op.COMPACT)
    return {s.partition_values[0]: sorted(s.files, key=lambda f: f.min_sequence_number) for s in splits}


def _pick_both(java: PaimonJava, wh: str) -> tuple[list[set[str]], list[set[str]], str]:
    """(Java's groups, ours) as sets of file names, and the copy Java compacted."""
    copy = str(Path(wh).parent / "java-copy")
    shutil.copytree(wh, copy)
    java_groups = [set(g) for g in java.append_compact(copy, "db.t")["groups"]]
    table = Catalog(wh).get_table("db.t")
    ours = [{f.file_name for f in g} for task in plan_compaction(table.store).tasks for g in task.append_groups]
    return java_groups, ours, copy


def _names(files: list[Any]) -> list[str]:
    return [f.file_name for f in files]


def _sorted(groups: list[set[str]]) -> list[list[str]]:
    return sorted(sorted(g) for g in groups)


def _compact_and_cross_read(java: PaimonJava, wh: str, copy: str, written: int) -> None:
    """We compact the original, Java reads it; we read Java's compacted copy: every row, once."""
    table = Catalog(wh).get_table("db.t")
    table.compact()
    assert Catalog(wh).get_table("db.t").latest_snapshot().commit_kind == CommitKind.COMPACT
    ours = Catalog(wh).get_table("db.t").to_arrow()
    assert ours.num_rows == written and len(set(ours.column("id").to_pylist())) == written
    assert_same_rows(ours, java.read(wh, "db.t"))
    assert_same_rows(Catalog(copy).get_table("db.t").to_arrow(), ours)


@pytest.mark.parametrize("writer", ["java", "ours"])
def test_same_groups_as_java_with_max_file_num(java: PaimonJava, wh: str, writer: str) -> None:
    # every file tiny (default target 128 MB), each bigger than the one before in its partition:
    # Java's size order is the write order. Partition a: 7 files -> two groups of 3, the 7th
    # waits (one file below min 5 cannot join a full group); b: 4 files, below min 5 -> the cap
    # alone makes a group of 3, the 4th waits.
    counts = {"a": [1, 4, 16, 48, 120, 260, 500], "b": [2, 8, 40, 150]}
    _create(java, wh, writer, {"compaction.max.file-num": "3"})
    _write(java, wh, writer, counts)
    files = _files_by_partition(wh)
    for fs in files.values():
        assert all(x.file_size < y.file_size for x, y in itertools.pairwise(fs)), _names(fs)
    a, b = _names(files["a"]), _names(files["b"])
    java_groups, ours, copy = _pick_both(java, wh)
    expected = [set(a[0:3]), set(a[3:6]), set(b[0:3])]
    assert _sorted(java_groups) == _sorted(expected)
    assert _sorted(ours) == _sorted(java_groups)
    _compact_and_cross_read(java, wh, copy, sum(map(sum, counts.values())))


def test_documented_differences_with_java(java: PaimonJava, wh: str) -> None:
    # files shrinking in write order, written by lake_assets (numbered on from the table's highest
    # sequence number; Java 0.9's unaware writers number every file from 0, so their sequence
    # order is the files' row counts'): Java bins the smallest first, we bin adjacent files in
    # write order; both make two groups of 3 (the cap), leaving one file, a different one
    _create(java, wh, "ours", {"compaction.max.file-num": "3"})
    _write(java, wh, "ours", {"a": [500, 260, 120, 48, 16, 4, 1]})
    files = _files_by_partition(wh)["a"]
    assert len({f.file_size for f in files}) == len(files)  # no ties: Java's order is the sizes'
    by_size = _names(sorted(files, key=lambda f: f.file_size))
    a = _names(files)
    java_groups, ours, copy = _pick_both(java, wh)
    assert _sorted(java_groups) == _sorted([set(by_size[0:3]), set(by_size[3:6])])
    assert _sorted(ours) == _sorted([set(a[0:3]), set(a[3:6])])
    assert _sorted(ours) != _sorted(java_groups)
    _compact_and_cross_read(java, wh, copy, 949)


def test_without_the_option_java_09_waits_for_50_files(java: PaimonJava, wh: str) -> None:
    # 7 tiny files, no compaction.max.file-num: Java 0.9's bin waits for 50 files (or the target
    # size); ours merges the run of at least compaction.min.file-num (5) small files, as 1.1+
    _create(java, wh, "java", {})
    _write(java, wh, "java", {"a": [1, 4, 16, 48, 120, 260, 500]})
    a = _names(_files_by_partition(wh)["a"])
    java_groups, ours, _ = _pick_both(java, wh)
    assert java_groups == []
    assert ours == [set(a)]
