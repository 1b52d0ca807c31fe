"""lake.yaml: defaults, path resolution, secrets from the environment, and errors naming entry and field."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
import yaml

from lake_assets.defs.config import LakeConfigError, load_config, parse_config
from tests.dagster.helpers import REPO, write_lake


def _data(tmp_path: Path) -> dict:
    return yaml.safe_load(write_lake(tmp_path).read_text())


def _error(tmp_path: Path, data: dict) -> str:
    with pytest.raises(LakeConfigError) as exc:
        parse_config(data, base_dir=tmp_path, source="lake.yaml")
    return str(exc.value)


def test_repo_lake_yaml_is_valid() -> None:
    config = load_config(REPO / "lake.yaml")
    assert [t.identifier for t in config.tables] == ["airline.flights"]
    flights = config.table("airline.flights")
    assert flights.options["merge-engine"] == "partial-update"
    assert flights.options["changelog-producer"] == "lookup"
    assert config.spark.launcher == "pipes"
    assert config.spark.master == "local[2]"


def test_paths_resolve_against_the_config_folder(tmp_path: Path) -> None:
    config = load_config(write_lake(tmp_path))
    assert config.warehouse.path == str(tmp_path / "warehouse")
    orders = config.table("db.orders")
    assert orders.ingest.source == str(tmp_path / "landing/orders/{date}/*.parquet")
    assert orders.maintenance.changelog.export_path == str(tmp_path / "export/orders")
    assert orders.options == {"bucket": "2", "changelog-producer": "lookup"}  # YAML numbers → option text
    assert str(orders.arrow_schema.field("id").type) == "int64"


def test_lake_config_env_overrides_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_lake(tmp_path / "elsewhere")
    monkeypatch.setenv("LAKE_CONFIG", str(path))
    assert load_config().table("db.events").partition_keys == ["day"]


def test_s3_secrets_come_from_the_environment(tmp_path: Path) -> None:
    data = _data(tmp_path)
    data["warehouse"] = {"kind": "s3", "url": "s3://bucket/wh", "endpoint_url": "http://127.0.0.1:9000",
                         "key": {"env": "LAKE_TEST_KEY"}, "secret": {"env": "LAKE_TEST_SECRET"}}
    config = parse_config(data, base_dir=tmp_path)
    assert isinstance(config.warehouse.secret, dg.EnvVar)
    assert config.warehouse.job_options() == {"endpoint_url": "http://127.0.0.1:9000"}  # no secret on argv


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d["tables"][1]["ingest"].update(format="xml"),
         "tables[1] (db.events).ingest.format: Input should be 'parquet', 'csv' or 'json'"),
        (lambda d: d["tables"][0]["schema"].update(amount="MONEY"),
         "tables[0] (db.orders).schema: column 'amount': Cannot parse type 'MONEY'"),
        (lambda d: d["tables"][0]["maintenance"].update(compaction_cron="every day"),
         "tables[0] (db.orders).maintenance.compaction_cron: 'every day' is not a valid cron schedule"),
        (lambda d: d["tables"][0]["maintenance"].update(small_file_treshold=3),
         "tables[0] (db.orders).maintenance.small_file_treshold: Extra inputs are not permitted"),
        (lambda d: d["tables"][0]["maintenance"].update(retain_min=9),
         "tables[0] (db.orders).maintenance: retain_min (9) must not exceed retain_max (5)"),
        (lambda d: d["tables"][0]["maintenance"]["orphans"].update(older_than="a while"),
         "tables[0] (db.orders).maintenance.orphans.older_than: 'a while' is not a duration"),
        (lambda d: d["tables"][0].update(primary_keys=["nope"]),
         "tables[0] (db.orders): Cannot create db.orders: primary key columns ['nope'] are not in the schema"),
        (lambda d: d["tables"][0]["options"].update(bucket=-3),
         "tables[0] (db.orders): Option 'bucket': '-3': must be -1"),
        (lambda d: d["tables"][1]["ingest"].update(partition_column="kind"),
         "tables[1] (db.events): ingest.partition_column 'kind' is not one of partition_keys ['day']"),
        (lambda d: d["tables"][1]["ingest"].update(source="landing/{dayy}.csv"),
         "tables[1] (db.events).ingest.source: unknown placeholders ['dayy']"),
        (lambda d: d["tables"][1]["maintenance"].update(changelog_after_ingest=True),
         "tables[1] (db.events): maintenance.changelog_after_ingest needs the option changelog-producer"),
        (lambda d: d["tables"][1].update(identifier="db.orders"),
         "tables db.orders and db.orders map to the same Dagster group db_orders"),
        (lambda d: d["warehouse"].update(kind="gcs"),
         "warehouse: Input tag 'gcs' found using 'kind' does not match any of the expected tags"),
        (lambda d: d["spark"].update(launcher="yarn"),
         "spark.launcher: Input should be 'pipes' or 'python'"),
        (lambda d: d["automation"].update(health_sensor_interval_seconds=0),
         "automation.health_sensor_interval_seconds: Input should be greater than or equal to 1"),
        (lambda d: d["automation"].update(health_sensor_interval_seconds="often"),
         "automation.health_sensor_interval_seconds: Input should be a valid integer"),
        # a first week's mistakes that loaded before and failed later, or lost data:
        (lambda d: d.update(timezone="Europe/Berln"),  # Dagster failed while building the schedules
         "timezone: 'Europe/Berln' is not an IANA time zone"),
        (lambda d: d["tables"][1]["ingest"].update(end_date="2023-12-31"),  # no partitions at all
         "tables[1] (db.events).ingest: end_date 2023-12-31 is before start_date 2024-01-01"),
        (lambda d: d["tables"][0]["ingest"].update(partition_format="%Y-%m"),  # each day overwrote its month
         "tables[0] (db.orders).ingest.partition_format: '%Y-%m' does not give each day a value of its own"),
        (lambda d: d["tables"][0]["ingest"].update(partition_format="%m-%d"),  # each day overwrote last year's
         "tables[0] (db.orders).ingest.partition_format: '%m-%d' does not give each day a value of its own"),
        # an orphan bound that could delete a write in flight, unless allowed explicitly
        (lambda d: d["tables"][0]["maintenance"]["orphans"].update(older_than="10min"),
         "tables[0] (db.orders).maintenance.orphans: orphan removal's older_than (10min) is below its floor of 1h"),
        (lambda d: (d["spark"].update(timeout="3h"), d["tables"][0]["maintenance"]["orphans"].update(older_than="2h")),
         "db.orders: maintenance.orphans.older_than (2h) is below spark.timeout (3h), the longest a Spark write"),
    ],
)
def test_bad_config_names_the_entry_and_field(tmp_path: Path, edit, expected: str) -> None:
    data = _data(tmp_path)
    edit(data)
    assert expected in _error(tmp_path, data)


def test_orphans_allow_recent_is_the_explicit_override(tmp_path: Path) -> None:
    data = _data(tmp_path)
    data["tables"][0]["maintenance"]["orphans"].update(older_than="10min", allow_recent=True, enabled=True)
    config = parse_config(data, base_dir=tmp_path, source="lake.yaml")
    from lake_assets.defs.assets.orphans import orphans_args

    assert orphans_args(config.tables[0].maintenance.orphans, dry_run=False) == [
        "--older-than", "10min", "--no-dry-run", "--allow-recent"]


def test_every_problem_is_listed(tmp_path: Path) -> None:
    data = _data(tmp_path)
    data["tables"][0]["ingest"]["format"] = "xml"
    data["tables"][1]["maintenance"]["level0_runs"] = 0
    message = _error(tmp_path, data)
    assert message.startswith("lake.yaml is invalid (2 problems):")
    assert "tables[1] (db.events).maintenance.level0_runs: Input should be greater than or equal to 1" in message


def test_health_sensor_interval_is_a_setting(tmp_path: Path) -> None:
    """automation.health_sensor_interval_seconds is the health sensor's period (default 5 minutes)."""
    from lake_assets.defs.factory import build_definitions
    from lake_assets.defs.observations import HEALTH_SENSOR

    data = _data(tmp_path)
    assert parse_config(data, base_dir=tmp_path, source="lake.yaml").automation.health_sensor_interval_seconds == 300
    data["automation"]["health_sensor_interval_seconds"] = 120
    defs = build_definitions(parse_config(data, base_dir=tmp_path, source="lake.yaml"))
    assert defs.resolve_sensor_def(HEALTH_SENSOR).minimum_interval_seconds == 120


def test_missing_and_malformed_files(tmp_path: Path) -> None:
    with pytest.raises(LakeConfigError, match="no such file"):
        load_config(tmp_path / "absent.yaml")
    (tmp_path / "bad.yaml").write_text("tables: [unclosed")
    with pytest.raises(LakeConfigError, match="not valid YAML"):
        load_config(tmp_path / "bad.yaml")
