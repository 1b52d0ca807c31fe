"""A user's existing Paimon Java 0.9 tables under lake.yaml (docs/dagster.md), through Dagster.

Java creates and writes the kinds a Flink shop runs (fixed buckets in ORC with a tag and a
consumer, dynamic buckets, deletion vectors, partial-update, append). lake.yaml declaring them as
they are passes every asset's table check, and the compaction asset (the real compact Spark job, run
in the test process on the shared session: tests/dagster/in_process_jobs.py; its launcher run is
tests/dagster/conftest.py's ``compacted``) compacts the ORC table in ORC so that Java reads the same
rows, its tag and consumer kept.
A declaration that differs from a table (another bucket count, a changelog producer or retention
the table does not carry, a primary key on an append table, other partition keys) used to be
ignored without a word (lake.yaml creates tables, never alters them): now every asset of that table
fails before any job, naming each difference and what to do, and the small-file sensor says why
it requests no compaction of it.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pyarrow as pa

from lake_assets import Catalog
from lake_assets.defs.config import load_config
from lake_assets.defs.factory import build_definitions
from lake_assets.defs.sensors import SMALL_FILE_SENSOR
from tests.dagster.helpers import ONE_TABLE_SPARK, materialization_metadata
from tests.java.oracle import PaimonJava

KINDS = {  # identifier -> (primary keys, options)
    "db.orders": (["id", "dt"], {"bucket": "2", "file.format": "orc"}),
    "db.dynamic": (["id", "dt"], {"bucket": "-1"}),
    "db.vectors": (["id", "dt"], {"bucket": "1", "deletion-vectors.enabled": "true"}),
    "db.partial": (["id", "dt"], {"bucket": "1", "merge-engine": "partial-update"}),
    "db.logs": ([], {"bucket": "-1"}),
}
SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def _lake_yaml(base: Path, declared: dict[str, tuple[list[str], list[str], dict[str, str]]]) -> Path:
    lines = ["tables:"]
    for ident, (pks, parts, options) in declared.items():
        opts = ", ".join(f"{k}: {v!r}" for k, v in options.items())
        lines += [f"  - identifier: {ident}", "    schema: {id: BIGINT, dt: STRING, v: STRING}",
                  f"    primary_keys: [{', '.join(pks)}]", f"    partition_keys: [{', '.join(parts)}]",
                  f"    options: {{{opts}}}",
                  "    maintenance: {retain_min: 1, retain_max: 2, time_retained: 1s}"]
    base.mkdir()
    path = base / "lake.yaml"
    path.write_text(ONE_TABLE_SPARK.replace("path: warehouse", f"path: {base.parent / 'warehouse'}")
                    + "\n".join(lines) + "\n")
    return path


def _failure(result: dg.ExecuteInProcessResult) -> str:
    failures = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    assert failures and not result.success
    return failures[0].step_failure_data.error.message  # type: ignore[union-attr]


def test_existing_java_tables_under_lake_yaml(java: PaimonJava, wh: str, tmp_path: Path,
                                              in_process_jobs: list[str]) -> None:
    for ident, (pks, options) in KINDS.items():
        java.create_table(wh, ident, SCHEMA, primary_keys=pks, partition_keys=["dt"], options=options)
        for i in range(3 if ident == "db.orders" else 1):  # the table to compact: three commits
            java.write(wh, ident, [{"id": i, "dt": "2024-01-01", "v": f"a{i}"}, {"id": 10 + i, "dt": "2024-01-02",
                                                                                 "v": f"b{i}"}], schema=SCHEMA)
    java.create_tag(wh, "db.orders", "first", snapshot_id=1)
    java.reset_consumer(wh, "db.orders", "flink-job", next_snapshot=2)
    before = sorted(java.read(wh, "db.orders").to_pylist(), key=lambda r: r["id"])

    # lake.yaml says what the tables are: every table passes, and the compaction runs
    same = {ident: (pks, ["dt"], dict(options)) for ident, (pks, options) in KINDS.items()}
    defs = build_definitions(load_config(_lake_yaml(Path(wh).parent / "same", same)))
    warehouse = defs.resources["warehouse"]
    for spec in load_config(Path(wh).parent / "same" / "lake.yaml").tables:
        assert warehouse.declared_table(spec).name.endswith(spec.identifier.split(".")[1])
    with dg.instance_for_test() as instance:
        compaction = defs.resolve_job_def("db_orders_compaction_job").execute_in_process(
            instance=instance, run_config={"ops": {"db__orders_compaction": {"config": {"full": True}}}})
        assert compaction.success
        assert materialization_metadata(compaction)["commit_kind"] == "COMPACT"
    assert sorted(java.read(wh, "db.orders").to_pylist(), key=lambda r: r["id"]) == before
    assert java.tags(wh, "db.orders") == {"first": 1} and java.consumers(wh, "db.orders") == {"flink-job": 2}
    assert [r["id"] for r in java.read(wh, "db.orders", tag="first").to_pylist()] == [0, 10]
    table = Catalog(wh).get_table("db.orders")
    assert {Path(f.file_name).suffix for split in table.plan() for f in split.files} == {".orc"}  # its format

    # a branch Java made from the tag and wrote to: the expiry and orphan assets run on the table
    # (they were refused) and keep every file the branch reads
    java.create_branch(wh, "db.orders", "fix", tag="first")
    java.write(wh, "db.orders$branch_fix", [{"id": 99, "dt": "2024-01-03", "v": "f"}], schema=SCHEMA)
    branch_rows = sorted(java.read(wh, "db.orders$branch_fix").to_pylist(), key=lambda r: r["id"])
    assert [r["id"] for r in branch_rows] == [0, 10, 99]
    with dg.instance_for_test() as instance:
        for job in ("db_orders_expiry_job", "db_orders_orphans_job"):
            assert defs.resolve_job_def(job).execute_in_process(instance=instance).success, job
    assert sorted(java.read(wh, "db.orders$branch_fix").to_pylist(), key=lambda r: r["id"]) == branch_rows
    assert sorted(java.read(wh, "db.orders").to_pylist(), key=lambda r: r["id"]) == before
    assert java.snapshots(wh, "db.orders")[0]["id"] == 2  # snapshot 1 expired (the consumer holds 2)

    # a declaration that differs: every asset of the table fails before its job, naming what differs
    differ = dict(same)
    differ["db.orders"] = (["id", "dt"], ["dt"], {"bucket": "4", "file.format": "orc",
                                                   "changelog-producer": "lookup",
                                                   "snapshot.num-retained.max": "10"})
    differ["db.logs"] = (["id", "dt"], ["dt"], {"bucket": "-1"})
    differ["db.dynamic"] = (["id"], [], {"bucket": "-1"})
    defs = build_definitions(load_config(_lake_yaml(Path(wh).parent / "differ", differ)))
    snapshots = {ident: [s["id"] for s in java.snapshots(wh, ident)] for ident in KINDS}
    with dg.instance_for_test() as instance:
        # the small-file sensor does not request runs that would fail so, and says why
        with dg.build_sensor_context(instance=instance, resources=defs.resources) as context:
            tick = defs.resolve_sensor_def(SMALL_FILE_SENSOR).evaluate_tick(context)
        assert tick.run_requests == []
        assert ("db.orders: not requested: lake.yaml's declaration differs from the table: option bucket: "
                "lake.yaml declares '4', the table has '2'; ") in (tick.skip_message or "")
        assert "db.vectors" not in (tick.skip_message or "")  # declared as it is
        messages = {}
        for job in ("db_orders_compaction_job", "db_orders_changelog_job", "db_logs_orphans_job",
                    "db_dynamic_expiry_job"):
            result = defs.resolve_job_def(job).execute_in_process(instance=instance, raise_on_error=False)
            messages[job] = _failure(result)
    orders = messages["db_orders_compaction_job"]
    assert "lake.yaml's declaration of db.orders does not match the existing table (3 differences)" in orders
    assert "option bucket: lake.yaml declares '4', the table has '2'" in orders
    assert "option changelog-producer: lake.yaml declares 'lookup', the table does not set it (so 'none'" in orders
    assert "option snapshot.num-retained.max: lake.yaml declares '10', the table does not set it" in orders
    assert "never alters an existing one: make lake.yaml say what the table is" in orders
    assert messages["db_orders_changelog_job"] == orders
    assert "primary_keys: lake.yaml declares ['id', 'dt'], the table has []" in messages["db_logs_orphans_job"]
    dynamic = messages["db_dynamic_expiry_job"]
    assert "primary_keys: lake.yaml declares ['id'], the table has ['id', 'dt']" in dynamic
    assert "partition_keys: lake.yaml declares [], the table has ['dt']" in dynamic
    assert {ident: [s["id"] for s in java.snapshots(wh, ident)] for ident in KINDS} == snapshots  # nothing ran
    assert in_process_jobs == ["compact", "expire", "remove_orphans"]  # the differing declarations started no job
