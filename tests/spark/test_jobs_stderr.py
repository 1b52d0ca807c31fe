"""Job logs under spark-submit with `2> file` are not overwritten by the JVM's own stderr lines.

A parent process stands in for spark-submit: its stderr is a file, the job's stdout and stderr are
one pipe (as PythonRunner starts it), and the parent writes to its stderr after the job logged.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import logging, sys
from lake_assets.spark.jobs.logs import setup_logging
from lake_assets.spark.jobs.stderr import separate_stderr
separate_stderr()
setup_logging()
for i in range(5):
    logging.getLogger("lake_assets.jobs").info("job log line %d", i)
sys.stderr.flush()
print('{"status": "ok"}')
"""

PARENT = """
import subprocess, sys
child = subprocess.run([sys.executable, "-c", sys.argv[1]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
sys.stderr.write("JVM stderr line written after the job\\n" * 3)   # at the JVM's own file offset
sys.stderr.flush()
sys.stdout.write(child.stdout)                                    # what spark-submit relays to stdout
"""


def _run(tmp_path: Path, append: bool) -> tuple[str, str]:
    err = tmp_path / "err.log"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_GATEWAY_PORT": "1"}  # "under spark-submit"
    with open(err, "a" if append else "w") as f:
        out = subprocess.run([sys.executable, "-c", PARENT, CHILD], stderr=f, stdout=subprocess.PIPE,
                             env=env, text=True, timeout=120, check=True).stdout
    return err.read_text(), out


def test_logs_survive_stderr_redirected_to_a_file(tmp_path: Path) -> None:
    err, out = _run(tmp_path, append=False)
    both = err + out
    assert all(f"job log line {i}" in both for i in range(5)), (err, out)
    assert err.count("JVM stderr line") == 3
    assert out.strip().splitlines()[-1] == '{"status": "ok"}'  # the summary is still the last line


def test_logs_go_to_an_appended_stderr_file(tmp_path: Path) -> None:
    err, out = _run(tmp_path, append=True)
    assert all(f"job log line {i}" in err for i in range(5)) and "job log line" not in out
    assert err.count("JVM stderr line") == 3 and out.strip() == '{"status": "ok"}'
