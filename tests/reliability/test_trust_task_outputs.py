"""Trust boundary: what Spark write tasks hand the driver (issue 14, session 18).

A write task's result (`LakeCommitMessage`: commit user, core messages as JSON, sequence stride)
crosses from an executor's Python worker to the driver. Real results of two tasks (the writer's
own ``write``, run here without a JVM as a worker runs it) are damaged field by field; the
driver's ``commit`` raises `InvalidCommitMessageError` naming the task and the field, commits
nothing, and Spark's ``abort`` then deletes the files of the task that passed the checks only,
never a file the table references; a canary beside the table is never touched. The same checks
run in a real Spark job in `tests/spark/test_task_output_trust_spark.py`.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidCommitMessageError
from lake_assets.spark.source_options import SourceOptions
from lake_assets.spark.write_task import LakeCommitMessage
from lake_assets.spark.writer import LakeBatchWriter, LakeStreamWriter

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def _rows(keys: list[int], dt: str) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"k": keys, "dt": [dt] * len(keys), "v": ["x"] * len(keys)}, schema=SCHEMA)


class Env:
    def __init__(self, tmp: Path, options: dict[str, str] | None = None) -> None:
        self.canary = tmp / "canary"
        self.canary.write_bytes(b"precious")
        wh = str(tmp / "wh")
        catalog = Catalog(wh)
        catalog.create_database("db")
        self.table = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                          options=options or {"bucket": "2"})
        self.table.write_arrow(pa.Table.from_batches([_rows([1, 2, 3], "a")]))
        self.live = self.files()
        self.options = SourceOptions.parse({"path": "db.t", "warehouse": wh})

    def files(self) -> set[Path]:
        return {p for p in Path(self.table.paths.root).rglob("data-*")}

    def check_untouched(self) -> None:
        assert self.table.snapshot_manager.latest_id() == 1
        assert sorted(self.table.to_arrow()["k"].to_pylist()) == [1, 2, 3]
        assert self.live <= self.files()  # no live file deleted
        assert self.canary.read_bytes() == b"precious"


def _message(task: LakeCommitMessage, damage: Callable[[dict[str, Any]], None]) -> LakeCommitMessage:
    """``task`` with its first core message's JSON passed through ``damage``."""
    d = json.loads(task.messages[0])
    damage(d)
    return dataclasses.replace(task, messages=(json.dumps(d), *task.messages[1:]))


def _first_file(**changes: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["new_files"][0].update(changes)


def _live_file_compacted(env: Env) -> Callable[[dict[str, Any]], None]:
    """The table's live file of key 1 listed as compaction input: an APPEND would drop it."""
    live = env.table.store.file_store_scan().live_entries(env.table.snapshot_manager.latest())[0]
    def damage(d: dict[str, Any]) -> None:
        f = dict(d["new_files"][0], file_name=live.file.file_name)
        d["compact_before"] = [f]
        d["partition"] = base64.b64encode(live.partition).decode()
        d["bucket"] = live.bucket
    return damage


def _env_victim(env: Env) -> str:
    return os.path.relpath(env.canary, env.table.paths.bucket_dir("dt=b", 0))


# name -> (damage to task 1's result, what the error says)
CASES: dict[str, tuple[Callable[[Env, LakeCommitMessage], object], str]] = {
    "no result": (lambda env, m: None, "task 1: it returned no result"),
    "another type": (lambda env, m: "files", "task 1: it returned str"),
    "user not a string": (lambda env, m: dataclasses.replace(m, commit_user=5), "commit_user is 5"),
    "empty user": (lambda env, m: dataclasses.replace(m, commit_user=""), "commit_user is ''"),
    "user with a newline": (lambda env, m: dataclasses.replace(m, commit_user="u\n"), "commit_user is 'u\\\\n'"),
    "another write's user": (lambda env, m: dataclasses.replace(m, commit_user="other"), "not this write's"),
    "stride zero": (lambda env, m: dataclasses.replace(m, sequence_stride=0), "sequence_stride is 0"),
    "stride negative": (lambda env, m: dataclasses.replace(m, sequence_stride=-65536), "sequence_stride is -65536"),
    "stride a string": (lambda env, m: dataclasses.replace(m, sequence_stride="1"), "sequence_stride is '1'"),
    "stride a boolean": (lambda env, m: dataclasses.replace(m, sequence_stride=True), "sequence_stride is True"),
    "messages a string": (lambda env, m: dataclasses.replace(m, messages=m.messages[0]), "messages is str"),
    "messages of numbers": (lambda env, m: dataclasses.replace(m, messages=(5,)), "messages is tuple, not a tuple"),
    "truncated JSON": (lambda env, m: dataclasses.replace(m, messages=(m.messages[0][:40],)),
                       "message 0: Invalid commit message JSON"),
    "path outside the table": (lambda env, m: _message(m, _first_file(file_name=_env_victim(env))),
                               "message 0: .*Unsafe file name"),
    "negative row count": (lambda env, m: _message(m, _first_file(row_count=-1)), "row_count = -1"),
    "row count a float": (lambda env, m: _message(m, _first_file(row_count=1.5)), "row_count = 1.5"),
    "file size a string": (lambda env, m: _message(m, _first_file(file_size="9")), "file_size = '9'"),
    "huge level": (lambda env, m: _message(m, _first_file(level=2**40)), "level"),
    "sequence range reversed": (lambda env, m: _message(m, _first_file(min_sequence_number=2**62)),
                                "above max_sequence_number"),
    "bucket a string": (lambda env, m: _message(m, lambda d: d.update(bucket="0")), "bucket '0'"),
    "bucket 2**31": (lambda env, m: _message(m, lambda d: d.update(bucket=2**31)), f"bucket {2**31}"),
    "partition bytes cut": (lambda env, m: _message(m, lambda d: d.update(partition="AAAA")), "partition bytes"),
    "live file as compaction input": (lambda env, m: _message(m, _live_file_compacted(env)),
                                      "carries compact_before .*a write task never compacts"),
    "deletion vector index": (lambda env, m: _message(m, lambda d: d.update(index_after=[{
        "kind": 0, "partition": d["partition"], "bucket": d["bucket"], "index_type": "DELETION_VECTORS",
        "file_name": "index-x-0", "file_size": 1, "row_count": 1, "dv_ranges": [["data-y.parquet", 1, 1, 1]]}])),
        "DELETION_VECTORS index file index-x-0"),
    "hash index of a fixed-bucket table": (lambda env, m: _message(m, lambda d: d.update(
        hash_index_view="v", index_after=[{
        "kind": 0, "partition": d["partition"], "bucket": d["bucket"], "index_type": "HASH",
        "file_name": "index-x-0", "file_size": 8, "row_count": 2}])), "hash index"),
    "unknown field": (lambda env, m: _message(m, _first_file(bogus=1)), "unknown file fields"),
}


def _two_tasks(env: Env, writer: Any) -> list[LakeCommitMessage]:
    return [writer.write(iter([_rows([10, 11], "a")])), writer.write(iter([_rows([20, 21], "b")]))]


@pytest.mark.parametrize("case", list(CASES))
def test_damaged_task_result_fails_the_batch_write_and_commits_nothing(tmp_path: Path, case: str) -> None:
    damage, message = CASES[case]
    env = Env(tmp_path)
    writer = LakeBatchWriter(env.options, overwrite=False)
    tasks = _two_tasks(env, writer)
    written = env.files() - env.live
    results = [tasks[0], damage(env, tasks[1])]
    with pytest.raises(InvalidCommitMessageError, match=message) as caught:
        writer.commit(results)  # type: ignore[arg-type]
    assert re.search(r"Spark write task 1|commit to db.t", str(caught.value)), caught.value
    writer.abort(results)  # type: ignore[arg-type]  # as Spark does after a failed commit
    env.check_untouched()
    task0 = {p for p in written if "dt=a" in str(p)}
    assert task0 and not any(p.exists() for p in task0)  # the valid task's files are gone
    # the undamaged results still commit
    writer = LakeBatchWriter(env.options, overwrite=False)
    writer.commit(_two_tasks(env, writer))  # type: ignore[arg-type]
    assert sorted(env.table.to_arrow()["k"].to_pylist()) == [1, 2, 3, 10, 11, 20, 21]


def test_damaged_task_result_fails_a_micro_batch(tmp_path: Path) -> None:
    """A streaming commit takes its commit user from the tasks: two users, or a damaged stride,
    commit nothing; the abort deletes nothing when no one user is left to ask whether it landed."""
    from lake_assets.spark.write_task import write_task

    env = Env(tmp_path)
    writer = LakeStreamWriter(env.options, overwrite=False)
    tasks = [write_task(env.options, "spark-q1", iter([_rows([10], "a")])),
             write_task(env.options, "spark-q1", iter([_rows([20], "b")]))]
    for results, match in (
        ([tasks[0], dataclasses.replace(tasks[1], commit_user="spark-q2")], "several commit users"),
        ([tasks[0], dataclasses.replace(tasks[1], sequence_stride=3)], "task 1: sequence_stride is 3"),
        ([tasks[0], None], "task 1: it returned no result"),
    ):
        with pytest.raises(InvalidCommitMessageError, match=match):
            writer.commit(results, 7)  # type: ignore[arg-type]
        env.check_untouched()
    writer.abort([tasks[0], dataclasses.replace(tasks[1], commit_user="spark-q2")], 7)  # type: ignore[list-item]
    assert (env.files() - env.live), "two users: nothing deleted"
    writer.abort([tasks[0], dataclasses.replace(tasks[1], messages=("{",))], 7)  # type: ignore[list-item]
    assert not any("dt=a" in str(p) for p in env.files() - env.live)  # task 0's files deleted
    assert any("dt=b" in str(p) for p in env.files() - env.live)      # the damaged task's left as orphans
    env.check_untouched()
