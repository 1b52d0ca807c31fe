"""The asset factory: per table, ingest → compaction → expiry → orphans, and ingest → changelog.

Each table is one asset group (``<db>_<table>``) with keys ``<db>/<table>_<step>``.
"""

from __future__ import annotations

import dagster as dg

from lake_assets.defs.assets.changelog import build_changelog_asset
from lake_assets.defs.assets.compaction import CompactionConfig, build_compaction_asset
from lake_assets.defs.assets.expiry import ExpiryConfig, build_expiry_asset
from lake_assets.defs.assets.ingest import build_ingest_asset
from lake_assets.defs.assets.orphans import OrphansConfig, build_orphans_asset
from lake_assets.defs.assets.partition_expiry import build_partition_expiry_asset
from lake_assets.defs.config import TableConfig

__all__ = ["CompactionConfig", "ExpiryConfig", "OrphansConfig", "build_table_assets"]


def build_table_assets(spec: TableConfig, timezone: str = "UTC") -> list[dg.AssetsDefinition]:
    """The assets of one table entry of lake.yaml."""
    assets = []
    if spec.ingest is not None:
        assets.append(build_ingest_asset(spec, timezone))
    builders = {"compaction": build_compaction_asset, "expiry": build_expiry_asset, "orphans": build_orphans_asset,
                "changelog": build_changelog_asset, "partition_expiry": build_partition_expiry_asset}
    return assets + [builders[step](spec) for step in spec.maintenance_steps]
