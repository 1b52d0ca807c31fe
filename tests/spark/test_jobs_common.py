"""The jobs' shared contract: arguments, exit codes, one JSON line on stdout, Dagster Pipes reporting.

Also the helpers the other ``test_jobs_*`` modules use (`run_job_main`, `make_pk_table`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import CommitConflictError, LakeError, NoSuchTableError, UnsupportedFeatureError
from lake_assets.spark.jobs import compact, expire
from lake_assets.spark.jobs.args import storage_value
from lake_assets.spark.jobs.errors import (
    EXIT_CONFIG,
    EXIT_CONFLICT,
    EXIT_DATA,
    EXIT_OK,
    EXIT_UNEXPECTED,
    UsageError,
    classify,
)
from lake_assets.spark.jobs.summary import SUMMARY_KEYS, emit

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PK_SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.float64())])


def run_job_main(
    capsys: pytest.CaptureFixture[str], main: Callable[[Sequence[str] | None], int], *args: str
) -> tuple[int, dict[str, Any]]:
    """Run a job's ``main`` in-process; its exit code and its one JSON summary line."""
    capsys.readouterr()
    code = main(list(args))
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected exactly one stdout line, got {lines!r}"
    return code, json.loads(lines[0])


def make_pk_table(warehouse: str, identifier: str = "db.t", *, options: dict[str, str] | None = None,
                  partitioned: bool = True) -> Table:
    cat = Catalog(warehouse)
    cat.create_database(identifier.split(".")[0])
    return cat.create_table(identifier, PK_SCHEMA, primary_keys=["id", "dt"] if partitioned else ["id"],
                            partition_keys=["dt"] if partitioned else [],
                            options={"bucket": "2", **(options or {})})


def write_batches(table: Table, n: int, *, rows: int = 40) -> None:
    """``n`` write-only commits of overlapping keys: level-0 files that compaction must merge."""
    for i in range(n):
        writer = table.new_writer(f"w{i}", write_only=True)
        writer.write_arrow(pa.table({
            "id": list(range(rows)),
            "dt": ["2024-01-01" if k % 2 else "2024-01-02" for k in range(rows)],
            "v": [float(i * 100 + k) for k in range(rows)],
        }))
        table.new_committer(f"w{i}").commit(writer.prepare_commit())


def sorted_rows(table: Table) -> list[dict[str, Any]]:
    return sorted(table.to_arrow().to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))


# ------------------------------------------------------------------ contract
def test_bad_arguments_exit_2_with_json(capsys):
    code, out = run_job_main(capsys, compact.main, "--warehouse", "/nowhere")
    assert code == EXIT_CONFIG
    assert out["status"] == "error" and "--table" in out["error"]
    assert out["job"] == "compact" and list(out)[: len(SUMMARY_KEYS)] == list(SUMMARY_KEYS)


def test_bad_option_value_exit_2(capsys, tmp_path):
    make_pk_table(str(tmp_path))
    code, out = run_job_main(capsys, expire.main, "--warehouse", str(tmp_path), "--table", "db.t",
                             "--older-than", "soon")
    assert code == EXIT_CONFIG and "duration" in out["error"]


def test_unknown_table_exit_2(capsys, tmp_path):
    Catalog(str(tmp_path)).create_database("db")
    code, out = run_job_main(capsys, compact.main, "--warehouse", str(tmp_path), "--table", "db.missing")
    assert code == EXIT_CONFIG
    assert out["table"] == "db.missing" and "NoSuchTableError" in out["error"]


def test_invalid_identifier_exit_2(capsys, tmp_path):
    code, out = run_job_main(capsys, compact.main, "--warehouse", str(tmp_path), "--table", "db.../x")
    assert code == EXIT_CONFIG and out["status"] == "error"


def test_not_a_partition_key_exit_2(capsys, spark, tmp_path):
    make_pk_table(str(tmp_path))
    code, out = run_job_main(capsys, compact.main, "--warehouse", str(tmp_path), "--table", "db.t",
                             "--partition", "nope=1")
    assert code == EXIT_CONFIG and "not a partition key" in out["error"]


def test_help_exits_0_without_summary(capsys):
    assert compact.main(["--help"]) == 0
    assert "--max-units" in capsys.readouterr().out


def test_classify_local_and_remote_errors():
    assert classify(UsageError("x"), "run")[0] == EXIT_CONFIG
    # a usage error is one of lake_assets's errors, and keeps exit code 2 in either phase
    assert isinstance(UsageError("x"), LakeError)
    assert classify(UsageError("x"), "setup") == (EXIT_CONFIG, "x")
    assert classify(NoSuchTableError("x"), "setup")[0] == EXIT_CONFIG
    assert classify(NoSuchTableError("x"), "run")[0] == EXIT_DATA
    assert classify(CommitConflictError("x"), "run")[0] == EXIT_CONFLICT
    assert classify(RuntimeError("boom"), "run")[0] == EXIT_UNEXPECTED
    # a Python worker's traceback travels as text inside the Java exception
    remote = RuntimeError("Job aborted...\nTraceback (most recent call last):\n  File x\n"
                          "lake_assets.errors.InvalidDataError: Cannot write to db.t: key is null\n\tat org...")
    code, message = classify(remote, "run")
    assert code == EXIT_DATA and message == "InvalidDataError: Cannot write to db.t: key is null"
    conflict = RuntimeError("...\nlake_assets.errors.CommitConflictError: lost the race\n")
    assert classify(conflict, "run")[0] == EXIT_CONFLICT
    worker = RuntimeError("An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
                          '  File "s3.py", line 9, in open\n    raise NoCredentialsError()\n'
                          "botocore.exceptions.NoCredentialsError: Unable to locate credentials\n\n"
                          "\tat org.apache.spark.api.python.Runner\norg.apache.spark.SparkException: Job aborted")
    assert classify(worker, "run") == (
        EXIT_UNEXPECTED, "RuntimeError: botocore.exceptions.NoCredentialsError: Unable to locate credentials")
    malformed = RuntimeError("[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected")
    assert classify(malformed, "run")[0] == EXIT_DATA
    # a refusal (an option or table kind lake_assets does not support) is fixed by configuration, in
    # either phase and also when an executor met it: running it again as it is fails the same way
    assert classify(UnsupportedFeatureError("Cannot compact db.t: x"), "setup")[0] == EXIT_CONFIG
    assert classify(UnsupportedFeatureError("Cannot compact db.t: x"), "run") == (
        EXIT_CONFIG, "UnsupportedFeatureError: Cannot compact db.t: x")
    refused = RuntimeError("...\nlake_assets.errors.UnsupportedFeatureError: Cannot read data file f.lance\n")
    assert classify(refused, "run") == (EXIT_CONFIG, "UnsupportedFeatureError: Cannot read data file f.lance")


def test_an_executor_error_is_named_by_the_exception_the_python_worker_raised(spark):
    """A task's Python error arrives as PythonException "An exception was thrown from the Python
    worker" whose first line says nothing: the summary names the worker's own exception (as it did
    not for botocore's NoCredentialsError on a cluster whose executors had no credentials)."""
    from pyspark.sql.functions import udf

    @udf("string")
    def no_credentials(value: str) -> str:
        raise PermissionError(f"Unable to locate credentials for {value}")

    with pytest.raises(Exception) as raised:
        spark.createDataFrame([("s3://b/wh",)], "v string").select(no_credentials("v")).collect()
    code, message = classify(raised.value, "run")
    assert code == EXIT_UNEXPECTED
    assert message.endswith("PermissionError: Unable to locate credentials for s3://b/wh"), message


def test_the_jobs_package_names_every_spark_submit_script():
    from pathlib import Path

    import lake_assets.spark.jobs as jobs_package

    scripts = {p.stem for p in (Path(__file__).resolve().parents[2] / "jobs").glob("*.py")}
    assert set(jobs_package.JOBS) == scripts
    assert all(f"``{name}``" in (jobs_package.__doc__ or "") for name in scripts)


def test_storage_values():
    assert storage_value("true") is True
    assert storage_value('{"endpoint_url": "http://x"}') == {"endpoint_url": "http://x"}
    assert storage_value("12345") == "12345"  # a secret that looks like a number stays text
    with pytest.raises(UsageError):
        storage_value("{broken")


def test_json_summary_is_strict_json(capsys):
    emit({"a": float("inf"), "b": [float("nan")], "c": {"d": 1}})
    assert json.loads(capsys.readouterr().out) == {"a": None, "b": [None], "c": {"d": 1}}


# ------------------------------------------------------------------ Dagster Pipes
def test_reports_materialization_to_dagster_pipes(capsys, spark, tmp_path, monkeypatch):
    dagster_pipes = pytest.importorskip("dagster_pipes")
    table = make_pk_table(str(tmp_path / "wh"))
    write_batches(table, 6)  # above num-sorted-run.compaction-trigger (5)
    messages = tmp_path / "messages.jsonl"
    context = {
        "asset_keys": ["lake/db/t"], "code_version_by_asset_key": None, "provenance_by_asset_key": None,
        "partition_key": None, "partition_key_range": None, "partition_time_window": None,
        "run_id": "r1", "job_name": "j", "retry_number": 0,
        "extras": {"small_file_threshold": 100},  # the compaction asset's policy (lake_assets.job_checks)
    }
    monkeypatch.setenv("DAGSTER_PIPES_CONTEXT", dagster_pipes.encode_param({"data": context}))
    monkeypatch.setenv("DAGSTER_PIPES_MESSAGES", dagster_pipes.encode_param({"path": str(messages)}))
    monkeypatch.setattr(dagster_pipes.PipesContext, "_instance", None)
    try:
        code, out = run_job_main(capsys, compact.main, "--warehouse", str(tmp_path / "wh"), "--table", "db.t")
    finally:
        dagster_pipes.PipesContext._instance = None
    assert code == EXIT_OK and out["commit_kind"] == "COMPACT"
    sent = [json.loads(line) for line in messages.read_text().splitlines()]
    (mat,) = [m for m in sent if m["method"] == "report_asset_materialization"]
    meta = mat["params"]["metadata"]
    assert mat["params"]["asset_key"] == "lake/db/t"
    assert meta["files_in"] == {"raw_value": out["files_in"], "type": "int"}
    assert meta["duration_s"]["type"] == "float"
    assert meta["health"]["type"] == "md" and "| partition |" in meta["health"]["raw_value"]
    assert meta["table_path"]["raw_value"].endswith(os.path.join("db.db", "t"))
    assert meta["health_after"]["type"] == "json"
    assert "checks" not in meta  # sent as check results, not as metadata
    (check,) = [m["params"] for m in sent if m["method"] == "report_asset_check"]
    assert check["asset_key"] == "lake/db/t" and check["check_name"] == "compacted_small_files"
    assert check["passed"] is True and check["severity"] == "WARN"
    assert check["metadata"]["small_file_threshold"] == {"raw_value": 100, "type": "int"}
    assert out["checks"] == [{"name": "compacted_small_files", "passed": True, "severity": "WARN",
                              "metadata": {k: v["raw_value"] for k, v in check["metadata"].items()}}]
    assert sent[-1]["method"] == "closed"
