"""Runs ``crash_worker.py`` as its own process, forked from a server that imported lake_assets once.

A crash test kills a real process: the worker signals itself (SIGKILL, or SIGINT for Ctrl-C) at a
named step of a commit or of maintenance, and the test then inspects what the dead process left on
disk. Starting a fresh interpreter for each of the ~60 kills costs about a second of CPU, nearly all
of it importing pyarrow, pandas and lake_assets. The fork server (``tests/interop/driver_forkserver.py``)
imports them once and forks a child per kill: the child is a separate process with its own pid,
environment, working directory and exit status, killed by the same signal at the same step; only
the imports are shared (nothing is run before the fork). An uncaught KeyboardInterrupt ends the
child by SIGINT, as it ends ``python crash_worker.py``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.interop.driver_server import DriverForkServer

WORKER = Path(__file__).with_name("crash_worker.py")
REPO = Path(__file__).resolve().parents[2]
# crash_worker's imports and those of the operations it runs (imported lazily by lake_assets)
PRELOAD = (
    "pyarrow",
    "pyarrow.parquet",
    "numpy",
    "pandas",
    "lake_assets",
    "lake_assets.ops.write",
    "lake_assets.ops.commit",
    "lake_assets.ops.compact",
    "lake_assets.ops.expire",
    "lake_assets.ops.orphans",
    "lake_assets.ops.tagging",
    "lake_assets.ops.read",
)


def run_crash_worker(argv: Sequence[str], *, timeout: float = 120, script: Path = WORKER) -> tuple[int, str, str]:
    """``python crash_worker.py *argv`` with the repository on PYTHONPATH: (exit code, stdout, stderr)."""
    server = DriverForkServer.for_python(Path(sys.executable), PRELOAD, isolated=False)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return server.call(script, argv, env, timeout=timeout)
