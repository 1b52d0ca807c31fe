"""The table factory as a Dagster Component: ``type: lake_assets.defs.component.LakeTablesComponent``.

The same definitions as the ``lake_assets.defs.definitions`` code location (lake.yaml keeps working),
declared in a ``defs.yaml`` of a `dg` project's defs folder, either by pointing at a lake.yaml::

    type: lake_assets.defs.component.LakeTablesComponent
    attributes:
      config_file: lake.yaml          # relative to this folder

or inline, with lake.yaml's keys as attributes (``warehouse``, ``spark``, ``automation``,
``timezone``, ``tables``; Dagster's ``{{ env.NAME }}`` templates work in them). From Python::

    @dg.component_instance
    def load(context: dg.ComponentLoadContext) -> LakeTablesComponent:
        return LakeTablesComponent(config_file="lake.yaml")

``dg scaffold defs lake_assets.defs.component.LakeTablesComponent <path>`` writes a defs.yaml and a
starter lake.yaml (the package registers this module for `dg` under ``dagster_dg_cli.registry_modules``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import yaml
from dagster.components.component_scaffolding import scaffold_component
from pydantic import BaseModel

from lake_assets.defs.config import LakeConfig, LakeConfigError, load_config, parse_config
from lake_assets.defs.factory import build_definitions

INLINE_KEYS = ("warehouse", "spark", "automation", "timezone", "tables")

STARTER = """\
# Tables of this component (the keys of lake.yaml; reference: lake_assets docs/dagster.md).
warehouse: {kind: local, path: warehouse}
spark: {master: "local[*]", launcher: pipes}
automation: {default_status: stopped}   # running: sensors and automation conditions start on load
tables:
  - identifier: db.events
    schema: {event_id: BIGINT, day: DATE, kind: STRING}
    partition_keys: [day]
    ingest: {source: "landing/events/{date}/*.parquet", format: parquet, start_date: 2024-01-01,
             partition_column: day}
"""


class ScaffoldParams(BaseModel):
    """``dg scaffold defs ... --config-file``: the lake.yaml the component reads."""

    config_file: str = "lake.yaml"


class LakeTablesScaffolder(dg.Scaffolder[ScaffoldParams]):
    """defs.yaml pointing at a lake.yaml, and a starter lake.yaml when there is none."""

    @classmethod
    def get_scaffold_params(cls) -> type[ScaffoldParams]:
        return ScaffoldParams

    def scaffold(self, request: dg.ScaffoldRequest[ScaffoldParams]) -> None:
        params = request.params or ScaffoldParams()
        scaffold_component(request, {"config_file": params.config_file})
        target = request.target_path / params.config_file
        if request.scaffold_format == "yaml" and not target.exists():
            target.write_text(STARTER)


@dg.scaffold_with(LakeTablesScaffolder)
class LakeTablesComponent(dg.Component, dg.Model, dg.Resolvable):
    """Paimon tables kept healthy by lake_assets: per table the ingest, compaction, expiry, orphan
    and changelog assets, their checks, jobs, schedules, sensors and automation conditions."""

    config_file: str | None = None
    warehouse: dict[str, Any] | None = None
    spark: dict[str, Any] | None = None
    automation: dict[str, Any] | None = None
    timezone: str | None = None
    tables: list[dict[str, Any]] | None = None

    def lake_config(self, base_dir: Path) -> LakeConfig:
        """The validated config; relative paths resolve against ``base_dir`` (the component's folder)."""
        inline = {k: getattr(self, k) for k in INLINE_KEYS if getattr(self, k) is not None}
        if self.config_file is not None:
            if inline:
                raise LakeConfigError(f"{base_dir}: set config_file or the inline keys {sorted(inline)}, not both")
            path = Path(self.config_file)
            return load_config(path if path.is_absolute() else base_dir / path)
        if not inline:
            raise LakeConfigError(f"{base_dir}: set config_file (a lake.yaml) or the inline keys {list(INLINE_KEYS)}")
        # Inline attributes validate exactly as a lake.yaml would (yaml round trip: plain data only).
        data = yaml.safe_load(yaml.safe_dump(inline))
        return parse_config(data, base_dir=base_dir, source=f"{base_dir} (component attributes)")

    def build_defs(self, context: dg.ComponentLoadContext) -> dg.Definitions:
        return build_definitions(self.lake_config(context.path))
