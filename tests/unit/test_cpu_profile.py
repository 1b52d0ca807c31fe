"""tests/cpu_profile.py counts the CPU of an orphaned grandchild (pyspark's JVM after its launcher
exits) and never takes the exit status of a child that pytest's own code waits for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The launcher starts a worker that burns ~0.6 CPU s and exits without waiting for it, as pyspark's
# does with the JVM; the same test's own child exits with 3 and is waited for only afterwards.
_INNER = textwrap.dedent('''
    import os, subprocess, sys, time

    BURN = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.6: pass"
    LAUNCHER = ("import subprocess, sys, time\\n"
                f"print(subprocess.Popen([sys.executable, '-c', {BURN!r}]).pid, flush=True)\\n"
                "time.sleep(0.5)")  # lives many polls, as a job's launcher lives for the whole job

    def test_orphan_and_own_child():
        own = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
        orphan = int(subprocess.run([sys.executable, "-c", LAUNCHER], check=True, capture_output=True).stdout)
        deadline = time.monotonic() + 60
        while os.path.exists(f"/proc/{orphan}"):  # a zombie until someone reaps it
            assert time.monotonic() < deadline, "the orphan was never reaped"
            time.sleep(0.05)
        assert own.wait() == 3  # not reaped by the profiler: subprocess still sees its status
''')


def test_the_profile_counts_an_orphans_cpu_and_leaves_pytests_own_children_alone(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(_INNER)
    log = tmp_path / "cpu.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO), "LAKE_TEST_CPU_LOG": str(log), "LAKE_TEST_CPU_POLL_S": "0.02"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.cpu_profile",
                          "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_inner.py")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["reaped"] for r in records if r["event"] == "orphans"] == [1]
    [module] = [r for r in records if r["event"] == "module"]
    assert sum(module["end"]) - sum(module["start"]) >= 0.6  # the orphan's burn is in the module's CPU
