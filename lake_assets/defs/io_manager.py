"""`LakeIOManager`: assets return Arrow/pandas/polars data that is written to a lake table, and
downstream assets load a table, its partitions, a snapshot or the changes since one.

The table of an asset is its metadata ``lake/table`` (else the asset key's last two parts,
``["shop", "orders"]`` → ``shop.orders``). Output metadata (``dg.asset(metadata=...)``):
``lake/write_mode`` (append | overwrite | upsert; overwrite replaces the partitions being
materialized), ``lake/partition_column``, and for a table that does not exist yet
``lake/primary_keys``, ``lake/partition_keys``, ``lake/options`` (it is created from the first
output's schema). Input metadata (``dg.AssetIn(metadata=...)``): ``lake/columns``,
``lake/filter``, ``lake/snapshot_id``, ``lake/tag``, ``lake/changes_since``, ``lake/changes_until``.
The input's annotation picks the frame: ``pd.DataFrame``, ``pl.DataFrame``, else ``pa.Table``.
A partitioned downstream asset loads the partitions it materializes.
"""

from __future__ import annotations

from typing import Any

import dagster as dg
from pydantic import Field

from lake_assets.catalog_names import parse_identifier
from lake_assets.defs.resources.tables import WRITE_MODES, frame_kind, read, to_arrow, to_frame, write
from lake_assets.defs.resources.warehouse import WarehouseResource
from lake_assets.errors import InvalidArgumentError
from lake_assets.table import Table

READ_OPTIONS = ("columns", "filter", "snapshot_id", "tag", "changes_since", "changes_until")


def table_identifier(key: dg.AssetKey, metadata: dict[str, Any] | None) -> str:
    """``lake/table`` metadata, else ``<second-last>.<last>`` of the asset key."""
    name = (metadata or {}).get("lake/table")
    if name:
        return str(name)
    if len(key.path) < 2:
        raise InvalidArgumentError(f"Asset {key.to_user_string()}: name its table with metadata lake/table "
                                   "(or use a key of the form [db, table])")
    return f"{key.path[-2]}.{key.path[-1]}"


class LakeIOManager(dg.ConfigurableIOManager):
    """Stores asset outputs in lake tables and loads them for downstream assets (see the module doc)."""

    warehouse: WarehouseResource = Field(description="Where the tables live.")
    default_write_mode: str = Field(default="append", description="append | overwrite | upsert when an "
                                    "asset does not say (metadata lake/write_mode).")

    def _table_for_output(self, context: dg.OutputContext, data: Any) -> Table:
        meta = dict(context.definition_metadata or {})
        identifier = table_identifier(context.asset_key, meta)
        existing = self.warehouse.table_if_exists(identifier)
        if existing is not None:
            return existing
        catalog = self.warehouse.catalog()
        catalog.create_database(parse_identifier(identifier)[0], ignore_if_exists=True)
        context.log.info(f"Creating {identifier} from the output's schema")
        return catalog.create_table(
            identifier, data.schema,
            primary_keys=list(meta.get("lake/primary_keys") or []),
            partition_keys=list(meta.get("lake/partition_keys") or []),
            options={str(k): str(v) for k, v in (meta.get("lake/options") or {}).items()},
            ignore_if_exists=True,
        )

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        """Write the asset's data (None writes nothing: the asset wrote the table itself)."""
        if obj is None:
            return
        meta = dict(context.definition_metadata or {})
        mode = str(meta.get("lake/write_mode") or self.default_write_mode)
        if mode not in WRITE_MODES:
            raise InvalidArgumentError(f"Asset {context.asset_key.to_user_string()}: lake/write_mode {mode!r} "
                                       f"is not one of {list(WRITE_MODES)}")
        data = to_arrow(obj)
        table = self._table_for_output(context, data)
        partitions = list(context.asset_partition_keys) if context.has_asset_partitions else []
        snapshots = write(table, data, mode, partitions=partitions, column=meta.get("lake/partition_column"))
        context.add_output_metadata({
            "dagster/table_name": table.name,
            "write_mode": mode,
            "rows_written": data.num_rows,
            # every commit of the output; left out when it wrote nothing
            **({"snapshot_ids": dg.MetadataValue.text(", ".join(map(str, snapshots)))} if snapshots else {}),
        })

    def load_input(self, context: dg.InputContext) -> Any:
        """The upstream asset's table (its partitions when the input is partitioned) as the annotated frame."""
        upstream = context.upstream_output
        upstream_meta = dict(upstream.definition_metadata or {}) if upstream is not None else {}
        input_meta = dict(context.definition_metadata or {})
        table = self.warehouse.table(table_identifier(context.asset_key, {**upstream_meta, **input_meta}))
        options = {k: input_meta[f"lake/{k}"] for k in READ_OPTIONS if input_meta.get(f"lake/{k}") is not None}
        partitions = list(context.asset_partition_keys) if context.has_asset_partitions else []
        column = input_meta.get("lake/partition_column") or upstream_meta.get("lake/partition_column")
        data = read(table, partitions=partitions, column=column, **options)
        return to_frame(data, frame_kind(context.dagster_type.typing_type))
