"""Reading lake.yaml: secrets from the environment, relative paths, errors that name the entry and field."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg
import yaml
from pydantic import ValidationError

from lake_assets.defs.config.models import LakeConfig, TableConfig

CONFIG_ENV = "LAKE_CONFIG"
DEFAULT_NAME = "lake.yaml"


class LakeConfigError(ValueError):
    """lake.yaml is missing, not YAML, or does not validate; the message lists every problem."""

def config_path() -> Path:
    """``$LAKE_CONFIG``, else ./lake.yaml, else the lake.yaml of the source checkout."""
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env)
    here = Path(DEFAULT_NAME)
    if here.exists():
        return here
    return Path(__file__).resolve().parents[3] / DEFAULT_NAME


def load_config(path: str | os.PathLike[str] | None = None) -> LakeConfig:
    """Load and validate lake.yaml; relative paths resolve against the file's folder."""
    p = Path(path) if path is not None else config_path()
    try:
        data = yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise LakeConfigError(f"{p}: no such file (set {CONFIG_ENV} to the table config)") from None
    except yaml.YAMLError as exc:
        raise LakeConfigError(f"{p}: not valid YAML: {exc}") from None
    return parse_config(data, base_dir=p.resolve().parent, source=str(p))


def parse_config(data: Any, *, base_dir: Path, source: str = "lake.yaml") -> LakeConfig:
    """Validate already-parsed YAML."""
    if not isinstance(data, dict):
        raise LakeConfigError(f"{source}: expected a mapping with warehouse, spark and tables")
    data = dict(data)
    if isinstance(data.get("warehouse"), dict):
        data["warehouse"] = {k: _env_ref(v) for k, v in data["warehouse"].items()}
    try:
        config = LakeConfig.model_validate(data)
    except ValidationError as exc:
        raise LakeConfigError(format_errors(exc, data, source)) from None
    return _resolve_paths(config, base_dir)


def _env_ref(value: Any) -> Any:
    """``{env: NAME}`` → an EnvVar, read when the resource is used (never shown in the UI)."""
    if isinstance(value, dict) and set(value) == {"env"}:
        return dg.EnvVar(str(value["env"]))
    return value


def format_errors(exc: ValidationError, data: dict[str, Any], source: str) -> str:
    """One line per problem: ``tables[1] (demo.flights).ingest.format: Input should be ...``."""
    lines = [f"{source} is invalid ({exc.error_count()} problem{'s' if exc.error_count() > 1 else ''}):"]
    for err in exc.errors():
        loc = list(err["loc"])
        where = []
        if len(loc) >= 2 and loc[0] == "tables" and isinstance(loc[1], int):
            entry = data["tables"][loc[1]] if loc[1] < len(data.get("tables") or []) else None
            name = entry.get("identifier", "?") if isinstance(entry, dict) else "?"
            where.append(f"tables[{loc[1]}] ({name})")
            loc = loc[2:]
        where.extend(str(part) for part in loc)
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"  {'.'.join(where) or '<root>'}: {msg}")
    return "\n".join(lines)


def _resolve(base_dir: Path, path: str) -> str:
    if "://" in path or Path(path).is_absolute():
        return path
    return str((base_dir / path).resolve())


def _resolve_paths(config: LakeConfig, base_dir: Path) -> LakeConfig:
    updates: dict[str, Any] = {}
    if config.warehouse.kind == "local":
        updates["warehouse"] = config.warehouse.model_copy(update={"path": _resolve(base_dir, config.warehouse.path)})
    if config.spark.jobs_dir is not None:
        updates["spark"] = config.spark.model_copy(update={"jobs_dir": _resolve(base_dir, config.spark.jobs_dir)})
    updates["tables"] = [_resolve_table(t, base_dir) for t in config.tables]
    return config.model_copy(update=updates)


def _resolve_table(table: TableConfig, base_dir: Path) -> TableConfig:
    updates: dict[str, Any] = {}
    if table.ingest is not None:
        updates["ingest"] = table.ingest.model_copy(update={"source": _resolve(base_dir, table.ingest.source)})
    changelog = table.maintenance.changelog
    if changelog.export_path:
        resolved = changelog.model_copy(update={"export_path": _resolve(base_dir, changelog.export_path)})
        updates["maintenance"] = table.maintenance.model_copy(update={"changelog": resolved})
    return table.model_copy(update=updates) if updates else table
