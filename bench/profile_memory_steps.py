"""Profile bench_memory's deduplicate table at one size: load, 10% upsert and full compaction,
each under cProfile in every thread (``threading.Thread.run`` wrapped, stats merged), top
functions by own time. Used to compare sizes (issue 17 §2: time per million rows at 2M vs 16M).

    .venv/bin/python bench/profile_memory_steps.py 2000000
"""

from __future__ import annotations

import cProfile
import io
import pstats
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.memory_tables import OPTIONS, SCHEMA, load_batches, upsert_batches, write_batches
from lake_assets import Catalog

_profiles: list[cProfile.Profile] = []
_thread_run = threading.Thread.run


def _profiled_run(self: threading.Thread) -> None:
    profile = cProfile.Profile()
    _profiles.append(profile)
    profile.enable()
    try:
        _thread_run(self)
    finally:
        profile.disable()


def main(rows: int, top: int = 22) -> None:
    threading.Thread.run = _profiled_run  # type: ignore[method-assign]  # pool threads too
    warehouse = tempfile.mkdtemp(prefix="profile-memory-")
    try:
        catalog = Catalog(warehouse)
        catalog.create_database("db")
        table = catalog.create_table("db.t", SCHEMA, primary_keys=["id", "part"], partition_keys=["part"],
                                     options=OPTIONS)
        steps: list[tuple[str, Callable[[], object]]] = [
            ("load", lambda: write_batches(table, load_batches(rows, 1), "load")),
            ("upsert", lambda: write_batches(table, upsert_batches(rows, 2), "upsert")),
            ("compact", lambda: table.compact(full=True)),
        ]
        for name, run in steps:
            _profiles.clear()
            caller = cProfile.Profile()
            _profiles.append(caller)
            start = time.perf_counter()
            caller.enable()
            run()
            caller.disable()
            seconds = time.perf_counter() - start
            out = io.StringIO()
            pstats.Stats(*_profiles, stream=out).sort_stats("tottime").print_stats(top)
            print(f"=== {name}@{rows}: {seconds:.1f} s, {seconds / rows * 1e6:.2f} s per M table rows, "
                  f"{len(_profiles)} threads")
            print("\n".join(line for line in out.getvalue().splitlines()[6:] if line.strip()))
    finally:
        threading.Thread.run = _thread_run  # type: ignore[method-assign]
        shutil.rmtree(warehouse, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
