"""The table schema file (`schema/schema-<id>`): fields with ids, keys and options."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import pyarrow as pa

from lake_assets.errors import CorruptMetadataError, UnsupportedFeatureError
from lake_assets.options import CoreOptions
from lake_assets.spec.arrow_types import to_arrow_field
from lake_assets.spec.data_types import DataField, DataType

SCHEMA_VERSION = 3


@dataclass(frozen=True)
class TableSchema:
    """One version of a table's schema, as stored in ``schema/schema-<id>``."""

    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...] = ()
    primary_keys: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)
    comment: str | None = None
    time_millis: int = 0
    version: int = SCHEMA_VERSION

    # ------------------------------------------------------------------ views
    @cached_property
    def field_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    @cached_property
    def _by_name(self) -> dict[str, DataField]:
        return {f.name: f for f in self.fields}

    @cached_property
    def _by_id(self) -> dict[int, DataField]:
        return {f.id: f for f in self.fields}

    def field(self, name: str) -> DataField:
        return self._by_name[name]

    def has_field(self, name: str) -> bool:
        return name in self._by_name

    def field_by_id(self, field_id: int) -> DataField | None:
        return self._by_id.get(field_id)

    def types(self, names: tuple[str, ...] | list[str]) -> list[DataType]:
        return [self._by_name[n].type for n in names]

    @cached_property
    def core_options(self) -> CoreOptions:
        return CoreOptions(self.options, has_primary_key=bool(self.primary_keys))

    @cached_property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        """Primary key fields minus partition fields: the key stored in data files."""
        return tuple(k for k in self.primary_keys if k not in self.partition_keys)

    @cached_property
    def bucket_keys(self) -> tuple[str, ...]:
        explicit = self.core_options.bucket_key
        return explicit or self.trimmed_primary_keys

    @cached_property
    def arrow_schema(self) -> pa.Schema:
        """The logical Arrow schema users read and write."""
        return pa.schema([to_arrow_field(f) for f in self.fields])

    # ------------------------------------------------------------------- JSON
    def to_json(self) -> str:
        d: dict[str, Any] = {
            "version": self.version,
            "id": self.id,
            "fields": [f.to_json() for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            "options": dict(self.options),
        }
        # Java reads a JSON null comment as the text "null": omit it instead.
        if self.comment is not None:
            d["comment"] = self.comment
        d["timeMillis"] = self.time_millis
        return json.dumps(d, indent=2)

    @classmethod
    def from_json(cls, text: str | bytes, name: str = "schema") -> TableSchema:
        try:
            d = json.loads(text)
            version = int(d.get("version", 1))
            options = {str(k): str(v) for k, v in (d.get("options") or {}).items()}
            # Compatibility defaults of old schema versions.
            if version <= 1 and "bucket" not in options:
                options["bucket"] = "1"
            if version <= 2 and "file.format" not in options:
                options["file.format"] = "orc"
            fields = tuple(DataField.from_json(f) for f in d["fields"])
            comment = d.get("comment")
            return cls(
                id=int(d["id"]),
                fields=fields,
                highest_field_id=int(d.get("highestFieldId", max((f.id for f in fields), default=-1))),
                partition_keys=tuple(d.get("partitionKeys") or ()),
                primary_keys=tuple(d.get("primaryKeys") or ()),
                options=options,
                comment=None if comment is None else str(comment),
                time_millis=int(d.get("timeMillis") or 0),
                version=version,
            )
        except CorruptMetadataError as exc:
            raise CorruptMetadataError(f"Schema file {name} is corrupt: {exc}") from exc
        except UnsupportedFeatureError as exc:
            raise UnsupportedFeatureError(f"Cannot use {name}: {exc}") from None
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CorruptMetadataError(f"Schema file {name} is corrupt: {exc!r}") from exc

    def with_options(self, options: dict[str, str]) -> TableSchema:
        return replace(self, options=dict(options))
