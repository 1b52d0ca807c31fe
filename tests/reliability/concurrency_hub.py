"""Starts the roles of one concurrency run (``test_concurrency.py``) as processes forked from one hub.

Run as ``python concurrency_hub.py <plan JSON file>``; the plan is ``{"warehouse", "opts", "scratch",
"roles": [{"name", "role", "params", "out", "err"}]}``. Each role used to be a fresh interpreter that
imported lake_assets and pyarrow and then ran every code path once on a scratch table
(``concurrency_workers.warm_up``): about 1.1 CPU s a process, 40-odd processes a module. The hub does
that once and forks a child per role, so each child starts where a fresh, warmed-up process stood: its
own process (pid, file descriptors, connections, locks), nothing opened on the warehouse before the
fork, Python's ``random`` reseeded by the interpreter and lake_assets' read pool dropped
(``os.register_at_fork``), pyarrow's pools restarted by pyarrow. Each child then connects, reports
``ready``, waits for the common ``go`` and runs its role exactly as ``concurrency_workers`` runs it.

A child may ask for another process by dropping a request in ``<spawn>/<name>.json`` (the two-phase
writer's standbys, `concurrency_workers.HubChild`): the hub forks it too, from its own state, never
from the asking process, which holds live connections a fork would copy. For every child that ends
the hub writes ``<out>.rc`` (its exit code, negative for a signal) and exits once all have. Started in
its own session, so the test can end the hub and every child at once.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import NoReturn

from tests.reliability import concurrency_workers as workers


def _run_child(plan: dict, spec: dict) -> NoReturn:
    """In the forked child: the role's process, from ``ready`` to its report, then ``os._exit``."""
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    err = os.open(spec["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(err, 2)  # a chatty child writes to its own file, as a fresh process did
    code = 0
    try:
        workers.wait_for_start(spec["role"], plan["warehouse"], plan["opts"], spec["params"], warmed=True)
        result = getattr(workers, spec["role"])(plan["warehouse"], plan["opts"], spec["params"])
        Path(spec["out"]).write_text(json.dumps(result))
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _fork(plan: dict, spec: dict) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _run_child(plan, spec)
    return pid


def main(plan_path: str) -> None:
    plan = json.loads(Path(plan_path).read_text())
    if plan["opts"]:
        import s3fs  # noqa: F401  (imported, never instantiated: no event loop nor client to copy)
    workers.warm_up(Path(plan["scratch"]))
    spawn = Path(plan["spawn"])
    spawn.mkdir(parents=True, exist_ok=True)
    workers.HUB_SPAWN = spawn  # inherited by every child: they ask for their standbys here
    children = {_fork(plan, spec): spec for spec in plan["roles"]}
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid:
            spec = children.pop(pid)
            rc = Path(spec["out"] + ".rc")
            tmp = rc.with_suffix(".tmp")
            tmp.write_text(str(os.waitstatus_to_exitcode(status)))
            tmp.replace(rc)
            continue
        for request in sorted(spawn.glob("*.json")):  # a standby asked for by a two-phase writer
            spec = json.loads(request.read_text())
            request.unlink()
            children[_fork(plan, spec)] = spec
        time.sleep(0.02)


if __name__ == "__main__":
    main(sys.argv[1])
