"""Sensor → compaction end to end: small files pile up in an ingested partition, the sensor asks for a
compaction, and its run request runs the real compact job (in the test process: conftest's
``compacted``; its spark-submit run under Pipes is the demo's, checked in test_demo.py). Metadata shows
the health and file sizes before and after."""

import dagster as dg

from lake_assets.defs.sensors import SMALL_FILE_SENSOR
from tests.dagster.helpers import materialization_metadata


def test_sensor_request_compacts_the_partition(compacted) -> None:
    request, result = compacted
    assert request.run_config["ops"]["db__orders_compaction"]["config"]["partitions"] == ["dt=2024-01-01"]
    assert result.dagster_run.tags["lake/compaction-table"] == "db.orders"
    md = materialization_metadata(result)
    assert md["commit_kind"] == "COMPACT"
    assert md["partitions"] == "dt=2024-01-01"
    assert md["small_files_before"] > md["small_files_after"]
    assert md["data_files_after"] < md["data_files_before"]
    assert md["files_in"] > md["files_out"]
    assert md["rows_in"] == 20 + 30 and md["rows_out"] == 20  # updates merged into the ingested rows
    assert "| file size | before | after |" in md["file_sizes"]
    health = {r.data["partition"]: r.data for r in md["health"].records}
    assert health["dt=2024-01-01"]["file_count"] == 1 and health["dt=2024-01-01"]["level0_file_count"] == 0
    assert md["table_path"].endswith("db.db/orders")


def test_checks_run_with_the_compaction(compacted) -> None:
    _, result = compacted
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert evaluations["small_files"].passed and evaluations["level0_age"].passed
    # the compact job's own check, reported through Pipes on the partition it compacted, with the
    # policy the asset passed it (threshold 3)
    own = evaluations["compacted_small_files"]
    md = {k: v.value for k, v in own.metadata.items()}
    assert own.passed and own.severity == dg.AssetCheckSeverity.WARN
    assert md["small_file_threshold"] == 3 and md["partitions"] == "dt=2024-01-01"
    assert md["buckets_over"] == 0 and md["postponed_files"] == 0 and md["max_small_files"] <= 3
    assert "job.checks" not in materialization_metadata(result)  # shown as a check, not as job metadata


def test_no_second_request_after_the_compaction(compacted, lake_defs: dg.Definitions, instance) -> None:
    sensor = lake_defs.resolve_sensor_def(SMALL_FILE_SENSOR)
    with dg.build_sensor_context(instance=instance, resources=lake_defs.resources) as context:
        first = sensor.evaluate_tick(context)
    assert first.run_requests == []  # compacted: no partition over the policy any more
