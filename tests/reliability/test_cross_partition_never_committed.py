"""A cross-partition writer's round that is never committed (issue 14): what becomes of its files.

Paimon's writer deletes, when closed, the files it wrote since its last ``prepareCommit``
(``MergeTreeWriter.close``); the files of a prepared round are the committer's, whose ``abort``
deletes them. Ours does the same where nothing can have landed: `TableWriter.close` deletes the
files a full write buffer flushed since the last `prepare_commit`, `TableCommitter.abort` those of a
prepared round. A process killed mid-commit leaves its round's outcome unknown to everyone: its
files stay (no later writer or expiry deletes them) until orphan removal finds that no snapshot
references them; its lease stays too until it runs out. Against a dict model of what landed."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog, Table
from lake_assets.ops.expire import expire_snapshots

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("name", pa.string()),
                    pa.field("dt", pa.string(), nullable=False)])
ROOT = Path(__file__).resolve().parents[2]


def _table(tmp_path: Path) -> Table:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    # a 64 KiB buffer that does not spill: a few thousand rows flush level-0 files while writing
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"], partition_keys=["dt"],
                            options={"write-buffer-size": "64 kb", "write-buffer-spillable": "false",
                                     "dynamic-bucket.target-row-num": "100000"})


def _rows(ids: range, name: str, dt: str) -> pa.Table:
    return pa.table({"id": list(ids), "name": [name * 20] * len(ids), "dt": [dt] * len(ids)}, schema=SCHEMA)


def _files(t: Table) -> tuple[set[str], set[str]]:
    """(data files the latest snapshot references, data files in the table's directory)."""
    live = {f.file_name for s in t.refresh().plan() for f in s.files}
    return live, {p.name for p in Path(t.paths.root).rglob("data-*")}


def _model(t: Table) -> dict[int, tuple[str, str]]:
    rows = t.refresh().to_arrow().to_pylist()
    assert len({r["id"] for r in rows}) == len(rows), "a key lives twice"
    return {r["id"]: (r["name"], r["dt"]) for r in rows}


def test_a_closed_or_aborted_round_leaves_no_file(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.write_arrow(_rows(range(10), "a", "a"))
    model = _model(t)
    w = t.refresh().new_writer("u")
    w.write_arrow(_rows(range(5, 4000), "b", "b"))  # keys 5-9 move; the buffer flushes files
    live, present = _files(t)
    assert present - live  # files written before any prepare_commit
    w.close()  # never prepared: deleted, as Paimon's writer close deletes them
    live, present = _files(t)
    assert present == live and _model(t) == model
    assert t.store.consumer_manager().writer_leases() == {}

    w = t.refresh().new_writer("u")
    w.write_arrow(_rows(range(5, 4000), "c", "c"))
    messages = w.prepare_commit()
    w.close()  # a prepared round is the committer's
    assert _files(t)[1] - _files(t)[0]
    t.new_committer("u").abort(messages)  # a clean abort: nothing can have landed
    live, present = _files(t)
    assert present == live and _model(t) == model


def test_a_round_killed_mid_commit_keeps_its_files_for_orphan_removal(tmp_path: Path) -> None:
    t = _table(tmp_path)
    t.write_arrow(_rows(range(10), "a", "a"))
    model = _model(t)
    script = textwrap.dedent(f"""
        import os, signal, sys
        import pyarrow as pa
        import lake_assets
        from lake_assets import Catalog
        print(lake_assets.__file__, flush=True)
        t = Catalog({str(tmp_path / "wh")!r}).get_table("db.t")
        schema = t.arrow_schema
        w = t.new_writer("killed")
        ids = list(range(5, 4000))
        w.write_arrow(pa.table({{"id": ids, "name": ["k" * 20] * len(ids), "dt": ["k"] * len(ids)}}, schema=schema))
        messages = w.prepare_commit()
        def hook(step):
            if step == "commit.before_snapshot":
                os.kill(os.getpid(), signal.SIGKILL)  # mid-commit: manifests written, no snapshot
        t.store.fault_hook = hook
        t.new_committer("killed").commit(messages, 1)
        sys.exit(3)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert Path(proc.stdout.splitlines()[0]).resolve().is_relative_to(ROOT)  # this checkout's lake_assets
    live, present = _files(t)
    in_doubt = present - live
    assert in_doubt and _model(t) == model  # not landed, files kept: nobody can know
    (lease,) = t.store.consumer_manager().writer_leases().values()
    assert not lease.expired  # the killed writer's lease holds until it runs out
    # a new writer and an expiry delete none of them
    with t.refresh().new_writer("next") as w:
        w.write_arrow(_rows(range(0, 3), "n", "n"))
        t.new_committer("next").commit(w.prepare_commit(), 1)
    model.update({i: ("n" * 20, "n") for i in range(3)})
    now_ms = lease.lease_until_ms + 1  # past the lease: our expiry drops it
    expire_snapshots(t.refresh().store, retain_min=1, retain_max=1, older_than_ms=now_ms, now_ms=now_ms)
    assert t.store.consumer_manager().writer_leases() == {}
    assert in_doubt <= _files(t)[1] and _model(t) == model
    # orphan removal: the files no snapshot references, older than its bound
    removed = t.refresh().remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert {Path(p).name for p in removed.paths if Path(p).name.startswith("data-")} == in_doubt
    live, present = _files(t)
    assert present == live and _model(t) == model
