"""Trust boundary: what the compact jobs' executors hand the driver (issue 14, session 18).

Real units are planned and run in this process as an executor runs them (`run_compaction_task`,
`run_postpone_unit`); their results are then damaged as a buggy or truncated executor output
would be. The driver's checks (`lake_assets.spark.jobs.unit_results`) refuse each with
`InvalidCommitMessageError` naming the unit and the field; the job's abort
(`unit_failures.abort_and_raise`) deletes the output of the units that passed, commits nothing and
touches no live file; a canary beside the table is never touched.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog, LakeError
from lake_assets.errors import InvalidCommitMessageError
from lake_assets.ops.compact import plan_compaction, run_compaction_task
from lake_assets.ops.postpone import plan_postpone, run_postpone_unit
from lake_assets.spark.jobs.unit_failures import abort_and_raise
from lake_assets.spark.jobs.unit_results import compaction_message, postpone_messages, unit_outcomes
from lake_assets.spec.manifest import DeletionVectorRange, FileKind, IndexManifestEntry

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def _table(tmp: Path, bucket: str):  # type: ignore[no-untyped-def]
    catalog = Catalog(str(tmp / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": bucket, "deletion-vectors.enabled": "true"} if bucket != "-2"
                             else {"bucket": "-2", "postpone.default-bucket-num": "2"})
    for i in range(3):
        t.write_arrow(pa.table({"k": [i, i + 10], "dt": ["a", "b"], "v": ["x", "y"]}, schema=SCHEMA))
    return t


def _files(t) -> set[Path]:  # type: ignore[no-untyped-def]
    return set(Path(t.paths.root).rglob("data-*"))


def _other_live_file(t, m):  # type: ignore[no-untyped-def]
    return next(e.file for e in t.store.file_store_scan().live_entries(t.snapshot_manager.latest())
                if e.partition != m.partition)


REGULAR: dict[str, tuple[Callable[[Any, Any], object], str]] = {
    "not a message": (lambda t, m: {"bucket": 0}, "unit 1: it returned dict"),
    "another bucket": (lambda t, m: dataclasses.replace(m, bucket=1), "another partition or bucket"),
    "another unit's partition": (lambda t, m: dataclasses.replace(m, partition=_other_live_file(t, m) and next(
        e.partition for e in t.store.file_store_scan().live_entries(t.snapshot_manager.latest())
        if e.partition != m.partition)), "another partition or bucket"),
    "new files": (lambda t, m: dataclasses.replace(m, new_files=m.compact_after), "carries new_files"),
    "a live file not planned": (lambda t, m: dataclasses.replace(
        m, compact_before=(*m.compact_before, dataclasses.replace(_other_live_file(t, m)))),
        "compact_before lists data-.* which the unit did not plan"),
    "an index file not planned": (lambda t, m: dataclasses.replace(m, index_before=(IndexManifestEntry(
        FileKind.ADD, m.partition, m.bucket, "DELETION_VECTORS", "index-other-0", 1, 1,
        (DeletionVectorRange("data-x.parquet", 1, 1, 1),)),)), "index_before lists index-other-0"),
}


@pytest.mark.parametrize("case", list(REGULAR))
def test_damaged_compaction_unit_result_commits_nothing(tmp_path: Path, case: str) -> None:
    damage, message = REGULAR[case]
    canary = tmp_path / "canary"
    canary.write_bytes(b"precious")
    t = _table(tmp_path, "1")
    before, rows, latest = _files(t), t.to_arrow().sort_by("k"), t.snapshot_manager.latest_id()
    plan = plan_compaction(t.store, full=True)
    assert len(plan.tasks) == 2  # one unit per partition
    results: list[object] = [("ok", run_compaction_task(t.store, task)) for task in plan.tasks]
    results[1] = ("ok", damage(t, results[1][1]))  # type: ignore[index]
    ok, failed = unit_outcomes(results, len(plan.tasks))
    assert not failed
    messages, refusals = [], []
    for i, value in ok:
        try:
            messages.append(compaction_message(i, plan.tasks[i], value))
        except InvalidCommitMessageError as exc:
            refusals.append(str(exc))
    assert len(messages) == 1 and len(refusals) == 1
    assert "compaction unit 1" in refusals[0] and re.search(message, refusals[0]), refusals
    written = _files(t) - before
    with pytest.raises(InvalidCommitMessageError, match="unit 1"):
        abort_and_raise(t.store, messages, [("InvalidCommitMessageError", refusals[0])], "units")
    after = _files(t)
    assert before <= after  # every live file kept
    # unit 0's output deleted; the refused unit's (dt=b) left to orphan removal: its names are not trusted
    assert not any("dt=a" in str(p) for p in after - before) and (after - before) <= written
    assert t.snapshot_manager.latest_id() == latest and t.to_arrow().sort_by("k").equals(rows)
    assert canary.read_bytes() == b"precious"


@pytest.mark.parametrize(("results", "message"), [
    ([("ok", None)], "1 for 2 planned units"),                    # a truncated collect
    ([("ok", None), ("ok", None), ("ok", None)], "3 for 2 planned"),
    ([("ok", None), ["ok", None]], "unit 1: list"),
    ([("ok", None), ("done", None)], "unit 1: tuple"),
    ([("ok", None), ("error", "boom")], "unit 1: its error 'boom'"),
    ([("ok", None), ("error", ("LakeError", 5))], "unit 1: its error"),
])
def test_result_shapes_are_checked(results: list[object], message: str) -> None:
    with pytest.raises(InvalidCommitMessageError, match=message):
        unit_outcomes(results, 2)


def test_an_executors_error_class_name_is_only_a_lake_error(tmp_path: Path) -> None:
    """``abort_and_raise`` raised ``getattr(lake_assets.errors, name)`` of whatever name came back."""
    t = _table(tmp_path, "1")
    for name in ("BaseException", "annotations", "__class__", "SystemExit"):
        with pytest.raises(LakeError, match="boom"):
            abort_and_raise(t.store, [], [(name, "boom")], "units")


POSTPONE: dict[str, tuple[Callable[[Any, list[Any]], object], str]] = {
    "not a list": (lambda t, ms: tuple(ms), "unit 1: it returned tuple"),
    "bucket past the count": (lambda t, ms: [dataclasses.replace(m, bucket=2) if m.bucket >= 0 else m for m in ms],
                              "bucket 2 of 2; the unit's partition has 2 buckets"),
    "count of 2**31": (lambda t, ms: [dataclasses.replace(m, total_buckets=2**31) if m.bucket >= 0 else m for m in ms],
                       f"of {2**31}"),
    "another partition": (lambda t, ms: [dataclasses.replace(m, partition=b"\x00" * 8) for m in ms],
                          "another partition"),
    "postponed file not planned": (lambda t, ms: [dataclasses.replace(
        m, compact_before=(*m.compact_before, dataclasses.replace(m.compact_before[0], file_name="data-x.parquet")))
        if m.bucket == -2 else m for m in ms], "compact_before lists data-x.parquet"),
    "postpone message with output": (lambda t, ms: [dataclasses.replace(m, compact_after=m.compact_before)
                                                    if m.bucket == -2 else m for m in ms], "more than the postponed"),
}


@pytest.mark.parametrize("case", list(POSTPONE))
def test_damaged_postpone_unit_result_commits_nothing(tmp_path: Path, case: str) -> None:
    damage, message = POSTPONE[case]
    t = _table(tmp_path, "-2")
    before = _files(t)
    units = plan_postpone(t.store)
    assert len(units) == 2 and all(u.buckets == 2 for u in units)
    results: list[object] = [("ok", run_postpone_unit(t.store, u, "compact-x")) for u in units]
    results[1] = ("ok", damage(t, results[1][1]))  # type: ignore[index]
    ok, failed = unit_outcomes(results, len(units))
    assert not failed
    messages, refusals = [], []
    for i, value in ok:
        try:
            messages += postpone_messages(i, units[i], value)
        except InvalidCommitMessageError as exc:
            refusals.append(str(exc))
    assert len(refusals) == 1 and re.search(message, refusals[0]), refusals
    with pytest.raises(InvalidCommitMessageError):
        abort_and_raise(t.store, messages, [("InvalidCommitMessageError", refusals[0])], "partitions")
    after = _files(t)
    assert before <= after  # no postponed (live) file deleted
    assert not any("dt=a" in str(p) for p in after - before)  # unit 0's output deleted
    assert t.snapshot_manager.latest_id() == 3 and t.health()["file_count"].to_pylist() == [3, 3]
