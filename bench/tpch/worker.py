"""Subprocess entry point: run one phase of one system and record it with `measure.Meter`.

    python bench/tpch/worker.py --system lake --phase write --plan PLAN.json --warehouse DIR --result R.json

Runs under ``.venv/bin/python`` for every system but pypaimon, which runs under
``.venv-paimon/bin/python -I`` (pyarrow 19; lake_assets is never imported there). ``--profile-steps``
wraps steps in cProfile and dumps ``<step>.prof`` next to the result (their timings are then
marked ``profiled`` and not reported).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import json
import pstats
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # the package is imported as bench.tpch, never its modules as top-level names
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from bench.tpch.measure import Meter  # noqa: E402
from bench.tpch.workload import INPUT_ROW_GROUP, Plan  # noqa: E402

SYSTEM_MODULES = {
    "lake": "bench.tpch.systems.sys_lake",
    "spark": "bench.tpch.systems.sys_spark",
    "pypaimon": "bench.tpch.systems.sys_paimon",
    "delta": "bench.tpch.systems.sys_delta",
    "pyarrow": "bench.tpch.systems.sys_arrow",
    "duckdb": "bench.tpch.systems.sys_duckdb",
    "polars": "bench.tpch.systems.sys_polars",
}
TABLE = "db.lineitem"


@dataclass
class Context:
    """What a phase gets: the plan, the meter, its warehouse and options from the orchestrator."""

    plan: Plan
    meter: Meter
    warehouse: Path
    options: dict[str, Any] = field(default_factory=dict)
    profile_steps: tuple[str, ...] = ()
    profile_dir: Path | None = None

    @contextmanager
    def step(self, name: str, rows: int = 0) -> Iterator[dict[str, Any]]:
        """`Meter.step`, under cProfile (every thread) when ``name`` is a step to profile."""
        if name not in self.profile_steps:
            with self.meter.step(name, rows) as extra:
                yield extra
            return
        with self.meter.step(name, rows) as extra, profiled(self.profile_dir / f"{name}.prof"):  # type: ignore[operator]
            extra["profiled"] = True
            yield extra

    def check(self, name: str, problem: str | None) -> bool:
        return self.meter.check(name, problem)


@contextmanager
def profiled(out: Path) -> Iterator[None]:
    """cProfile the body in this thread and in every thread it starts (writers flush in thread
    pools); all profiles are merged into one stats file."""
    main = cProfile.Profile()
    others: list[cProfile.Profile] = []

    def start_in_thread(*_: object) -> None:
        profiler = cProfile.Profile()
        others.append(profiler)
        profiler.enable()  # replaces this hook for the new thread

    threading.setprofile(start_in_thread)
    main.enable()
    try:
        yield
    finally:
        main.disable()
        threading.setprofile(None)  # type: ignore[arg-type]
        stats = pstats.Stats(main)
        for profiler in others:
            profiler.disable()
            stats.add(profiler)
        stats.dump_stats(str(out))


def input_reader(path: str, columns: list[str] | None = None) -> pa.RecordBatchReader:
    """An input file streamed in `INPUT_ROW_GROUP`-row batches (the same for every system).

    Without ``pre_buffer=False`` pyarrow's read cache grows over the whole file (~250 MiB at SF 1),
    which would show up as every system's write memory."""
    pf = pq.ParquetFile(path, pre_buffer=False)
    schema = pf.schema_arrow if columns is None else pa.schema([pf.schema_arrow.field(c) for c in columns])
    return pa.RecordBatchReader.from_batches(schema, pf.iter_batches(batch_size=INPUT_ROW_GROUP, columns=columns))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", required=True, choices=sorted(SYSTEM_MODULES))
    parser.add_argument("--phase", required=True)
    parser.add_argument("--plan", required=True, type=Path)
    parser.add_argument("--warehouse", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    parser.add_argument("--options", default="{}", help="JSON object of system options")
    parser.add_argument("--profile-steps", default="", help="comma-separated steps to cProfile")
    args = parser.parse_args(argv)

    module = importlib.import_module(SYSTEM_MODULES[args.system])
    phases: dict[str, Callable[[Context], None]] = module.PHASES
    meter = Meter(args.system, args.result, tree=getattr(module, "TREE_MEMORY", False))
    ctx = Context(Plan.load(args.plan), meter, args.warehouse, json.loads(args.options),
                  tuple(s for s in args.profile_steps.split(",") if s), args.result.parent)
    meter.info.setdefault("versions", {}).update(module.versions())
    phases[args.phase](ctx)
    meter.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
