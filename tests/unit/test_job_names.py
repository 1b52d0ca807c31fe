"""Every job names itself one way: its module's name in the JSON summary (``"job"``), and in
``usage:`` how the user started it (the script under spark-submit, the module under ``python -m``)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

from lake_assets.spark.jobs.args import program_name

REPO = Path(__file__).resolve().parents[2]


def test_job_constants_are_module_names() -> None:
    scripts = sorted(p.stem for p in (REPO / "jobs").glob("*.py"))
    names = {s: importlib.import_module(f"lake_assets.spark.jobs.{s}").JOB for s in scripts}
    assert names == {s: s for s in scripts}  # remove_orphans was "remove-orphans" (session 17)


def test_program_name_says_how_the_job_was_started() -> None:
    module_file = str(REPO / "lake_assets" / "spark" / "jobs" / "expire.py")
    assert program_name("expire", "/opt/lake/jobs/expire.py") == "/opt/lake/jobs/expire.py"
    assert program_name("expire", module_file) == "python -m lake_assets.spark.jobs.expire"
    assert program_name("expire", "/usr/bin/pytest") == "lake_assets.spark.jobs.expire"


def test_help_under_the_entry_script_names_the_script() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    probe = subprocess.run([sys.executable, "-c", "import lake_assets; print(lake_assets.__file__)"],
                           env=env, capture_output=True, text=True, check=True)
    assert probe.stdout.startswith(str(REPO))  # the subprocess imports this checkout
    done = subprocess.run([sys.executable, "jobs/remove_orphans.py", "--help"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: jobs/remove_orphans.py "), done.stdout
    assert "--allow-recent" in done.stdout
