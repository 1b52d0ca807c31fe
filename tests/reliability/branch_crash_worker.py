"""Runs one branch operation and SIGKILLs itself before its Nth change to storage.

Usage: python branch_crash_worker.py WAREHOUSE OP KILL_AT PARAMS_JSON

KILL_AT 0 never kills. With ``pause_at`` and ``gate`` in the parameters the operation stops at
that named fault point until the test lets it go on (``gate``/go): one side of a race between
processes.

Every change the process makes to the local store - a file written, replaced, created if absent,
renamed or deleted, a directory removed - counts as one step (a tree deletion counts each file and
directory, deepest first, as ``shutil.rmtree`` removes them); the process kills itself (SIGKILL)
right before step ``KILL_AT``. A run that ends without reaching it prints ``steps=<n>`` on stdout,
so a test walks ``KILL_AT`` = 1, 2, ... until the operation completes: every point where a crash
can leave the store is visited, including those the operations name no fault point for.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.io.file_io import FileIO, PreparedCreate
from lake_assets.io.local import LocalFileIO

_ON_BRANCH = ("write", "compact", "rollback", "delete_tag", "alter", "expire")
_MUTATIONS = ("write_bytes", "overwrite_atomic", "try_create", "open_output", "rename", "delete",
              "delete_dir_if_empty")


def _install(kill_at: int) -> list[int]:
    steps = [0]

    def step() -> None:
        steps[0] += 1
        if steps[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    def counted(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: LocalFileIO, *args: Any, **kwargs: Any) -> Any:
            step()
            return fn(self, *args, **kwargs)
        return wrapper

    for name in _MUTATIONS:
        setattr(LocalFileIO, name, counted(getattr(LocalFileIO, name)))

    def prepare_create(self: LocalFileIO, path: str, data: bytes) -> PreparedCreate:
        # the put is counted when it is made, not when it is prepared
        return FileIO.prepare_create(self, path, data)

    def delete_many(self: LocalFileIO, paths: Iterable[str]) -> int:
        return sum(1 for p in paths if self.delete(p))

    def delete_tree(self: LocalFileIO, path: str) -> None:
        if os.path.islink(path) or not os.path.isdir(path):
            if os.path.lexists(path):
                self.delete(path)
            return
        for directory, dirs, files in os.walk(path, topdown=False):
            for f in files:
                self.delete(os.path.join(directory, f))
            for d in dirs:
                self.delete_dir_if_empty(os.path.join(directory, d))
        self.delete_dir_if_empty(path)

    LocalFileIO.prepare_create = prepare_create  # type: ignore[method-assign]
    LocalFileIO.delete_many = delete_many  # type: ignore[method-assign]
    LocalFileIO.delete_tree = delete_tree  # type: ignore[method-assign]
    return steps


def run(warehouse: str, op: str, params: dict[str, Any], hook: Callable[[str], None] | None = None) -> None:
    """Run ``op`` once (what a test also calls in-process to re-run it); ``hook`` is told every
    named fault point of the operation (`FileStore.fault_point`)."""
    cat = Catalog(warehouse)
    main = cat.get_table("db.t")
    t = cat.get_table(f"db.t$branch_{params.get('branch', 'b1')}") if op in _ON_BRANCH else main
    t.fault_hook = hook
    branch = params.get("branch", "b1")
    if op == "write":
        writer = t.new_writer(params["user"])
        writer.write_arrow(pa.table(params["data"], schema=t.arrow_schema))
        t.new_committer(params["user"]).commit(writer.prepare_commit(), params["identifier"])
    elif op == "compact":
        t.compact(full=True)
    elif op == "rollback":
        t.rollback_to(snapshot_id=params["snapshot_id"])
    elif op == "delete_tag":
        t.delete_tag(params["tag"])
    elif op == "expire":
        t.expire_snapshots(retain_min=1, retain_max=1, older_than=datetime.now() + timedelta(days=1))
    elif op == "alter":
        t.update_schema().add_column(params["column"], pa.int64()).commit()
    elif op == "create_branch":
        main.create_branch(branch, params.get("tag"))
    elif op == "delete_branch":
        main.delete_branch(branch)
    elif op == "fast_forward":
        main.fast_forward(branch)
    else:
        raise SystemExit(f"unknown op {op}")


def _pause_at(point: str, gate: str) -> Callable[[str], None]:
    """A hook that, at ``point``, creates ``gate``/reached and waits for ``gate``/go (a test runs
    its side of a race meanwhile)."""
    def hook(step: str) -> None:
        if step != point:
            return
        Path(gate, "reached").touch()
        deadline = time.monotonic() + 120
        while not Path(gate, "go").exists():
            if time.monotonic() > deadline:
                raise SystemExit(f"no go at {point}")
            time.sleep(0.02)
    return hook


def main() -> None:
    warehouse, op, kill_at, params = sys.argv[1:5]
    steps = _install(int(kill_at))
    params_d = json.loads(params)
    pause = params_d.get("pause_at")
    run(warehouse, op, params_d, None if pause is None else _pause_at(pause, params_d["gate"]))
    print(f"steps={steps[0]}")


if __name__ == "__main__":
    main()
