"""What every Spark job shares: arguments, exit codes, the JSON summary, Pipes reporting, Spark UI labels.

A job is a function ``body(ctx) -> dict`` run by `run_job`. The body validates its input first and
then calls `JobContext.start_run`; errors before that point are configuration errors (exit 2), errors
after it data, conflict or unexpected errors. The summary is printed as one JSON line on stdout;
logs go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import re
import stat
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_assets import errors as lake_errors
from lake_assets.catalog import Catalog
from lake_assets.errors import (
    CatalogError,
    CommitConflictError,
    LakeError,
    OptionError,
    SchemaError,
)
from lake_assets.io.file_io import FileIO
from lake_assets.options import parse_duration_ms
from lake_assets.spec.manifest import FileKind
from lake_assets.spec.types import to_arrow
from lake_assets.table import Table

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_CONFIG = 2
EXIT_DATA = 3
EXIT_CONFLICT = 4

# Keys every summary has, in this order (None where a job has nothing to say).
SUMMARY_KEYS = (
    "job", "table", "status", "snapshot_id", "commit_kind", "files_in", "files_out", "rows_in", "rows_out",
    "bytes_in", "bytes_out", "duration_s",
)
# Deleting more files than this spreads the deletes over executors.
DISTRIBUTED_DELETE_MIN = 1000
DELETE_BATCH = 500

log = logging.getLogger("lake_assets.jobs")


class UsageError(Exception):
    """Bad command-line arguments or job configuration (exit code 2)."""


class JobParser(argparse.ArgumentParser):
    """An argument parser that raises `UsageError` instead of exiting, so the job can still print
    its JSON summary and choose the exit code."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


# ------------------------------------------------------------------ arguments
def key_value(text: str) -> tuple[str, str]:
    """``k=v`` → (k, v); an argparse type."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def duration_ms(text: str) -> int:
    """``1h``, ``30 min``, ``1d``, ``500 ms`` → milliseconds; an argparse type."""
    try:
        return parse_duration_ms(text, "duration")
    except OptionError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 1h, 30min, 1d)") from None


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return value


def positive_int(text: str) -> int:
    value = non_negative_int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a positive integer, got 0")
    return value


def base_parser(job: str, description: str) -> JobParser:
    """A parser with the arguments every job takes."""
    parser = JobParser(prog=f"lake_assets.spark.jobs.{job.replace('-', '_')}", description=description)
    parser.add_argument("--warehouse", required=True, help="warehouse URL (path, file://, s3://bucket/path)")
    parser.add_argument("--table", required=True, help="table identifier db.table")
    parser.add_argument("--master", default="local[*]",
                        help="Spark master (default local[*]); ignored under spark-submit, which sets its own")
    parser.add_argument("--storage-option", dest="storage_options", action="append", type=key_value, default=[],
                        metavar="K=V", help="fsspec storage option (repeatable); JSON values such as "
                        "client_kwargs={...} and true/false are decoded")
    parser.add_argument("--conf", dest="spark_conf", action="append", type=key_value, default=[],
                        metavar="K=V", help="Spark configuration (repeatable)")
    return parser


def partition_spec(text: str) -> tuple[tuple[str, str], ...]:
    """``dt=2024-01-01,hour=3`` → ((dt, 2024-01-01), (hour, 3)); an argparse type."""
    return tuple(key_value(part) for part in text.split(","))


def partition_arg(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--partition", dest="partitions", action="append", type=partition_spec, default=[],
                        metavar="K=V[,K=V]", help=help_text)


def storage_value(text: str) -> Any:
    """Storage option text → value: JSON objects, arrays and booleans are decoded (fsspec wants
    ``client_kwargs`` as a dict, ``anon`` as a bool); anything else stays text so that a secret that
    looks like a number is not turned into one."""
    s = text.strip()
    if s[:1] in ("{", "[") or s in ("true", "false"):
        try:
            return json.loads(s)
        except json.JSONDecodeError as exc:
            raise UsageError(f"storage option value {text!r} looks like JSON but does not parse: {exc}") from None
    return text


def typed_partition(table: Table, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """``--partition`` pairs → {key: value typed like the partition column}; SchemaError if not a key."""
    keys = list(table.partition_keys)
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k not in keys:
            raise SchemaError(f"Table {table.name}: {k!r} is not a partition key (partition keys: {keys})")
        if k in out:
            raise UsageError(f"--partition {k} is given twice")
        t = to_arrow(table.schema.field(k).type)
        try:
            out[k] = pa.scalar(v).cast(t).as_py()
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise SchemaError(f"Table {table.name}: partition value {k}={v!r} is not a {t}: {exc}") from None
    return out


# ----------------------------------------------------------- table references
@dataclass(frozen=True)
class TableRef:
    """Where a table is: what a closure needs to reopen it on an executor (small and picklable)."""

    warehouse: str
    identifier: str
    storage_options: tuple[tuple[str, Any], ...] = ()

    @property
    def storage(self) -> dict[str, Any]:
        return dict(self.storage_options)

    def catalog(self) -> Catalog:
        return Catalog(self.warehouse, **self.storage)

    def open(self) -> Table:
        return self.catalog().get_table(self.identifier)

    def with_identifier(self, identifier: str) -> TableRef:
        return TableRef(self.warehouse, identifier, self.storage_options)


def _delete_batch(warehouse: str, storage: tuple[tuple[str, Any], ...], paths: list[str]) -> int:
    """Runs on an executor: delete one batch of paths (paths as the warehouse's FileIO spells them)."""
    file_io, _ = FileIO.for_url(warehouse, **dict(storage))
    return file_io.delete_many(paths)


# ------------------------------------------------------------------- context
@dataclass
class JobContext:
    """The state of one job run: arguments, session, table, and the Spark UI labels."""

    job: str
    args: argparse.Namespace
    spark: SparkSession
    ref: TableRef
    table: Table
    started: float = field(default_factory=time.perf_counter)
    phase: str = "setup"
    group_id: str = field(default_factory=lambda: f"lake_assets-{uuid.uuid4().hex[:12]}")
    distributed_delete_min: int = DISTRIBUTED_DELETE_MIN
    owns_session: bool = False

    @property
    def sc(self) -> SparkContext:
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
        self.table.paths.ensure_inside(paths, resolve_links=self.table.file_io.is_local)
        if len(paths) < self.distributed_delete_min:
            return self.table.file_io.delete_many(paths)
        batches = [paths[i:i + DELETE_BATCH] for i in range(0, len(paths), DELETE_BATCH)]
        slots = max(1, self.sc.defaultParallelism)
        self.describe(f"delete {len(paths)} files in {len(batches)} batches")
        warehouse, storage = self.ref.warehouse, self.ref.storage_options
        counts = (
            self.sc.parallelize(batches, min(len(batches), slots * 4))
            .map(lambda batch: _delete_batch(warehouse, storage, batch))
            .collect()
        )
        return sum(counts)


# ------------------------------------------------------------------- session
def get_session(job: str, args: argparse.Namespace) -> tuple[SparkSession, bool]:
    """The active session (tests, notebooks) or a new one with the ``lake`` data source registered;
    and whether it is new (then the job stops it at the end).

    Under spark-submit the master comes from spark-submit: ``--master`` is ignored there.
    """
    from pyspark.sql import SparkSession

    conf = dict(args.spark_conf)
    active = SparkSession.getActiveSession()
    if active is not None:
        for k, v in conf.items():
            try:
                active.conf.set(k, v)
            except Exception as exc:  # static confs cannot change in a running session
                log.warning("ignoring --conf %s for the running session: %s", k, exc)
        return active, False
    master: str | None = args.master
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        # Started by spark-submit (it owns the JVM): keep the master it was given. SparkConf reads
        # the JVM's properties only once the gateway is connected.
        from pyspark import SparkConf, SparkContext

        SparkContext._ensure_initialized()
        submitted = SparkConf().get("spark.master", None)
        if submitted:
            master = None
            conf.setdefault("spark.master", submitted)
    from lake_assets.spark.session import build_session

    return build_session(f"lake_assets-{job}", master=master, conf=conf), True


# ------------------------------------------------------------------- errors
_REMOTE_LAKE_ERROR = re.compile(r"lake_assets\.(?:errors|spark\.\w+)\.(\w+): ([^\n]*)")
# Spark error conditions that mean bad input data rather than a broken job.
_DATA_CONDITIONS = (
    "MALFORMED_RECORD_IN_PARSING", "CAST_INVALID_INPUT", "CAST_OVERFLOW", "USER_RAISED_EXCEPTION",
    "ARITHMETIC_OVERFLOW", "FAILED_READ_FILE", "CANNOT_PARSE_TIMESTAMP", "NOT_NULL_ASSERT_VIOLATION",
)
_CONFIG_CONDITIONS = ("PATH_NOT_FOUND", "TABLE_OR_VIEW_NOT_FOUND", "UNRESOLVED_COLUMN", "UNABLE_TO_INFER_SCHEMA")


def remote_lake_error(exc: BaseException) -> tuple[type[BaseException], str] | None:
    """The lake_assets error class and message inside an error raised on an executor (Python worker
    tracebacks travel as text inside the Java exception); None when there is none."""
    text = str(exc)
    for m in reversed(list(_REMOTE_LAKE_ERROR.finditer(text))):
        cls = getattr(lake_errors, m.group(1), None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            return cls, m.group(2).strip()
        if m.group(1).endswith("Error") or m.group(1).endswith("Failure"):
            return LakeError, m.group(2).strip()  # a LakeError subclass defined in the Spark layer
    return None


def _spark_condition(exc: BaseException) -> str | None:
    get = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    if get is not None:
        try:
            cond = get()
        except Exception:
            cond = None
        if cond:
            return str(cond)
    m = re.search(r"\[([A-Z][A-Z0-9_]+)(?:\.[A-Z0-9_]+)?\]", str(exc))
    return m.group(1) if m else None


def classify(exc: BaseException, phase: str) -> tuple[int, str]:
    """Exit code and a one-line message for an error raised in ``phase`` ("setup" or "run")."""
    if isinstance(exc, UsageError):
        return EXIT_CONFIG, str(exc)
    cls: type[BaseException] = type(exc)
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else cls.__name__
    if not isinstance(exc, LakeError):
        remote = remote_lake_error(exc)
        if remote is not None:
            cls, message = remote
    if issubclass(cls, CommitConflictError):
        return EXIT_CONFLICT, f"{cls.__name__}: {message}"
    config_errors = (CatalogError, OptionError, SchemaError)
    if phase == "setup" and issubclass(cls, config_errors):
        return EXIT_CONFIG, f"{cls.__name__}: {message}"
    if issubclass(cls, LakeError):
        return EXIT_DATA, f"{cls.__name__}: {message}"
    cond = _spark_condition(exc)
    if cond is not None and phase == "setup" and (cond in _CONFIG_CONDITIONS or type(exc).__name__ ==
                                                  "AnalysisException"):
        return EXIT_CONFIG, f"{cond}: {message}"
    if cond in _DATA_CONDITIONS:
        return EXIT_DATA, f"{cond}: {message}"
    return EXIT_UNEXPECTED, f"{cls.__name__}: {message}"


# ------------------------------------------------------------------- summary
def base_summary(job: str, table: str | None) -> dict[str, Any]:
    return dict.fromkeys(SUMMARY_KEYS) | {"job": job, "table": table, "status": "ok"}


def snapshot_fields(table: Table, before: int | None) -> dict[str, Any]:
    """``snapshot_id`` and ``commit_kind`` of the newest snapshot if one was committed after ``before``."""
    latest = table.snapshot_manager.latest()
    if latest is None or (before is not None and latest.id <= before):
        return {"snapshot_id": None, "commit_kind": None}
    return {"snapshot_id": latest.id, "commit_kind": str(latest.commit_kind)}


def delta_stats(table: Table, before: int | None) -> dict[str, int]:
    """Files, rows and bytes the snapshots committed after ``before`` added (and, for overwrites, removed)."""
    sm = table.snapshot_manager
    latest = sm.latest_id()
    out = {"files_out": 0, "rows_out": 0, "bytes_out": 0, "files_removed": 0, "rows_removed": 0}
    if latest is None:
        return out
    scan = table.file_store_scan()
    for sid in range((before or 0) + 1, latest + 1):
        snap = sm.try_snapshot(sid)
        if snap is None:
            continue
        for e in scan.delta_entries(snap):
            if e.kind == FileKind.ADD:
                out["files_out"] += 1
                out["rows_out"] += e.file.row_count
                out["bytes_out"] += e.file.file_size
            else:
                out["files_removed"] += 1
                out["rows_removed"] += e.file.row_count
    return out


def health_summary(table: Table) -> dict[str, Any]:
    """The table's LSM health in a few numbers (from manifests only)."""
    h = table.health().to_pylist()
    return {
        "buckets": len(h),
        "files": sum(r["file_count"] for r in h),
        "bytes": sum(r["total_bytes"] for r in h),
        "small_files": sum(r["small_file_count"] for r in h),
        "level0_files": sum(r["level0_file_count"] for r in h),
        "max_sorted_runs": max((r["sorted_runs"] for r in h), default=0),
        "buckets_needing_compaction": sum(1 for r in h if r["compaction_would_trigger"]),
    }


def health_markdown(table: Table, max_rows: int = 50) -> str:
    """The per-bucket health table as Markdown (for Dagster metadata)."""
    rows = table.health().to_pylist()
    cols = ["partition", "bucket", "file_count", "level0_file_count", "sorted_runs", "small_file_count",
            "total_bytes", "size_amplification_percent", "compaction_would_trigger"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows[:max_rows]:
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"{v:.1f}" if isinstance(v, float) else str(v))
        lines.append("| " + " | ".join(cells) + " |")
    if len(rows) > max_rows:
        lines.append(f"\n{len(rows) - max_rows} more buckets not shown")
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    """JSON-safe copy: inf/nan become None (strict parsers reject them), unknown objects text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def emit(summary: dict[str, Any]) -> None:
    """Print the summary as exactly one JSON line on stdout."""
    sys.stdout.write(json.dumps(_jsonable(summary), separators=(",", ":")) + "\n")
    sys.stdout.flush()


# ----------------------------------------------------------------- Dagster Pipes
@contextlib.contextmanager
def pipes_context() -> Iterator[Any]:
    """The Dagster Pipes context when Dagster started this process (and dagster_pipes is installed),
    else None. Dagster is never required."""
    if "DAGSTER_PIPES_CONTEXT" not in os.environ:
        yield None
        return
    try:
        from dagster_pipes import open_dagster_pipes
    except ImportError:
        log.warning("DAGSTER_PIPES_CONTEXT is set but dagster_pipes is not installed: not reporting to Dagster")
        yield None
        return
    context = open_dagster_pipes()
    try:
        yield context
    finally:
        context.close()


def pipes_metadata(summary: dict[str, Any], table: Table | None) -> dict[str, Any]:
    """The summary as Dagster metadata: numbers stay numbers, nested values become JSON."""
    meta: dict[str, Any] = {}
    for k, v in _jsonable(summary).items():
        if v is None:
            continue
        if isinstance(v, (dict, list)):
            meta[k] = {"raw_value": v, "type": "json"}
        elif isinstance(v, bool):
            meta[k] = {"raw_value": v, "type": "bool"}
        elif isinstance(v, int):
            meta[k] = {"raw_value": v, "type": "int"}
        elif isinstance(v, float):
            meta[k] = {"raw_value": v, "type": "float"}
        else:
            meta[k] = {"raw_value": str(v), "type": "text"}
    if table is not None:
        meta["table_path"] = {"raw_value": f"{_protocol_prefix(table)}{table.paths.root}", "type": "path"}
        try:
            meta["health"] = {"raw_value": health_markdown(table), "type": "md"}
        except Exception as exc:  # metadata is best effort: never fail a finished job over it
            log.warning("could not compute health for Dagster metadata: %s", exc)
    return meta


def _protocol_prefix(table: Table) -> str:
    return "" if table.file_io.is_local else f"{table.file_io.protocol}://"


def report_to_pipes(context: Any, summary: dict[str, Any], table: Table | None) -> None:
    """Report a successful run as an asset materialization (or a custom message for op steps)."""
    try:
        metadata = pipes_metadata(summary, table)
        if not context.is_asset_step:
            context.report_custom_message(_jsonable(summary))
            return
        keys = list(context.asset_keys)
        if len(keys) == 1:
            context.report_asset_materialization(metadata=metadata)
            return
        # A multi-asset step: report on the asset named after this table, if one is.
        name = (summary.get("table") or "").replace(".", "/")
        matching = [k for k in keys if k == name or k.endswith("/" + name) or k.endswith("/" + name.split("/")[-1])]
        if len(matching) == 1:
            context.report_asset_materialization(metadata=metadata, asset_key=matching[0])
        else:
            context.log.warning(f"no single asset of {keys} matches table {summary.get('table')}; not reported")
    except Exception as exc:
        log.warning("could not report to Dagster Pipes: %s", exc)


# ---------------------------------------------------------------------- runner
def separate_stderr() -> None:
    """Under spark-submit, send this process's stderr to spark-submit's stderr.

    spark-submit runs the Python driver with stderr merged into stdout, which would put every log
    line and warning next to the JSON summary. When fd 1 and fd 2 are the same pipe, fd 2 is pointed
    at the launching JVM's own stderr (Linux ``/proc``); anything else is left alone.
    """
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return
    try:
        out, err = os.fstat(1), os.fstat(2)
        if (out.st_dev, out.st_ino) != (err.st_dev, err.st_ino):
            return
        parent_err = f"/proc/{os.getppid()}/fd/2"
        target = os.stat(parent_err)
        if (target.st_dev, target.st_ino) == (out.st_dev, out.st_ino):
            return
        if stat.S_ISREG(target.st_mode) and not _opened_for_append(os.getppid(), 2):
            # `2> file`: the JVM writes at its own offset of that file, which our writes (through
            # another open file description) do not advance, so it would overwrite our lines. Keep
            # them in the merged stream instead: nothing is lost, the summary stays the last line.
            return
        fd = os.open(parent_err, os.O_WRONLY | os.O_APPEND)
    except OSError:
        return
    sys.stderr.flush()
    os.dup2(fd, 2)
    os.close(fd)


def _opened_for_append(pid: int, fd: int) -> bool:
    """Whether ``pid``'s descriptor ``fd`` was opened with O_APPEND (``2>>``), from /proc fdinfo."""
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}") as info:
            for line in info:
                if line.startswith("flags:"):
                    return bool(int(line.split()[1], 8) & os.O_APPEND)
    except (OSError, ValueError, IndexError):
        pass
    return False


def _setup_logging() -> None:
    if not any(getattr(h, "_lake_jobs", False) for h in log.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handler._lake_jobs = True  # type: ignore[attr-defined]
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


def run_job(
    job: str,
    argv: Sequence[str] | None,
    parser: argparse.ArgumentParser,
    body: Callable[[JobContext], dict[str, Any]],
) -> int:
    """Parse arguments, open the session and table, run ``body``, print the summary; the exit code."""
    separate_stderr()
    _setup_logging()
    summary = base_summary(job, None)
    ctx: JobContext | None = None
    phase = "setup"
    code = EXIT_OK
    started = time.perf_counter()
    with pipes_context() as pipes:
        try:
            try:
                args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
            except SystemExit as exc:  # --help (argparse errors raise UsageError)
                return int(exc.code or 0)
            summary["table"] = args.table
            storage = tuple((k, storage_value(v)) for k, v in args.storage_options)
            ref = TableRef(args.warehouse, args.table, storage)
            table = ref.open()
            spark, owns = get_session(job, args)
            ctx = JobContext(job, args, spark, ref, table, started=started, owns_session=owns)
            if getattr(args, "distributed_delete_min", None) is not None:
                ctx.distributed_delete_min = args.distributed_delete_min
            spark.sparkContext.setJobGroup(ctx.group_id, f"lake_assets {job} {table.name}", interruptOnCancel=True)
            log.info("%s on %s (warehouse %s, master %s)", job, table.name, args.warehouse,
                     spark.sparkContext.master)
            summary["spark_master"] = spark.sparkContext.master
            summary["spark_app_id"] = spark.sparkContext.applicationId
            summary.update(body(ctx))
        except Exception as exc:
            phase = ctx.phase if ctx is not None else phase
            code, message = classify(exc, phase)
            summary["status"] = "error"
            summary["error"] = message
            if code == EXIT_UNEXPECTED:
                log.exception("%s failed unexpectedly", job)
            else:
                log.error("%s failed (exit %d): %s", job, code, message)
            if pipes is not None:
                with contextlib.suppress(Exception):
                    pipes.log.error(f"{job} failed (exit {code}): {message}")
        finally:
            if ctx is not None:
                _clear_labels(ctx)
        summary["duration_s"] = round(time.perf_counter() - started, 3)
        emit(summary)
        if pipes is not None and code == EXIT_OK:
            report_to_pipes(pipes, summary, ctx.table if ctx is not None else None)
    if ctx is not None and ctx.owns_session:
        with contextlib.suppress(Exception):
            ctx.spark.stop()
    return code


def _clear_labels(ctx: JobContext) -> None:
    # A reused session (tests, notebooks) must not label later jobs with ours.
    with contextlib.suppress(Exception):
        for key in ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel"):
            ctx.sc.setLocalProperty(key, None)  # type: ignore[arg-type]


def main_entry(main: Callable[[Sequence[str] | None], int]) -> None:
    """``python -m`` / spark-submit entry: exit with the job's code."""
    raise SystemExit(main(None))
