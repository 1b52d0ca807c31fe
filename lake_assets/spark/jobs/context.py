"""The state of one job run (`JobContext`): arguments, session, table, Spark UI labels, deletes."""

from __future__ import annotations

import argparse
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lake_assets.io.file_io import FileIO
from lake_assets.spark.jobs.errors import Phase
from lake_assets.spark.jobs.logs import log
from lake_assets.spark.jobs.table_ref import TableRef
from lake_assets.table import Table

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

# Deleting more files than this spreads the deletes over executors.
DISTRIBUTED_DELETE_MIN = 1000
DELETE_BATCH = 500


def _delete_batch(warehouse: str, storage: tuple[tuple[str, Any], ...], table_root: str, paths: list[str]) -> int:
    """Runs on an executor: delete one batch of paths (paths as the warehouse's FileIO spells them),
    none through a link out of the table (the driver's check cannot hold for another process)."""
    file_io, _ = FileIO.for_url(warehouse, **dict(storage))
    file_io.confine_to_table(table_root)
    return file_io.delete_many(paths)


@dataclass
class JobContext:
    """The state of one job run: arguments, session, table, and the Spark UI labels."""

    job: str
    args: argparse.Namespace
    spark: SparkSession
    ref: TableRef
    table: Table
    started: float = field(default_factory=time.perf_counter)
    phase: Phase = "setup"
    group_id: str = field(default_factory=lambda: f"lake_assets-{uuid.uuid4().hex[:12]}")
    distributed_delete_min: int = DISTRIBUTED_DELETE_MIN
    owns_session: bool = False
    # what Dagster passed through Pipes (`lake_assets.job_checks`'s extras), empty otherwise
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def sc(self) -> SparkContext:
        """The session's SparkContext."""
        return self.spark.sparkContext

    def start_run(self) -> None:
        """Input validated: from here on errors are data, conflict or unexpected errors."""
        self.phase = "run"

    def describe(self, text: str) -> None:
        """Label the next Spark jobs in the UI (jobs and stages pages) and log the step."""
        label = f"lake_assets {self.job} {self.table.name}: {text}"
        self.sc.setJobDescription(label)
        log.info(label)

    def delete_files(self, paths: list[str]) -> int:
        """Delete paths: in this process when few, else in batches spread over the executors."""
        if not paths:
            return 0
        # Every delete of a job is proven inside the table first (through symlinks on a local disk).
        self.table.paths.ensure_inside(paths, resolve_links=self.table.file_io.has_symlinks)
        if len(paths) < self.distributed_delete_min:
            return self.table.file_io.delete_many(paths)
        batches = [paths[i:i + DELETE_BATCH] for i in range(0, len(paths), DELETE_BATCH)]
        slots = max(1, self.sc.defaultParallelism)
        self.describe(f"delete {len(paths)} files in {len(batches)} batches")
        warehouse, storage, root = self.ref.warehouse, self.ref.storage_options, self.table.paths.root
        counts = (
            self.sc.parallelize(batches, min(len(batches), slots * 4))
            .map(lambda batch: _delete_batch(warehouse, storage, root, batch))
            .collect()
        )
        return sum(counts)
