"""The options of the ``lake`` data source, parsed once into a small picklable value.

Spark hands options over as a case-insensitive dict whose keys arrive lower-cased, so every key
here is matched in lower case. The table identifier is the path (``load("db.orders")``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lake_assets.catalog import Catalog
from lake_assets.errors import OptionError
from lake_assets.table import Table

STORAGE_PREFIX = "storage."

# Read options, by the names Paimon's Spark connector uses where it has one (aliases second).
SNAPSHOT_ID = ("snapshot-id", "scan.snapshot-id", "versionasof")
TAG = ("tag", "scan.tag-name")
TIMESTAMP = ("timestamp", "scan.timestamp-millis", "timestampasof")
INCREMENTAL_BETWEEN = ("incremental-between",)
INCREMENTAL_SOURCE = ("incremental-source", "incremental-between-scan-mode")
READ_CHANGELOG = ("read.changelog",)
SPLIT_TARGET_SIZE = ("source.split.target-size",)
SPLIT_OPEN_FILE_COST = ("source.split.open-file-cost",)
SPLIT_MIN_PARTITIONS = ("source.split.min-partitions",)
PARTITION_OVERWRITE_MODE = ("partitionoverwritemode",)
OVERWRITE_PARTITION = ("overwrite-partition",)
FILTER = ("filter",)
SCAN_MODE = ("scan.mode",)
FILTER_PUSHDOWN = ("filter-pushdown",)
# Paimon's ``branch`` option: the branch a read opens (`Catalog.get_table`'s ``db.t$branch_<b>``).
BRANCH = ("branch",)


def storage_value(text: str) -> Any:
    """Storage option text → value: JSON objects, arrays and booleans are decoded (fsspec wants
    ``client_kwargs`` as a dict and ``anon`` as a bool); anything else stays text, so that a key
    such as ``12345`` is not turned into a number."""
    s = text.strip()
    if s[:1] in ("{", "[") or s in ("true", "false"):
        try:
            return json.loads(s)
        except json.JSONDecodeError as exc:
            raise OptionError(f"Storage option value {text!r} looks like JSON but does not parse: {exc}") from None
    return text


def storage_option_text(value: Any) -> str:
    """The inverse of `storage_value`, for passing Python storage options through Spark options."""
    return value if isinstance(value, str) else json.dumps(value)


def with_branch(identifier: str, branch: str | None) -> str:
    """The identifier of ``branch`` of the table ``identifier`` (Paimon's ``db.t$branch_<b>``); the
    main branch, or no ``branch`` option, leaves it as it is. A branch in both is refused unless
    they agree (one of them would otherwise be ignored)."""
    name = "" if branch is None else branch.strip()
    if name in ("", "main"):
        return identifier
    suffix = f"$branch_{name}"
    if identifier.endswith(suffix):
        return identifier
    if "$branch_" in identifier:
        raise OptionError(f"Option 'branch' ({branch!r}) contradicts the branch of table identifier {identifier!r}")
    return identifier + suffix


@dataclass(frozen=True)
class SourceOptions:
    """Where the table is (warehouse, storage options, identifier) plus every other option as given."""

    identifier: str
    warehouse: str
    storage: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """Parse Spark's options; raise `OptionError` naming what is missing."""
        raw = {str(k).lower(): str(v) for k, v in options.items()}
        identifier = raw.get("path") or raw.get("table")
        if not identifier:
            raise OptionError(
                "The lake data source needs a table identifier: load('db.table') / save('db.table') "
                "or option('table', 'db.table')"
            )
        warehouse = raw.get("warehouse")
        if not warehouse:
            raise OptionError(f"The lake data source needs option('warehouse', <url>) to find table {identifier}")
        storage = {k[len(STORAGE_PREFIX):]: storage_value(v) for k, v in raw.items() if k.startswith(STORAGE_PREFIX)}
        return cls(with_branch(identifier, raw.get(BRANCH[0])), warehouse, storage, raw)

    def get(self, keys: tuple[str, ...], default: str | None = None) -> str | None:
        """The first of ``keys`` that is set (keys are aliases of one option)."""
        for k in keys:
            if k in self.raw:
                return self.raw[k]
        return default

    def get_int(self, keys: tuple[str, ...]) -> int | None:
        v = self.get(keys)
        if v is None:
            return None
        try:
            return int(v.strip())
        except ValueError:
            raise OptionError(f"Option {keys[0]!r} must be an integer, got {v!r}") from None

    def get_bool(self, keys: tuple[str, ...], default: bool = False) -> bool:
        v = self.get(keys)
        if v is None:
            return default
        if v.strip().lower() not in ("true", "false"):
            raise OptionError(f"Option {keys[0]!r} must be 'true' or 'false', got {v!r}")
        return v.strip().lower() == "true"

    def table(self, schema_id: int | None = None) -> Table:
        """Open the table; with ``schema_id``, pin it to that schema (what Spark was told it has)."""
        table = Catalog(self.warehouse, **dict(self.storage)).get_table(self.identifier)
        if schema_id is not None and schema_id != table.schema.id:
            # Spark planned against this schema; reading another would break the declared columns.
            pinned = table.store.schema_by_id(schema_id)
            # an older schema is a time travel's: its fields with the current options, as Paimon
            table.schema = pinned.with_options(table.schema.options) if pinned.id < table.schema.id else pinned
        return table

    @property
    def is_streaming_start(self) -> bool:
        """``scan.mode`` is set: ``scan.snapshot-id`` / ``timestamp`` say where a stream starts."""
        return self.get(SCAN_MODE) is not None

    @property
    def is_incremental(self) -> bool:
        return self.get(INCREMENTAL_BETWEEN) is not None

    @property
    def with_row_kind(self) -> bool:
        """Whether rows carry ``_row_kind``: incremental reads always, others with ``read.changelog``."""
        return self.is_incremental or self.get_bool(READ_CHANGELOG)

    def time_travel(self) -> dict[str, Any]:
        """``resolve_snapshot`` keyword arguments from ``snapshot-id`` / ``tag`` / ``timestamp``."""
        out: dict[str, Any] = {}
        sid = self.get_int(SNAPSHOT_ID)
        if sid is not None:
            out["snapshot_id"] = sid
        tag = self.get(TAG)
        if tag is not None:
            out["tag"] = tag
        ts = self.get(TIMESTAMP)
        if ts is not None:
            out["timestamp"] = int(ts) if ts.strip().lstrip("-").isdigit() else ts
        if len(out) > 1:
            raise OptionError(f"Pass at most one of snapshot-id, tag and timestamp, got {sorted(out)}")
        return out

    def incremental_range(self) -> tuple[int | str, int | str]:
        """``incremental-between`` = "start,end" (snapshot ids or tag names): changes in (start, end]."""
        text = self.get(INCREMENTAL_BETWEEN) or ""
        parts = [p.strip() for p in text.split(",")]
        if len(parts) != 2 or not all(parts):
            raise OptionError(f"Option 'incremental-between' must be 'start,end' (ids or tags), got {text!r}")
        return tuple(int(p) if p.isdigit() else p for p in parts)  # type: ignore[return-value]

    def incremental_source(self) -> str:
        v = (self.get(INCREMENTAL_SOURCE) or "auto").strip().lower()
        if v not in ("auto", "delta", "changelog"):
            raise OptionError(f"Option 'incremental-source' must be auto, delta or changelog, got {v!r}")
        return v
