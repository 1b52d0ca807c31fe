"""Compaction units run in a bounded thread pool: same table, ordered messages, no leaked files."""

from __future__ import annotations

import os
import shutil
import threading
import time

import pyarrow as pa
import pytest

import lake_assets.ops.compact.rewrite as compact_mod
from lake_assets import Catalog, OptionError
from lake_assets.ops.compact import (
    compaction_parallelism,
    plan_compaction,
    run_compaction_task,
    run_compaction_tasks,
)

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string()), ("op", pa.string())])


def _table(wh: str, **options: str):
    cat = Catalog(wh)
    cat.create_database("db")
    opts = {"bucket": "3", "write-only": "true", "rowkind.field": "op", **options}
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"], options=opts)
    for r in range(4):  # 4 level-0 runs per bucket, updates and deletes across them
        ids = list(range(r * 10, 200 + r * 10))
        ops = ["-D" if (i + r) % 17 == 0 else "+U" for i in ids]
        t.write_arrow(pa.table({"id": ids, "p": [f"p{i % 4}" for i in ids], "v": [f"r{r}-{i}" for i in ids],
                                "op": ops}, schema=SCHEMA))
    return cat.get_table("db.t")


def _files_on_disk(wh: str) -> set[str]:
    out = set()
    for root, _, names in os.walk(wh):
        out |= {os.path.join(root, n) for n in names if n.endswith(".parquet")}
    return out


def _live_files(t) -> set[str]:
    return {os.path.abspath(t.store.data_file_path(s.partition, s.bucket, f)) for s in t.plan() for f in s.files}


def _sorted(t) -> pa.Table:
    return t.to_arrow().sort_by([("p", "ascending"), ("id", "ascending")])


def test_parallel_compaction_gives_the_serial_result(tmp_path):
    serial_wh, parallel_wh = str(tmp_path / "serial"), str(tmp_path / "parallel")
    t = _table(serial_wh)
    before = _sorted(t)
    shutil.copytree(serial_wh, parallel_wh)
    serial = t.compact(full=True, parallelism=1)
    par_table = Catalog(parallel_wh).get_table("db.t")
    parallel = par_table.compact(full=True, parallelism=4)
    assert serial.tasks == parallel.tasks == 12  # 4 partitions x 3 buckets
    for field in ("files_in", "files_out", "rows_in", "rows_out", "upgraded"):
        assert getattr(serial, field) == getattr(parallel, field), field
    assert _sorted(par_table).equals(before)
    assert _sorted(Catalog(serial_wh).get_table("db.t")).equals(before)
    # every bucket is one sorted run now, and no file is left behind
    assert all(len(s.files) == 1 for s in par_table.plan())
    assert _files_on_disk(parallel_wh) >= _live_files(par_table)


def test_messages_come_back_in_task_order_whatever_finishes_first(tmp_path, monkeypatch):
    t = _table(str(tmp_path))
    tasks = plan_compaction(t.store, full=True).tasks
    delay = {id(task): 0.02 * (len(tasks) - i) for i, task in enumerate(tasks)}  # the first finishes last
    finished: list[int] = []
    lock = threading.Lock()

    def slow(store, task, **kw):
        time.sleep(delay[id(task)])
        msg = run_compaction_task(store, task, **kw)
        with lock:
            finished.append(id(task))
        return msg

    monkeypatch.setattr(compact_mod, "run_compaction_task", slow)
    messages = run_compaction_tasks(t.store, tasks, parallelism=4)
    assert finished != [id(task) for task in tasks]  # the pool really reordered completions
    assert [(m.partition, m.bucket) for m in messages] == [(task.partition, task.bucket) for task in tasks]
    for m, task in zip(messages, tasks, strict=True):
        assert {f.file_name for f in m.compact_before} == {f.file_name for f in task.input_files}


@pytest.mark.parametrize("parallelism", [1, 3])
def test_a_failed_unit_leaves_no_files_and_no_snapshot(tmp_path, monkeypatch, parallelism):
    wh = str(tmp_path)
    t = _table(wh)
    before = _sorted(t)
    snapshot = t.latest_snapshot().id
    tasks = plan_compaction(t.store, full=True).tasks
    doomed = (tasks[len(tasks) // 2].partition, tasks[len(tasks) // 2].bucket)  # compact() plans anew
    written = []
    one_unit_done = threading.Event()

    def failing(store, task, **kw):
        if (task.partition, task.bucket) == doomed:
            # fail only after another unit wrote its files (a sleep flaked on a loaded machine);
            # with parallelism 1 the units before this one have already finished
            assert one_unit_done.wait(timeout=60)
            raise RuntimeError("unit failed")
        msg = run_compaction_task(store, task, **kw)
        written.extend(msg.all_written_files())
        one_unit_done.set()
        return msg

    monkeypatch.setattr(compact_mod, "run_compaction_task", failing)
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            t.compact(full=True, parallelism=parallelism)
        except BaseException as exc:
            outcome.append(exc)

    # units still queued when one fails are cancelled: waiting on them hung compact() for ever
    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(timeout=120)
    assert not runner.is_alive(), "compact() hung after a unit failed"
    assert len(outcome) == 1 and isinstance(outcome[0], RuntimeError) and "unit failed" in str(outcome[0])
    assert written  # units before the failure did write files ...
    t = Catalog(wh).get_table("db.t")
    assert _files_on_disk(wh) == _live_files(t)  # ... and every one of them is gone again
    assert t.latest_snapshot().id == snapshot
    assert _sorted(t).equals(before)


def test_parallelism_option(tmp_path):
    t = _table(str(tmp_path / "a"), **{"compaction.parallelism": "3"})
    assert compaction_parallelism(t.store) == 3
    assert compaction_parallelism(t.store, 1) == 1
    with pytest.raises(ValueError, match="at least 1"):
        compaction_parallelism(t.store, 0)
    assert t.compact(full=True).tasks == 12
    cat = Catalog(str(tmp_path / "b"))
    cat.create_database("db")
    for bad, match in (("0", "at least 1"), ("two", "not an integer")):
        with pytest.raises(OptionError, match=match):
            cat.create_table("db.x", SCHEMA, primary_keys=["id", "p"],
                             options={"bucket": "1", "compaction.parallelism": bad})
    with pytest.raises(OptionError, match=r"Unknown table option 'compaction\.paralelism'"):
        cat.create_table("db.x", SCHEMA, primary_keys=["id", "p"],
                         options={"bucket": "1", "compaction.paralelism": "2"})
