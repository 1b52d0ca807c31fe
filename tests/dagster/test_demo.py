"""`make demo` end to end (Dagster, spark-submit jobs through Pipes, a Paimon table), run from a
folder outside the repository the way a user runs it on their own lake.yaml."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_demo_runs_end_to_end_in_a_folder_outside_the_repository(tmp_path) -> None:
    shutil.copy(REPO / "lake.yaml", tmp_path / "lake.yaml")
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "LAKE_CONFIG")}
    env["PYSPARK_PYTHON"] = sys.executable
    run = subprocess.run([sys.executable, "-m", "lake_assets.demo", "--workdir", str(tmp_path), "--days", "2"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    out = run.stdout
    assert "Done in" in out, out[-3000:]
    assert f"{tmp_path}/warehouse/airline.db/flights" in out
    assert "sensor requested 1 run(s)" in out and "max 1 sorted runs in a bucket" in out
    assert "(5 succeeded)" in out
    # everything the demo made is in the work folder, nothing in the repository's
    assert (tmp_path / "warehouse" / "airline.db" / "flights" / "snapshot").is_dir()
    assert (tmp_path / "dagster_home").is_dir()
