"""The run queue of the repo's dagster.yaml, through pools only: a second compaction of a table waits
while the first runs (the table's compaction pool, also for runs without tags), and the Spark
maintenance runs of all tables share a global cap (pool lake_maintenance, its limit set with
`dagster instance concurrency set` as `make dagster` does).

Runs of the code location loaded from workspace.yaml are submitted to the real instance
(QueuedRunCoordinator, SQLite in a temp DAGSTER_HOME); the queue daemon's own dequeue evaluation
decides what it would launch (the daemon is not running, so nothing is launched).
"""

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import WorkspaceFileTarget
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import QueuedRunCoordinatorDaemon

from lake_assets.defs.config import LakeConfig
from lake_assets.defs.names import COMPACTION_TABLE_TAG, MAINTENANCE_POOL
from lake_assets.defs.sensors import compaction_request
from tests.dagster.helpers import REPO

QUEUED = dg.DagsterRunStatus.QUEUED
STARTED = dg.DagsterRunStatus.STARTED


@dataclass
class Location:
    """The loaded code location: a request context for submitting and the matching Definitions."""

    context: object
    defs: dg.Definitions


def _submit(instance: dg.DagsterInstance, location: Location, job_name: str, tags: dict[str, str]) -> str:
    """Create a run of the code location's job and submit it, as the UI or a sensor tick does."""
    repo = location.context.get_code_location("lake_assets").get_repository("__repository__")
    remote_job = repo.get_full_job(job_name)
    run = instance.create_run_for_job(
        location.defs.resolve_job_def(job_name),
        tags={**remote_job.tags, **tags},
        remote_job_origin=remote_job.get_remote_origin(),
        job_code_origin=remote_job.get_python_origin(),
    )
    instance.submit_run(run.run_id, location.context)
    assert instance.get_run_by_id(run.run_id).status == QUEUED
    return run.run_id


def _start(instance: dg.DagsterInstance, run_id: str) -> None:
    """What the launched run reports first: RUN_START."""
    run = instance.get_run_by_id(run_id)
    instance.report_dagster_event(
        dg.DagsterEvent(event_type_value=dg.DagsterEventType.RUN_START.value, job_name=run.job_name),
        run_id=run_id,
    )
    assert instance.get_run_by_id(run_id).status == STARTED


def _would_launch(instance: dg.DagsterInstance) -> list[str]:
    daemon = QueuedRunCoordinatorDaemon(interval_seconds=1)
    runs = daemon._get_runs_to_dequeue(instance, instance.get_concurrency_config(), fixed_iteration_time=None)
    return [r.run_id for r in runs]


@pytest.fixture(scope="module")
def workspace(instance: dg.DagsterInstance, lake_path: Path, lake_defs: dg.Definitions) -> Iterator[Location]:
    """The repo's workspace.yaml loaded as `dagster dev` does (a code server for the test lake.yaml)."""
    previous = os.environ.get("LAKE_CONFIG")
    os.environ["LAKE_CONFIG"] = str(lake_path)
    try:
        with WorkspaceProcessContext(instance, WorkspaceFileTarget(paths=[str(REPO / "workspace.yaml")])) as ctx:
            yield Location(ctx.create_request_context(), lake_defs)
    finally:
        if previous is None:
            os.environ.pop("LAKE_CONFIG", None)
        else:
            os.environ["LAKE_CONFIG"] = previous


@pytest.fixture
def queue(instance: dg.DagsterInstance):
    """The session instance (repo dagster.yaml) with no active runs left behind."""
    yield instance
    for record in instance.get_run_records(dg.RunsFilter(statuses=[QUEUED, STARTED])):
        instance.report_run_canceled(record.dagster_run)


def test_instance_is_configured_from_the_repo_yaml(queue: dg.DagsterInstance) -> None:
    assert type(queue.run_coordinator).__name__ == "QueuedRunCoordinator"
    config = queue.get_concurrency_config()
    assert config.run_queue_config.tag_concurrency_limits == []  # pools do it, whatever launched the run
    assert config.pool_config.default_pool_limit == 1
    assert config.pool_config.pool_granularity.value == "run"
    assert not queue.telemetry_enabled


def _set_cap(dagster_home: Path, slots: int) -> None:
    """The documented command (docs/dagster.md, `make dagster`) against the test instance."""
    cli = str(Path(sys.executable).parent / "dagster")
    done = subprocess.run([cli, "instance", "concurrency", "set", MAINTENANCE_POOL, str(slots)],
                          env={**os.environ, "DAGSTER_HOME": str(dagster_home)}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_second_compaction_of_a_table_stays_queued(
    queue: dg.DagsterInstance, workspace: Location, lake_config: LakeConfig, dagster_home: Path
) -> None:
    _set_cap(dagster_home, 2)
    request = compaction_request(lake_config.table("db.orders"), 7, ["dt=2024-01-01"], full=False)  # sensor's
    first = _submit(queue, workspace, "db_orders_compaction_job", request.tags)
    # Dagster 1.13 gives a pool its default limit on the first queue pass that sees it, and enforces
    # it from the next pass on (the pass reads the configured pools before initializing new ones).
    assert _would_launch(queue) == [first]
    second = _submit(queue, workspace, "db_orders_compaction_job", {})
    assert _would_launch(queue) == [first]  # of two queued compactions of db.orders, one may go

    _start(queue, first)
    assert _would_launch(queue) == []  # the second waits while the first runs
    assert queue.get_run_by_id(second).status == QUEUED

    other = _submit(queue, workspace, "db_events_compaction_job", {})
    assert _would_launch(queue) == [other]  # another table's compaction is not held back
    assert queue.event_log_storage.get_concurrency_info("lake_compaction_db_orders").slot_count == 1

    queue.report_run_canceled(queue.get_run_by_id(first))  # (finished)
    assert set(_would_launch(queue)) == {second, other}


def test_global_cap_on_maintenance_runs(queue: dg.DagsterInstance, workspace: Location, dagster_home: Path) -> None:
    _set_cap(dagster_home, 2)
    a = _submit(queue, workspace, "db_orders_compaction_job", {})
    b = _submit(queue, workspace, "db_events_compaction_job", {})
    _start(queue, a)
    _start(queue, b)
    # Two maintenance runs in progress: a third one (another table's, another step) waits, also when
    # launched without tags from the UI; ingest is not maintenance and goes.
    expiry = _submit(queue, workspace, "db_orders_expiry_job", {})
    orphans = _submit_materialize(queue, workspace, "db/events_orphans")
    ingest = _submit(queue, workspace, "db_events_ingest_job", {"dagster/partition": "2024-01-01"})
    assert _would_launch(queue) == [ingest]
    queue.report_run_canceled(queue.get_run_by_id(a))  # (finished): one slot frees, the oldest waiting takes it
    assert set(_would_launch(queue)) == {expiry, ingest}
    queue.report_run_canceled(queue.get_run_by_id(b))
    assert set(_would_launch(queue)) == {expiry, orphans, ingest}

    # The cap is the instance's setting: at 1, one maintenance run at a time.
    _set_cap(dagster_home, 1)
    try:
        _start(queue, expiry)
        assert _would_launch(queue) == [ingest]
    finally:
        _set_cap(dagster_home, 2)


def _submit_materialize(instance: dg.DagsterInstance, location: Location, key: str) -> str:
    """A run as the UI's *Materialize* button creates it: the implicit asset job, this asset only,
    no job tags (so no run-queue tag limit applies: only the compaction pool)."""
    repo = location.context.get_code_location("lake_assets").get_repository("__repository__")
    remote_job = repo.get_full_job("__ASSET_JOB")
    selection = [dg.AssetKey.from_user_string(key)]
    job = location.defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection=set(selection))
    run = instance.create_run_for_job(
        job, asset_selection=frozenset(selection),
        remote_job_origin=remote_job.get_remote_origin(), job_code_origin=remote_job.get_python_origin(),
    )
    instance.submit_run(run.run_id, location.context)
    return run.run_id


def test_pool_holds_a_second_compaction_of_a_table_launched_without_tags(
    queue: dg.DagsterInstance, workspace: Location
) -> None:
    first = _submit_materialize(queue, workspace, "db/orders_compaction")
    second = _submit_materialize(queue, workspace, "db/orders_compaction")
    assert queue.get_run_by_id(first).tags.get(COMPACTION_TABLE_TAG) is None
    assert _would_launch(queue) == [first]
    _start(queue, first)
    assert _would_launch(queue) == []  # pool lake_compaction_db_orders: one at a time
    other = _submit_materialize(queue, workspace, "db/events_compaction")
    assert _would_launch(queue) == [other]  # another table's pool
    queue.report_run_canceled(queue.get_run_by_id(first))
    assert set(_would_launch(queue)) == {second, other}


def test_changelog_and_compaction_of_a_table_never_run_together(
    queue: dg.DagsterInstance, workspace: Location, dagster_home: Path
) -> None:
    """The changelog job compacts a lookup table: beside the table's compaction one of the two would
    fail with a commit conflict. Its gate step takes the table's compaction pool, so either run
    waits while the other runs (launched without tags, as from the UI); the maintenance cap (2) is
    not what holds them."""
    _set_cap(dagster_home, 2)
    compaction = _submit_materialize(queue, workspace, "db/orders_compaction")
    assert _would_launch(queue) == [compaction]  # (also gives a pool first seen its limit)
    _start(queue, compaction)
    changelog = _submit_materialize(queue, workspace, "db/orders_changelog")
    assert _would_launch(queue) == []  # held while the compaction runs
    queue.report_run_canceled(queue.get_run_by_id(compaction))  # (finished)
    assert _would_launch(queue) == [changelog]

    _start(queue, changelog)
    later = _submit_materialize(queue, workspace, "db/orders_compaction")
    assert _would_launch(queue) == []  # and the other way round
    queue.report_run_canceled(queue.get_run_by_id(changelog))
    assert _would_launch(queue) == [later]
