"""Reading and writing lake tables from Dagster assets: the shared mechanism of `LakeTableResource`
and `LakeIOManager` (``defs/io_manager.py``).

Reads return Arrow, pandas or polars: the latest state, one or more partitions, a snapshot (id or
tag) or the changes since a snapshot (with a ``_row_kind`` column). Writes take Arrow, pandas or
polars and commit with the core: ``append``, ``overwrite`` (of the given partitions: each one is
replaced by its rows, or emptied when it has none, in its own commit, so a retried run gives the
same table) or ``upsert`` (primary-key tables: rows replace the rows of their keys per the merge
engine). These run in the Dagster process; bulk loads belong in the Spark ingest job.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from lake_assets.defs.resources.warehouse import WarehouseResource
from lake_assets.errors import InvalidArgumentError, SchemaError

if TYPE_CHECKING:
    from lake_assets.table import Table

FrameKind = Literal["arrow", "pandas", "polars"]
WriteMode = Literal["append", "overwrite", "upsert"]
WRITE_MODES: tuple[str, ...] = ("append", "overwrite", "upsert")


def frame_kind(annotation: Any) -> FrameKind:
    """Which frame an annotation asks for: pandas or polars DataFrame, else Arrow (also when untyped)."""
    module = getattr(annotation, "__module__", "") or ""
    if module.startswith("pandas"):
        return "pandas"
    if module.startswith("polars"):
        return "polars"
    return "arrow"


def to_frame(data: pa.Table, kind: FrameKind) -> Any:
    """An Arrow table as the requested frame."""
    if kind == "pandas":
        return data.to_pandas()
    if kind == "polars":
        try:
            import polars as pl
        except ImportError:
            raise InvalidArgumentError("Cannot load as polars: the polars package is not installed") from None
        return pl.from_arrow(data)
    return data


def to_arrow(obj: Any) -> pa.Table:
    """Arrow, pandas or polars data as an Arrow table; anything else is refused by name."""
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    module = type(obj).__module__ or ""
    if module.startswith("pandas") and type(obj).__name__ == "DataFrame":
        return pa.Table.from_pandas(obj, preserve_index=False)
    if module.startswith("polars") and type(obj).__name__ == "DataFrame":
        return obj.to_arrow()
    raise InvalidArgumentError(
        f"Cannot write a {type(obj).__module__}.{type(obj).__qualname__}: return a pyarrow Table, "
        "a pandas DataFrame or a polars DataFrame"
    )


def partition_column(table: Table, column: str | None) -> str:
    """The table partition column that Dagster partition keys name (the only partition key unless given)."""
    keys = list(table.partition_keys)
    if column is not None:
        if column not in keys:
            raise SchemaError(f"Table {table.name}: {column!r} is not a partition key (partition keys: {keys})")
        return column
    if len(keys) != 1:
        raise InvalidArgumentError(
            f"Table {table.name} has partition keys {keys}: say which one Dagster partition keys map to "
            "(metadata lake/partition_column)"
        )
    return keys[0]


def _typed(table: Table, column: str, values: Sequence[str]) -> list[Any]:
    t = table.arrow_schema.field(column).type
    try:
        return [pa.scalar(v).cast(t).as_py() for v in values]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaError(f"Table {table.name}: partition values {list(values)} of {column} are not {t}: "
                          f"{exc}") from None


def read(
    table: Table,
    *,
    partitions: Sequence[str] = (),
    column: str | None = None,
    columns: Sequence[str] | None = None,
    filter: Any = None,
    snapshot_id: int | None = None,
    tag: str | None = None,
    changes_since: int | str | None = None,
    changes_until: int | str | None = None,
) -> pa.Table:
    """Rows of the table (or of ``partitions`` of ``column``), as of a snapshot or tag, or the
    changes in (``changes_since``, ``changes_until``]."""
    if changes_since is not None:
        if snapshot_id is not None or tag is not None or filter is not None:
            raise InvalidArgumentError("changes_since reads changes: it takes no snapshot_id, tag or filter")
        data = table.read_changes(changes_since, changes_until, columns=columns)
        if partitions:
            col = partition_column(table, column)
            data = data.filter(pc.is_in(data[col], pa.array(_typed(table, col, partitions),
                                                            table.arrow_schema.field(col).type)))
        return data
    if changes_until is not None:
        raise InvalidArgumentError("changes_until needs changes_since")
    part: list[Any] = []
    if partitions:
        col = partition_column(table, column)
        part = [(col, "in", _typed(table, col, partitions))]
    if filter and isinstance(filter[0], list):  # an OR of ANDs: the partition condition joins each
        combined = [[*conj, *part] for conj in filter]
    else:
        combined = [*(filter or []), *part]
    return table.to_arrow(snapshot_id=snapshot_id, tag=tag, columns=columns, filter=combined or None)


def write(
    table: Table,
    data: pa.Table,
    mode: str,
    *,
    partitions: Sequence[str] = (),
    column: str | None = None,
) -> list[int]:
    """Commit ``data`` as ``mode``; the ids of the snapshots committed (none when nothing changed).

    With ``partitions`` (the Dagster partitions being materialized) every row must lie in one of
    them, checked before anything is written; ``overwrite`` then replaces each of them, one commit
    per partition. Without, ``overwrite`` replaces the partitions the rows fall in (Paimon's dynamic
    partition overwrite; the whole table when unpartitioned)."""
    if mode not in WRITE_MODES:
        raise InvalidArgumentError(f"Unknown write mode {mode!r} for {table.name} (one of {list(WRITE_MODES)})")
    if mode == "upsert" and not table.primary_keys:
        raise InvalidArgumentError(f"Cannot upsert into {table.name}: it has no primary key (use append or overwrite)")
    if mode == "append" and table.primary_keys:
        # On a primary-key table every write merges by key: call it what it is.
        raise InvalidArgumentError(f"Cannot append to {table.name}: it has primary keys {list(table.primary_keys)}, "
                                   "so rows merge by key (use upsert or overwrite)")
    committed: list[int] = []
    if not partitions:
        snapshot = table.write_arrow(data, overwrite=mode == "overwrite")
        return [snapshot] if snapshot is not None else []
    col = partition_column(table, column)
    values = _typed(table, col, partitions)
    if col not in data.column_names:
        raise SchemaError(f"Cannot write to {table.name}: the data has no partition column {col!r}")
    keys = data[col].cast(table.arrow_schema.field(col).type)
    outside = pc.unique(keys.filter(pc.invert(pc.fill_null(pc.is_in(keys, pa.array(values, keys.type)), False))))
    if len(outside) or keys.null_count:
        shown = outside.to_pylist()[:5] + ([None] if keys.null_count else [])
        raise InvalidArgumentError(f"Cannot write to {table.name}: rows have {col} values {shown} outside the "
                                   f"partitions being materialized {list(partitions)}")
    if mode != "overwrite":
        snapshot = table.write_arrow(data)
        return [snapshot] if snapshot is not None else []
    for text, value in zip(partitions, values, strict=True):
        rows = data.filter(pc.equal(keys, pa.scalar(value, keys.type)))
        snapshot = table.write_arrow(rows, overwrite={col: str(text)})
        if snapshot is not None:
            committed.append(snapshot)
    return committed


class LakeTableResource(dg.ConfigurableResource):
    """One table of the warehouse, for assets that read or write it themselves (as dagster-deltalake's
    ``DeltaTableResource``): ``load()`` gives the core `Table`; `read` and `write` the Arrow/pandas/polars
    conveniences of this module."""

    warehouse: WarehouseResource = Field(description="Where the table lives.")
    table: str = Field(description="Table identifier, db.name.")
    partition_column: str | None = Field(default=None, description="Partition column Dagster partition keys name.")

    def load(self) -> Table:
        """The table (it must exist)."""
        return self.warehouse.table(self.table)

    def read(self, as_: FrameKind = "arrow", *, partitions: Sequence[str] = (), **options: Any) -> Any:
        """Rows (of ``partitions``) as Arrow, pandas or polars; ``options`` as in `read`: columns, filter,
        snapshot_id, tag, changes_since, changes_until."""
        return to_frame(read(self.load(), partitions=partitions, column=self.partition_column, **options), as_)

    def write(self, data: Any, mode: WriteMode = "append", *, partitions: Sequence[str] = ()) -> list[int]:
        """Commit Arrow/pandas/polars data (see `write`); the committed snapshot ids."""
        return write(self.load(), to_arrow(data), mode, partitions=partitions, column=self.partition_column)
