"""Orphan removal looks where Paimon's orphan clean looks (lake_assets/ops/orphan_scope.py,
docs/format.md §9.4): snapshot/changelog directories, manifest/index/statistics and the bucket
directories under the partition levels. Files other tools keep in the table directory (Flink's
``_SUCCESS`` mark-done files, a README, a staging directory) are never deleted; the data
directories it empties go too, as in Paimon HEAD."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.table import Table

OLD = time.time() - 10 * 86400
SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    pa.field("hr", pa.string(), nullable=False), ("v", pa.int64())])


def plant(path: Path, data: bytes = b"x") -> Path:
    """An old file nothing references (older than any bound used here)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (OLD, OLD))
    return path


def old_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.utime(path, (OLD, OLD))
    return path


def _table(tmp_path: Path, partition_keys: list[str]) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k", *partition_keys], partition_keys=partition_keys,
                         options={"bucket": "2"})
    t.write_arrow(pa.table({"k": [1, 2, 3, 4], "dt": ["d1", "d1", "d2", "d2"], "hr": ["h1", "h2", "h1", "h1"],
                            "v": [1, 2, 3, 4]}, schema=SCHEMA))
    return t


def _files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("partition_keys", [[], ["dt"], ["dt", "hr"]], ids=["unpartitioned", "dt", "dt-hr"])
def test_only_files_in_paimons_directories_are_orphans(tmp_path: Path, partition_keys: list[str]) -> None:
    t = _table(tmp_path, partition_keys)
    root = Path(t.paths.root)
    partitions = sorted({p.parent for p in root.rglob("bucket-*")}) if partition_keys else []
    buckets = sorted(root.rglob("bucket-*"))
    assert buckets and len(partitions) == (0 if not partition_keys else 3 if len(partition_keys) == 2 else 2)
    kept = [plant(root / "README.md"), plant(root / "hive-staging" / "part-00000"),
            plant(root / ".hive-staging_hive_2024" / "-ext-10000" / "data-0.parquet"),
            plant(root / "tag" / "notes.txt"), plant(root / "schema" / "schema-1.backup")]
    for p in partitions:
        kept += [plant(p / "_SUCCESS"), plant(p / "_temporary" / "0" / "data-1.parquet"), plant(p / "part.crc")]
    if len(partition_keys) == 2:
        kept.append(plant(partitions[0].parent / "_SUCCESS"))  # beside the second partition level
    removed = [plant(buckets[0] / "data-stray-0.parquet"), plant(buckets[-1] / "changelog-stray-1.parquet"),
               plant(root / "manifest" / "manifest-stray-0"), plant(root / "manifest" / "manifest-list-stray-1"),
               plant(root / "index" / "index-stray-0"), plant(root / "statistics" / "stat-stray-0"),
               plant(root / "snapshot" / ".snapshot-9.abc.tmp"), plant(root / "snapshot" / "README"),
               plant(root / "tag" / ".tag-x.0f1e.tmp"), plant(root / "consumer" / ".consumer-c.0f1e.tmp")]
    before = _files(root)
    rows = t.to_arrow().sort_by("k")

    found = t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=True)
    assert sorted(found.paths) == sorted(map(str, removed))
    assert found.bytes == len(removed)
    assert _files(root) == before  # a dry run deletes nothing

    done = t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=False)
    assert sorted(done.paths) == sorted(map(str, removed))
    assert _files(root) == before - set(map(str, removed))
    assert all(p.read_bytes() == b"x" for p in kept)
    assert t.refresh().to_arrow().sort_by("k").equals(rows)
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths == []


def test_snapshot_and_changelog_directories_keep_snapshots_hints_and_expiry_markers(tmp_path: Path) -> None:
    """Paimon removes every other file there (cleanBranchSnapshotDir); lake_assets' expiry markers,
    which a failed expiration leaves on purpose to keep tagging below it refused, stay."""
    t = _table(tmp_path, ["dt"])
    snap = Path(t.paths.snapshot_dir)
    changelog = Path(t.paths.changelog_dir)
    markers = Path(t.paths.root) / "expiring"  # the markers' own directory: only crashed temp files go
    kept = [plant(snap / "EXPIRING-0123abcd", b"5"), plant(markers / "EXPIRING-0123abcd", b"5"),
            plant(changelog / "LATEST", b"1"),
            plant(changelog / "changelog-1", (snap / "snapshot-1").read_bytes()), plant(changelog / "EARLIEST", b"1")]
    for p in snap.iterdir():
        os.utime(p, (OLD, OLD))  # snapshot-1 and the hints: old as well
    kept += [p for p in snap.iterdir() if p.name.startswith("snapshot-") or p.name in ("LATEST", "EARLIEST")]
    removed = [plant(snap / "snapshot.bak"), plant(changelog / ".changelog-8.ab.tmp"), plant(changelog / "x"),
               plant(markers / ".EXPIRING-0123abcd.9f.tmp")]
    old_dir(snap / "subdir")  # directories there are never touched
    got = t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=False).paths
    assert sorted(got) == sorted(map(str, removed))
    assert all(p.exists() for p in kept) and (snap / "subdir").is_dir()


def test_young_files_in_scope_are_kept(tmp_path: Path) -> None:
    t = _table(tmp_path, ["dt"])
    bucket = next(Path(t.paths.root).rglob("bucket-0"))
    young = bucket / "data-inflight-0.parquet"
    young.write_bytes(b"writing")
    assert t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=False).paths == []
    assert young.exists()


def test_emptied_and_empty_data_directories_go_as_in_paimon(tmp_path: Path) -> None:
    """LocalOrphanFilesClean (HEAD): the bucket directories whose files it deleted and then their
    partition directories, when empty; listed directories found empty and old enough, and their
    parents up to the table directory. Never a directory that holds something, nor a young one."""
    t = _table(tmp_path, ["dt"])
    root = Path(t.paths.root)
    stray_only = plant(root / "dt=d9" / "bucket-0" / "data-stray-0.parquet").parent  # a crashed writer's partition
    empty_old = old_dir(root / "dt=d8" / "bucket-1")
    os.utime(empty_old.parent, (OLD, OLD))
    empty_young = root / "dt=d7" / "bucket-0"
    empty_young.mkdir(parents=True)
    marked = plant(root / "dt=d6" / "bucket-0" / "data-stray-1.parquet").parent
    success = plant(root / "dt=d6" / "_SUCCESS")
    old_dir(root / "manifest-not-paimon")  # not a Paimon directory: never looked at
    dry = t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=True)
    assert stray_only.exists() and empty_old.exists()  # a dry run removes no directory either
    assert sorted(dry.empty_dirs) == [str(empty_old)]
    t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=False)
    assert not stray_only.exists() and not stray_only.parent.exists()
    assert not empty_old.exists() and not empty_old.parent.exists()
    assert empty_young.is_dir()
    assert not marked.exists() and success.exists()  # the partition directory holds _SUCCESS: kept
    assert (root / "manifest-not-paimon").is_dir() and Path(t.paths.manifest_dir).is_dir()
    assert sorted(r["k"] for r in t.to_arrow().to_pylist()) == [1, 2, 3, 4]


def test_a_partition_directory_without_buckets_is_listed_itself(tmp_path: Path) -> None:
    """HEAD's listFileDirs (#7295): a partition directory with no bucket directory left (e.g. after
    its partition expired) is listed itself, so its files are candidates and it goes once empty."""
    t = _table(tmp_path, ["dt"])
    root = Path(t.paths.root)
    success = plant(root / "dt=d5" / "_SUCCESS")
    kept_success = plant(root / "dt=d1" / "_SUCCESS")  # a partition with buckets: never looked into
    got = t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=False).paths
    assert got == [str(success)] and kept_success.exists()
    os.utime(success.parent, (OLD, OLD))
    t.remove_orphan_files(older_than=timedelta(hours=1), dry_run=False)
    assert not success.parent.exists()
