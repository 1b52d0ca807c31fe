"""Partition mark-done after a commit (``partition.end-input-to-done``): the ``_SUCCESS`` file of
Paimon's ``SuccessFileMarkDoneAction`` in every partition the commit's messages touched, only when
the option is on, never for unpartitioned tables; a marker that cannot be written is reported, not
raised; orphan removal keeps the markers of partitions that hold data."""

from __future__ import annotations

import json
import logging
import os
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.mark_done import (
    SUCCESS_FILE_NAME,
    SuccessFile,
    mark_done_after_commit,
    mark_partitions_done,
    touched_partitions,
)
from lake_assets.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])
DONE = {"partition.end-input-to-done": "true"}


def _table(tmp_path: Path, options: dict[str, str], partitioned: bool = True) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, partition_keys=["dt"] if partitioned else [],
                            options={"bucket": "-1", **options})


def _rows(*days: str) -> pa.Table:
    return pa.table({"id": list(range(len(days))), "dt": list(days)}, schema=SCHEMA)


def _commit(table: Table, rows: pa.Table) -> list:
    """Write and commit as an engine's batch write does; the commit messages it committed."""
    writer = table.new_writer("job-1", write_only=True)
    writer.write_arrow(rows)
    messages = writer.prepare_commit()
    writer.close()
    table.new_committer("job-1").commit(messages, commit_identifier=1)
    return messages


def _marker(table: Table, day: str) -> Path:
    return Path(table.store.paths.root) / f"dt={day}" / SUCCESS_FILE_NAME


def test_success_file_is_javas_json_and_keeps_its_creation_time(tmp_path: Path) -> None:
    table = _table(tmp_path, DONE)
    messages = _commit(table, _rows("2024-01-01"))
    assert mark_done_after_commit(table.store, messages, now_ms=1_700_000_000_000).marked == ["dt=2024-01-01"]
    path = _marker(table, "2024-01-01")
    # JsonSerdeUtil.toJson: Jackson's default pretty printer, fields in declaration order
    assert path.read_text() == '{\n  "creationTime" : 1700000000000,\n  "modificationTime" : 1700000000000\n}'
    mark_done_after_commit(table.store, messages, now_ms=1_700_000_005_000)
    assert json.loads(path.read_text()) == {"creationTime": 1_700_000_000_000, "modificationTime": 1_700_000_005_000}
    # fields Java does not know are ignored (@JsonIgnoreProperties(ignoreUnknown = true))
    assert SuccessFile.from_json('{"modificationTime": 2, "creationTime": 1, "x": 3}', "f") == SuccessFile(1, 2)


def test_only_the_partitions_the_commit_touched_are_marked(tmp_path: Path) -> None:
    table = _table(tmp_path, DONE)
    table.write_arrow(_rows("2024-01-03"))
    messages = _commit(table, _rows("2024-01-01", "2024-01-02", "2024-01-01"))
    assert touched_partitions(table.store, messages) == ["dt=2024-01-01", "dt=2024-01-02"]
    result = mark_done_after_commit(table.store, messages)
    assert result.marked == ["dt=2024-01-01", "dt=2024-01-02"] and result.failed == {}
    assert _marker(table, "2024-01-01").exists() and _marker(table, "2024-01-02").exists()
    assert not _marker(table, "2024-01-03").exists()


def test_nothing_is_marked_without_the_option_nor_by_the_cores_write(tmp_path: Path) -> None:
    off = _table(tmp_path / "off", {"partition.end-input-to-done": "false"})
    assert mark_done_after_commit(off.store, _commit(off, _rows("2024-01-01"))).marked == []
    assert not list(Path(off.store.paths.root).rglob(SUCCESS_FILE_NAME))
    # Java's core BatchTableWrite does not mark done: only the engines' writes do
    on = _table(tmp_path / "on", DONE)
    on.write_arrow(_rows("2024-01-01"))
    assert not list(Path(on.store.paths.root).rglob(SUCCESS_FILE_NAME))


def test_unpartitioned_tables_are_not_marked(tmp_path: Path) -> None:
    table = _table(tmp_path, DONE, partitioned=False)
    assert mark_done_after_commit(table.store, _commit(table, _rows("2024-01-01"))).marked == []
    assert not list(Path(table.store.paths.root).rglob(SUCCESS_FILE_NAME))


def test_a_marker_that_cannot_be_written_is_reported_not_raised(tmp_path: Path, caplog) -> None:
    table = _table(tmp_path, DONE)
    messages = _commit(table, _rows("2024-01-01", "2024-01-02"))
    _marker(table, "2024-01-01").write_text("not json")  # Java's SuccessFile.fromPath fails on it too
    with caplog.at_level(logging.WARNING, logger="lake_assets.ops.mark_done"):
        result = mark_done_after_commit(table.store, messages)
    assert result.marked == ["dt=2024-01-02"] and list(result.failed) == ["dt=2024-01-01"]
    assert "not a Paimon success file" in result.failed["dt=2024-01-01"]
    assert "Committed to db.t, but could not mark 1 partition(s) done" in caplog.text
    assert table.to_arrow().num_rows == 2  # the commit stands


def test_markers_never_leave_the_table(tmp_path: Path) -> None:
    table = _table(tmp_path, DONE)
    result = mark_partitions_done(table.store, ["../outside", "dt=x"], now_ms=1)
    assert result.marked == ["dt=x"] and "UnsafePathError" in result.failed["../outside"]
    assert not (tmp_path / "wh" / "db.db" / "outside").exists()


def test_orphan_removal_keeps_the_markers_of_partitions_with_data(tmp_path: Path) -> None:
    table = _table(tmp_path, DONE)
    mark_done_after_commit(table.store, _commit(table, _rows("2024-01-01")))
    marker = _marker(table, "2024-01-01")
    old = marker.stat().st_mtime - 10 * 86400
    os.utime(marker, (old, old))
    assert str(marker) not in table.remove_orphan_files(older_than=timedelta(days=1), dry_run=False).paths
    assert marker.exists()


@pytest.mark.parametrize("offset_ms", [0, -1])
def test_orphan_removal_cutoff_is_strict_as_paimons(tmp_path: Path, offset_ms: int) -> None:
    """Paimon deletes a file when ``modificationTime < olderThanMillis``: one modified exactly at
    the cutoff stays, one a millisecond older goes."""
    from lake_assets.ops.orphans import remove_orphan_files

    table = _table(tmp_path, {})
    table.write_arrow(_rows("2024-01-01"))
    stray = Path(table.store.paths.root) / "dt=2024-01-01" / "bucket-0" / "data-stray.parquet"
    stray.write_bytes(b"x")
    cutoff_ms = 1_700_000_000_000
    mtime_ns = (cutoff_ms + offset_ms) * 1_000_000
    os.utime(stray, ns=(mtime_ns, mtime_ns))
    found = remove_orphan_files(table.store, older_than=timedelta(days=1), now_ms=cutoff_ms + 86_400_000)
    assert (str(stray) in found.paths) == (offset_ms < 0)


def test_a_jobs_report_names_the_partitions_marked_and_missing(tmp_path: Path) -> None:
    from lake_assets.ops.mark_done import marker_report

    table = _table(tmp_path, DONE)
    table.write_arrow(_rows("2024-01-03"))
    before = table.snapshot_manager.latest_id()
    messages = _commit(table, _rows("2024-01-01", "2024-01-02"))
    _marker(table, "2024-01-02").parent.mkdir(parents=True, exist_ok=True)
    _marker(table, "2024-01-02").mkdir()  # a directory where the marker goes: writing it fails
    mark_done_after_commit(table.store, messages, now_ms=5_000)
    assert marker_report(table.store, before, since_ms=5_000) == {
        "marked_done": ["dt=2024-01-01"], "mark_done_missing": ["dt=2024-01-02"]}
    # a marker older than the job does not count for it
    assert marker_report(table.store, before, since_ms=5_001)["marked_done"] == []
    assert marker_report(_table(tmp_path / "off", {}).store, None, since_ms=0) == {}
