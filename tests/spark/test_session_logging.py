"""A session reading a glob prints no Java FileNotFoundException (Spark's metadata-directory probe)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from lake_assets.spark.session import build_session
spark = build_session(master="local[1]", conf={"spark.ui.enabled": "false"})  # default WARN, as the jobs
print(spark.read.parquet(sys.argv[1]).count())
spark.stop()
"""


def test_glob_read_logs_no_file_not_found(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    (tmp_path / "day").mkdir()
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "day" / "part-0.parquet")
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "day" / "*.parquet")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().splitlines()[-1] == "2"
    assert "FileNotFoundException" not in run.stderr and "Assume no metadata directory" not in run.stderr
