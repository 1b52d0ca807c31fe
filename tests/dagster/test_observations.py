"""The health sensor: one observation per table from metadata, and the checks judged on the current
state after each observation (tables written with the core, no Spark)."""

import datetime as dt
import time
from typing import Any

import dagster as dg
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.defs.config import LakeConfig
from lake_assets.defs.observations import HEALTH_SENSOR, observe_table
from lake_assets.defs.resources import WarehouseResource
from lake_assets.ops.writer_lease import LEASE_PREFIX, WriterLease

COMPACTION = dg.AssetKey(["db", "orders_compaction"])
EXPIRY = dg.AssetKey(["db", "orders_expiry"])


def _write(warehouse: WarehouseResource, config: LakeConfig, start: int, day: str = "2024-01-01",
           op: str | None = None) -> None:
    """A write-only commit of 10 rows (one more level-0 file per bucket, as the Spark ingest leaves)."""
    table = warehouse.ensure_table(config.table("db.orders"))
    writer = table.new_writer("obs", write_only=True)
    ids = list(range(start, start + 10))
    writer.write_arrow(pa.table({"id": pa.array(ids, pa.int64()), "dt": [day] * 10, "name": ["x"] * 10,
                                 "amount": [2.0] * 10}))
    table.new_committer("obs").commit(writer.prepare_commit(), start + 1)
    writer.close()


def _tick(defs: dg.Definitions, instance: dg.DagsterInstance) -> Any:
    """One tick of the health sensor, its events stored as the sensor daemon stores them."""
    sensor = defs.resolve_sensor_def(HEALTH_SENSOR)
    with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
        data = sensor.evaluate_tick(context)
    for event in data.asset_events:
        instance.report_runless_asset_event(event)
    return data


def _checks(data: Any) -> dict[str, dg.AssetCheckEvaluation]:
    return {e.check_name: e for e in data.asset_events if isinstance(e, dg.AssetCheckEvaluation)}


@pytest.fixture
def lake(core_lake):
    config, defs = core_lake
    with dg.instance_for_test() as instance:
        yield config, defs, defs.resources["warehouse"], instance


def test_no_table_no_observation(lake) -> None:
    _, defs, _, instance = lake
    data = _tick(defs, instance)
    assert data.asset_events == [] and data.skip_message == "no table exists yet"


def test_observation_reads_the_tables_health(lake) -> None:
    config, defs, warehouse, instance = lake
    for i in range(2):
        _write(warehouse, config, 100 * i)
    _write(warehouse, config, 500, day="2024-01-02")
    table = warehouse.table("db.orders")
    table.store.consumer_manager().record("dashboard", 2)  # has read snapshots 1; 3 is latest: lag 2
    # an empty branch, as Paimon's createBranch(name) makes it: the latest schema copied
    schema_file = table.store.paths.schema_file(table.schema.id)
    table.file_io.write_bytes(f"{table.store.paths.root}/branch/branch-dev/schema/schema-{table.schema.id}",
                              table.file_io.read_bytes(schema_file))

    data = _tick(defs, instance)
    [observation] = [e for e in data.asset_events if isinstance(e, dg.AssetObservation)]
    assert observation.asset_key == COMPACTION
    md = {k: v.value for k, v in observation.metadata.items()}
    health = table.health(small_file_threshold=config.table("db.orders").maintenance.small_file_bytes)
    assert md["snapshot_id"] == 3
    assert md["data_files"] == sum(health["file_count"].to_pylist()) == md["level0_files"]
    assert md["buckets"] == health.num_rows
    assert md["partitions"] == 2
    assert md["max_sorted_runs"] == 2  # two write-only commits to dt=2024-01-01
    assert md["snapshots_retained"] == 3
    assert md["records_in_files"] == 30 and md["delete_records"] == 0 and md["deleted_row_ratio"] == 0
    assert md["consumers"] == 1 and md["max_consumer_lag"] == 2 and md["consumer_lag"] == {"dashboard": 2}
    assert md["changelogs_retained"] == 0
    assert md["branches"] == 1 and md["branch_names"] == ["dev"]
    assert "partitions_past_expiration" not in md  # the table sets no partition.expiration-time
    assert "dagster/row_count" not in md  # two sorted runs: the records are not yet the row count
    assert md["oldest_snapshot_age_s"] >= 0
    assert set(_checks(data)) == {"small_files", "level0_age", "snapshot_retention", "declaration"}
    assert _checks(data)["declaration"].passed  # and one per maintenance asset: test_automation.py


def test_writer_leases_are_listed_apart_from_readers_and_an_expired_one_is_reported(lake) -> None:
    """A long-lived writer's lease is a consumer file (Java lists it as one): the observation lists
    it apart from the readers' lag, with what it holds; one that ran out (its writer crashed) is
    counted as expired and named by the snapshot-retention check, which says why it matters."""
    config, defs, warehouse, instance = lake
    for i in range(3):
        _write(warehouse, config, 100 * i)
    table = warehouse.table("db.orders")
    consumers = table.store.consumer_manager()
    consumers.record("dashboard", 3)
    live = WriterLease(table.store)
    live.start(2)  # a live writer holding snapshots 2 and 3
    crashed = LEASE_PREFIX + "crashed"
    consumers.record(crashed, 1, int(time.time() * 1000) - 3_600_000)  # ran out an hour ago

    assert set(consumers.readers()) == {"dashboard"}
    assert {cid: s.expired for cid, s in consumers.writer_leases().items()} == {live.consumer_id: False,
                                                                              crashed: True}
    data = _tick(defs, instance)
    [observation] = [e for e in data.asset_events if isinstance(e, dg.AssetObservation)]
    md = {k: v.value for k, v in observation.metadata.items()}
    assert md["consumers"] == 1 and md["consumer_lag"] == {"dashboard": 1} and md["max_consumer_lag"] == 1
    assert md["writer_leases"] == 2 and md["expired_writer_leases"] == 1
    assert md["branches"] == 0 and "branch_names" not in md  # no branch: no list
    details = md["writer_lease_details"]
    assert details[crashed]["expired"] and details[crashed]["lag"] == 3 and details[crashed]["next_snapshot"] == 1
    assert not details[live.consumer_id]["expired"] and details[live.consumer_id]["lag"] == 2
    retention = _checks(data)["snapshot_retention"].metadata
    assert retention["expired_writer_leases"].value == [crashed]
    # how long ago it ran out, and what to do on a table without consumer.expiration-time
    assert details[crashed]["expired_for_s"] >= 3600 and details[live.consumer_id]["expired_for_s"] == 0
    assert 3600 <= retention["expired_writer_lease_ages_s"].value[crashed] < 3600 + 600
    note = retention["expired_writer_lease_note"].value
    assert "does not set consumer.expiration-time, so Java's expiry never drops the lease" in note
    assert "run lake_assets' expire_snapshots" in note and "delete the consumer file" in note
    table.update_schema().set_option("consumer.expiration-time", "2 h").commit()
    note = _checks(_tick(defs, instance))["snapshot_retention"].metadata["expired_writer_lease_note"].value
    assert "Java's commit expiry drops it once the file is older than consumer.expiration-time (7200 s)" in note
    live.release()


def test_checks_follow_the_current_state_and_observations_accumulate(lake) -> None:
    config, defs, warehouse, instance = lake
    _write(warehouse, config, 0)
    first = _checks(_tick(defs, instance))
    assert all(e.passed for e in first.values())
    check = dg.AssetCheckKey(COMPACTION, "small_files")
    assert instance.get_latest_asset_check_evaluation_record(check).event.asset_check_evaluation.passed

    # No repair ran in between: the table degraded, and the next observation's checks say so.
    for i in range(1, 6):  # 6 small files per bucket > 3, 6 snapshots > retain_max 5
        _write(warehouse, config, 100 * i)
    second = _checks(_tick(defs, instance))
    assert not second["small_files"].passed and second["small_files"].asset_key == COMPACTION
    assert not second["snapshot_retention"].passed and second["snapshot_retention"].asset_key == EXPIRY
    assert second["snapshot_retention"].metadata["observed_snapshot_id"].value == 6
    latest = instance.get_latest_asset_check_evaluation_record(check).event.asset_check_evaluation
    assert not latest.passed

    # The observations form a series per table (what Dagster plots on the asset page).
    records = instance.fetch_observations(COMPACTION, limit=10, ascending=True).records
    series = [r.asset_observation.metadata["small_files"].value for r in records]
    assert len(series) == 2 and series[0] < series[1]


def test_row_count_when_exact(lake) -> None:
    config, defs, warehouse, instance = lake
    _write(warehouse, config, 0)  # one level-0 file per bucket: one run, no deletes
    [observation] = [e for e in _tick(defs, instance).asset_events if isinstance(e, dg.AssetObservation)]
    assert observation.metadata["dagster/row_count"].value == 10


def test_observe_table_before_any_commit(lake) -> None:
    config, _, warehouse, _ = lake
    table = warehouse.ensure_table(config.table("db.orders"))
    obs = observe_table(table, config.table("db.orders"))
    assert obs.snapshot_id is None and obs.data_files == 0


NOW = int(dt.datetime(2024, 3, 1, 12, 0, tzinfo=dt.UTC).timestamp() * 1000)  # local clock as UTC
PARTS = ["2024-01-01", "2024-02-20", "2024-02-29", None]  # None: __DEFAULT_PARTITION__, never expires


@pytest.mark.parametrize(("options", "expected"), [
    ({}, None),
    ({"partition.expiration-time": "7 d"}, 2),
    ({"partition.expiration-time": "30 d"}, 1),
    ({"partition.expiration-time": "7 d", "partition.expiration-max-num": "1"}, 2),  # one run's cap only
    # update-time: the files were written now, after NOW (2024): none is past expiration
    ({"partition.expiration-time": "7 d", "partition.expiration-strategy": "update-time"}, 0),
    ({"partition.expiration-time": "7 d", "partition.timestamp-pattern": "$dt"}, 2),
    ({"partition.expiration-time": "1 d", "partition.timestamp-formatter": "yyyyMMdd"}, 0),  # unparsable
])
def test_partitions_past_expiration_follow_the_partition_expiry(
    lake, tmp_path, options: dict[str, str], expected: int | None
) -> None:
    """The observation counts what the core's partition expiry would drop at that time (its
    strategy, pattern and formatter), without the per-run `partition.expiration-max-num` cap."""
    config, _, _, _ = lake
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string())])
    table = catalog.create_table("db.t", schema, partition_keys=["dt"])
    table.write_arrow(pa.table({"id": list(range(len(PARTS))), "dt": PARTS}, schema=schema))
    # set after the write: a commit under partition.expiration-time would expire them at once
    update = table.update_schema()
    for key, value in options.items():
        update = update.set_option(key, value)
    update.commit()
    table = catalog.get_table("db.t")
    obs = observe_table(table, config.table("db.orders"), now_ms=NOW)
    assert obs.partitions == 4
    assert obs.partitions_past_expiration == expected
    assert table.to_arrow().num_rows == 4  # counting drops nothing


def test_an_observation_that_fails_a_check_requests_a_compaction(lake) -> None:
    """The health sensor's check evaluations are what the compaction condition reacts to: no check
    run by hand, only observations (evaluated with Dagster's `evaluate_automation_conditions`)."""
    from tests.dagster.test_automation import T0, Ticks

    config, defs, warehouse, instance = lake
    ticks = Ticks(defs, instance)
    _write(warehouse, config, 0)
    instance.report_runless_asset_event(dg.AssetMaterialization(COMPACTION))
    _tick(defs, instance)
    assert ticks(T0) == set()
    for i in range(1, 4):  # 4 small files per bucket > small_file_threshold 3
        _write(warehouse, config, 100 * i)
    assert ticks(T0 + dt.timedelta(seconds=30)) == set()  # not observed yet
    assert not _checks(_tick(defs, instance))["small_files"].passed
    assert ticks(T0 + dt.timedelta(seconds=60)) == {"db/orders_compaction"}


def test_deleted_row_ratio_counts_rows_deletion_vectors_hide(lake, tmp_path) -> None:
    """A deletion-vector table keeps replaced rows in its files: they count as deleted, and the
    file row count is no longer the table's row count."""
    from lake_assets import Catalog

    config = lake[0]
    cat = Catalog(str(tmp_path / "dv"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = cat.create_table("db.dv", schema, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true"})
    table.write_arrow(pa.table({"id": range(100), "v": ["a"] * 100}, schema=schema))
    table.write_arrow(pa.table({"id": range(25), "v": ["b"] * 25}, schema=schema))
    obs = observe_table(table, config.table("db.orders"))
    assert obs.delete_records == 25 and obs.records_in_files == 125
    assert obs.deleted_row_ratio == pytest.approx(25 / 125)
