"""docs/spark.md describes every Spark job shipped in jobs/: its row in the table and its section."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COUNTS = {5: "Five", 6: "Six", 7: "Seven", 8: "Eight"}


def test_every_job_is_documented() -> None:
    jobs = sorted(p.stem for p in (REPO / "jobs").glob("*.py"))
    text = (REPO / "docs" / "spark.md").read_text()
    assert text.count(f"{COUNTS[len(jobs)]} maintenance and ingest jobs") == 1
    rows = re.findall(r"^\| `(\w+)` \|", text.split("## Common contract", 1)[0], flags=re.M)
    assert sorted(rows) == jobs
    assert [j for j in jobs if f"\n### {j}\n" not in text] == []
