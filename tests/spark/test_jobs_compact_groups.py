"""The compact job runs many small units in few Spark tasks, each unit exactly once."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest

from lake_assets.spark.jobs import compact
from lake_assets.spark.jobs.errors import EXIT_OK
from tests.spark.test_jobs_common import make_pk_table, run_job_main, sorted_rows, write_batches

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@dataclass(frozen=True)
class Unit:
    """Stands in for a CompactionTask: grouping looks at the input size only."""

    name: int
    input_bytes: int


def test_group_units_is_balanced_and_complete() -> None:
    units = [Unit(i, size) for i, size in enumerate([50, 10, 10, 10, 40, 30, 5, 5, 5, 5] * 10)]
    groups = compact.group_units(units, slots=2, target_bytes=10**9)  # type: ignore[arg-type]
    assert len(groups) == 8  # 2 slots × 4 tasks each
    assert Counter(u for g in groups for u in g) == Counter(units)
    loads = [sum(u.input_bytes for u in g) for g in groups]
    assert max(loads) - min(loads) <= 50  # biggest first into the least loaded: within one unit

    # a large input gets more tasks (input / target), never more than one per unit
    assert len(compact.group_units(units, slots=1, target_bytes=100)) == 17  # ceil(1700 / 100)
    assert len(compact.group_units(units[:3], slots=4)) == 3
    assert compact.group_units([], slots=4) == []


def test_compact_job_packs_small_units(capsys, spark, tmp_path) -> None:
    wh = str(tmp_path)
    table = make_pk_table(wh, options={"bucket": "8"})  # 2 partitions × 8 buckets = 16 small units
    write_batches(table, 3, rows=200)
    expected = sorted_rows(table)
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.t", "--full")
    assert code == EXIT_OK, out
    slots = spark.sparkContext.defaultParallelism
    assert out["tasks"] == 16 and out["spark_tasks"] == min(16, 4 * slots)
    assert out["health_after"]["level0_files"] == 0
    assert sorted_rows(table) == expected
