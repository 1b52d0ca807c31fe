"""Drive pypaimon (in ``.venv-paimon``) from the main venv, for interop tests.

pypaimon pins an old pyarrow, so it is never imported here: :class:`Pypaimon` runs
``paimon_driver.py`` under the other venv's python and exchanges tables as Arrow IPC streams.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.vectors import VECTORS_DIR

from .driver_server import DriverForkServer

REPO_ROOT = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("paimon_driver.py")
RUST_DRIVER = Path(__file__).with_name("paimon_rust_driver.py")
DEFAULT_PYTHON = REPO_ROOT / ".venv-paimon" / "bin" / "python"
DEFAULT_TIMEOUT = 180.0


def running_in_ci() -> bool:
    """True when the ``CI`` environment variable is set (to anything but a false-ish value)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing(reason: str) -> None:
    """A peer this test needs is not installed: fail under CI (``make test`` installs every peer, so
    a missing one is a broken set-up, never a reason to pass), skip elsewhere."""
    import pytest

    if running_in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def write_ipc(table: pa.Table | pa.Schema, path: str | os.PathLike[str]) -> None:
    """Write a table (or an empty table of a schema) as an Arrow IPC stream file."""
    if isinstance(table, pa.Schema):
        table = table.empty_table()
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def read_ipc(path: str | os.PathLike[str]) -> pa.Table:
    """Read an Arrow IPC stream file."""
    with pa.ipc.open_stream(str(path)) as reader:
        return reader.read_all()


def driver_env() -> dict[str, str]:
    """This process's environment without what would point the other venv's python at ours."""
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    }


class Pypaimon:
    """pypaimon 2.1.0 behind a subprocess boundary."""

    driver = DRIVER

    def __init__(
        self, python: str | os.PathLike[str] | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.python = Path(python or os.environ.get("PYPAIMON_PYTHON") or DEFAULT_PYTHON)
        self.timeout = timeout

    def available(self) -> bool:
        """True when the pypaimon venv's python exists."""
        return self.python.is_file() and os.access(self.python, os.X_OK)

    def run(self, *args: str) -> str:
        """Run one driver subcommand in its own process; return its stdout or raise AssertionError
        with its stderr. The process is forked from a :class:`DriverForkServer` that has pypaimon
        imported already (a fresh interpreter per call would import it again, a second of CPU)."""
        server = DriverForkServer.for_python(self.python)
        try:
            rc, stdout, stderr = server.call(self.driver, args, driver_env(), timeout=self.timeout)
        except TimeoutError as exc:
            raise AssertionError(f"pypaimon driver timed out after {self.timeout}s: {args[:1]}\n{exc}") from None
        if rc != 0:
            raise AssertionError(
                f"pypaimon driver {' '.join(args[:1])} failed (exit {rc}):\n{stderr.strip()}"
            )
        return stdout

    def read(
        self,
        warehouse: str | os.PathLike[str],
        identifier: str,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        columns: Sequence[str] | None = None,
        options: Mapping[str, str] | None = None,
    ) -> pa.Table:
        """Read the whole table (all splits), optionally at a snapshot or tag, optionally projected."""
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            out = Path(tmp) / "rows.arrow"
            args = ["read", "--warehouse", str(warehouse), "--table", identifier, "--out", str(out)]
            if snapshot_id is not None:
                args += ["--snapshot-id", str(snapshot_id)]
            if tag is not None:
                args += ["--tag", tag]
            if columns:
                args += ["--columns", ",".join(columns)]
            args += _option_args(options)
            self.run(*args)
            return read_ipc(out)

    def stream_follow(self, warehouse: str | os.PathLike[str], identifier: str, start: int) -> pa.Table:
        """What pypaimon's streaming scan emits for snapshots ``start``..latest (its follow-up
        phase: delta or changelog per snapshot by the table's changelog producer), with
        ``_row_kind`` and the ``_snapshot`` each row came from."""
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            out = Path(tmp) / "rows.arrow"
            self.run("stream-follow", "--warehouse", str(warehouse), "--table", identifier,
                     "--from", str(start), "--out", str(out))
            return read_ipc(out)

    def create_table(
        self,
        warehouse: str | os.PathLike[str],
        identifier: str,
        schema: pa.Schema,
        *,
        primary_keys: Iterable[str] = (),
        partition_keys: Iterable[str] = (),
        options: Mapping[str, str] | None = None,
    ) -> None:
        """Create ``identifier`` (and its database if needed) with an Arrow schema."""
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            path = Path(tmp) / "schema.arrow"
            write_ipc(schema, path)
            args = ["create", "--warehouse", str(warehouse), "--table", identifier, "--schema", str(path)]
            if pks := list(primary_keys):
                args += ["--primary-keys", ",".join(pks)]
            if parts := list(partition_keys):
                args += ["--partition-keys", ",".join(parts)]
            args += _option_args(options)
            self.run(*args)

    def write(
        self,
        warehouse: str | os.PathLike[str],
        identifier: str,
        data: pa.Table,
        *,
        overwrite: bool | Mapping[str, Any] = False,
        options: Mapping[str, str] | None = None,
        fixed_bucket: bool = False,
    ) -> None:
        """One batch write + commit (``fixed_bucket``: a postpone table's rows into real buckets through
        pypaimon's ``new_postpone_fixed_bucket_write_builder``). ``overwrite``: True for a
        (dynamic/whole-table) overwrite, or a static partition spec ``{key: value}`` (``None``
        values mean the default partition)."""
        with tempfile.TemporaryDirectory(prefix="pypaimon-") as tmp:
            path = Path(tmp) / "data.arrow"
            write_ipc(data, path)
            args = ["write", "--warehouse", str(warehouse), "--table", identifier, "--data", str(path)]
            if isinstance(overwrite, Mapping) and overwrite:
                args += [
                    "--overwrite",
                    "--overwrite-partition",
                    *(f"{k}={_partition_text(v)}" for k, v in overwrite.items()),
                ]
            elif overwrite is True or isinstance(overwrite, Mapping):
                args.append("--overwrite")
            if fixed_bucket:
                args.append("--fixed-bucket")
            args += _option_args(options)
            self.run(*args)

    def create_tag(
        self, warehouse: str | os.PathLike[str], identifier: str, name: str, *, snapshot_id: int | None = None
    ) -> None:
        """Tag a snapshot (the latest by default)."""
        args = ["create-tag", "--warehouse", str(warehouse), "--table", identifier, "--name", name]
        if snapshot_id is not None:
            args += ["--snapshot-id", str(snapshot_id)]
        self.run(*args)

    def create_branch(
        self, warehouse: str | os.PathLike[str], identifier: str, name: str, *, tag: str | None = None
    ) -> None:
        """Create branch ``name`` (from ``tag`` if given); its table is ``db.t$branch_<name>``."""
        args = ["create-branch", "--warehouse", str(warehouse), "--table", identifier, "--name", name]
        if tag is not None:
            args += ["--tag", tag]
        self.run(*args)

    def snapshots(self, warehouse: str | os.PathLike[str], identifier: str) -> dict[str, list[Any]]:
        """``{"snapshots": [ids...], "tags": [names...]}`` as found on disk."""
        out = self.run("snapshots", "--warehouse", str(warehouse), "--table", identifier)
        return json.loads(out)


def _option_args(options: Mapping[str, str] | None) -> list[str]:
    return ["--option", *(f"{k}={v}" for k, v in options.items())] if options else []


def _partition_text(value: Any) -> str:
    if value is None:
        return "__DEFAULT_PARTITION__"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    return str(value)


def _sort_key(row: Mapping[str, Any], sort_by: Sequence[str]) -> tuple[Any, ...]:
    return tuple((row[k] is None, row[k]) for k in sort_by)


def canonical(table: pa.Table, sort_by: list[str]) -> list[dict[str, Any]]:
    """Rows of ``table`` as Python dicts, sorted by ``sort_by`` (nulls last), for comparisons."""
    rows = table.to_pylist()
    rows.sort(key=lambda r: _sort_key(r, sort_by))
    return rows


def jsonable(value: Any) -> Any:
    """Python value -> the JSON form used in the vectors' ``expected*.json`` (see vectors/_lib.py)."""
    if value is None or isinstance(value, bool | int | str | float):
        return value
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return "hex:" + value.hex()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return repr(value)


def canonical_json(table: pa.Table, sort_by: list[str]) -> list[dict[str, Any]]:
    """:func:`canonical` rows converted with :func:`jsonable` (comparable with ``expected.json``)."""
    return [jsonable(r) for r in canonical(table, sort_by)]


def load_vector_expected(vector: str, name: str = "expected.json") -> dict[str, Any]:
    """The ``expected*.json`` of a test vector: ``{"columns", "arrow_schema", "rows"}``."""
    return json.loads((VECTORS_DIR / vector / name).read_text())


def copy_vector_warehouse(vector: str, dest: str | os.PathLike[str]) -> str:
    """Copy a test vector's ``warehouse`` to ``dest`` (which must not exist); return ``dest`` as str."""
    shutil.copytree(VECTORS_DIR / vector / "warehouse", dest)
    return str(dest)


class PypaimonRust(Pypaimon):
    """pypaimon-rust (Rust Paimon, same venv as pypaimon) behind a subprocess boundary: SQL in,
    Arrow out (`paimon_rust_driver.py`)."""

    driver = RUST_DRIVER

    def available(self) -> bool:
        """True when the venv's python exists and has ``pypaimon_rust``."""
        if not super().available():
            return False
        proc = subprocess.run([str(self.python), "-I", "-c", "import pypaimon_rust"], capture_output=True, check=False)
        return proc.returncode == 0

    def sql(self, warehouse: str | os.PathLike[str], *statements: str) -> None:
        """Run SQL statements against the catalog ``paimon`` over ``warehouse``, in order."""
        args = ["sql", "--warehouse", str(warehouse)]
        for s in statements:
            args += ["--statement", s]
        self.run(*args)

    def read_rows(self, warehouse: str | os.PathLike[str], identifier: str) -> list[dict[str, Any]]:
        """pypaimon-rust's batch read of the whole table, as row dicts (JSON values)."""
        out = json.loads(self.run("read", "--warehouse", str(warehouse), "--table", identifier))
        return [dict(zip(out["columns"], row, strict=True)) for row in out["rows"]]

    def query(self, warehouse: str | os.PathLike[str], statement: str) -> list[dict[str, Any]]:
        """pypaimon-rust's answer to one SELECT (its own pushdown and file-index pruning), as row dicts."""
        out = json.loads(self.run("query", "--warehouse", str(warehouse), "--statement", statement))
        return [dict(zip(out["columns"], row, strict=True)) for row in out["rows"]]

    def write_batch(self, warehouse: str | os.PathLike[str], identifier: str, data: pa.Table) -> None:
        """One commit through the table's batch write builder (pypaimon-rust routes the rows)."""
        with tempfile.TemporaryDirectory(prefix="pypaimon-rust-") as tmp:
            path = Path(tmp) / "data.arrow"
            write_ipc(data, path)
            self.run("write", "--warehouse", str(warehouse), "--table", identifier, "--data", str(path))

    def write_fixed_bucket(self, warehouse: str | os.PathLike[str], identifier: str, data: pa.Table) -> None:
        """One commit into a postpone table's real buckets (its fixed-bucket write builder)."""
        with tempfile.TemporaryDirectory(prefix="pypaimon-rust-") as tmp:
            path = Path(tmp) / "data.arrow"
            write_ipc(data, path)
            self.run("write-fixed-bucket", "--warehouse", str(warehouse), "--table", identifier, "--data", str(path))
