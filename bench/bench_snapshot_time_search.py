"""Finding a snapshot by time: Paimon's binary search (`SnapshotManager.earlier_or_equal_time`)
against an older `snapshot_manager.py`'s scan from the newest back (``newer_than_or_equal_time``).

Usage: ``python bench/bench_snapshot_time_search.py <old snapshot_manager.py> [n ...]`` (e.g. from
``git show main:lake_assets/store/snapshot_manager.py > /tmp/sm_base.py``). For each table size
``n`` (default 1000 and 5000 snapshot files on local disk; a snapshot every 10 ms), alternates
the two, five runs each of a lookup at 10 %, 50 % and 90 % of the table's history, and prints
the snapshot files each read (on S3, one GET each) and the median CPU seconds
(``time.process_time``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from types import ModuleType

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.snapshot_manager import SnapshotManager


def _load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("snapshot_manager_base", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _table(n: int) -> tuple[str, SnapshotManager]:
    """A table with snapshots 1..n, snapshot 1 a real commit and the others its copies."""
    root = tempfile.mkdtemp()
    catalog = Catalog(root)
    catalog.create_database("db")
    t = catalog.create_table("db.t", pa.schema([("id", pa.int64())]))
    t.write_arrow(pa.table({"id": [1]}))
    first = t.snapshot_manager.snapshot(1)
    for sid in range(1, n + 1):
        snap = dataclasses.replace(first, id=sid, time_millis=1_000_000 + 10 * sid)
        t.file_io.overwrite_atomic(t.paths.snapshot_file(sid), snap.to_json().encode())
    t.snapshot_manager.write_latest_hint(n)
    t.snapshot_manager.write_earliest_hint(1)
    return root, t.snapshot_manager


def _run(find: Callable[[int], Snapshot | None], probes: list[int], sm: SnapshotManager) -> tuple[float, int]:
    reads = 0
    read_bytes = sm.file_io.read_bytes

    def counting(path: str) -> bytes:
        nonlocal reads
        reads += "/snapshot/snapshot-" in path
        return read_bytes(path)

    sm.file_io.read_bytes = counting  # type: ignore[method-assign]
    try:
        start = time.process_time()
        for p in probes:
            assert find(p) is not None
        return time.process_time() - start, reads
    finally:
        sm.file_io.read_bytes = read_bytes  # type: ignore[method-assign]


def main() -> None:
    base = _load(sys.argv[1])
    sizes = [int(x) for x in sys.argv[2:]] or [1000, 5000]
    for n in sizes:
        root, sm = _table(n)
        old = base.SnapshotManager(sm.file_io, sm.paths, "db.t")
        probes = [1_000_000 + 10 * (n * k // 10) + 5 for k in (1, 5, 9)]
        times: dict[str, list[float]] = {"base": [], "new": []}
        reads: dict[str, int] = {}
        for _ in range(5):
            for name, find in (("base", old.newer_than_or_equal_time), ("new", sm.earlier_or_equal_time)):
                spent, count = _run(find, probes, sm)
                times[name].append(spent)
                reads[name] = count
        for name in ("base", "new"):
            runs = " ".join(f"{x:.4f}" for x in sorted(times[name]))
            print(f"n={n} {name}: snapshot files read for 3 lookups {reads[name]}, "
                  f"median CPU s {statistics.median(times[name]):.4f} ({runs})")
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
