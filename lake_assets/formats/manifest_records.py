"""Reading manifest records written by any Paimon writer, by the rules of Avro schema resolution.

Files of other writers (Java 0.9 and 1.x, pypaimon, paimon-rust) differ from ours in record names,
optional fields and nullable wrappers; they are read against a reader schema derived from ours
(`manifest_schemas.AvroSchema`): fields match by name (`avro_record_paths`), writer fields we do
not know are skipped, optional fields a writer lacks read as None, and a missing or null required
field fails. Resolution is worked out once per writer schema (`avro_resolution`) where it needs no
per-value work beyond null checks and defaults; other writer schemas go through fastavro's
per-record resolution, whose failure is the error naming the file (`avro_mismatch` names the field).
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import fastavro
from fastavro.read import SchemaResolutionError

from lake_assets.errors import CorruptMetadataError, UnsupportedFeatureError
from lake_assets.formats.avro_container import read_container
from lake_assets.formats.avro_mismatch import explain_mismatch
from lake_assets.formats.avro_record_paths import path_named
from lake_assets.formats.avro_resolution import UnexpectedNull, projection_for

if TYPE_CHECKING:
    from lake_assets.formats.manifest_schemas import AvroSchema

__all__ = ["read_records"]


class _Unreadable(Exception):
    """The writer schema or a record cannot be read as the reader schema (the message says why)."""


def _resolved(plain: bytes, writer: Any, schema: AvroSchema) -> list[Any]:
    """Records resolved one by one by fastavro against the reader schema (its messages explained)."""
    try:
        return list(fastavro.reader(io.BytesIO(plain), reader_schema=schema.reader))
    except SchemaResolutionError as exc:
        raise _Unreadable(explain_mismatch(plain, writer, schema.reader, exc)) from exc


def _decoded(plain: bytes, writer: Any, schema: AvroSchema, resolve_each_record: bool) -> list[Any]:
    if resolve_each_record:
        return _resolved(plain, writer, schema)
    projection = projection_for(writer, schema.reader_json)
    if projection is None:
        return _resolved(plain, writer, schema)
    # Decoded with the writer schema alone, then projected by a plan made once per writer schema:
    # fastavro's resolution per record costs as much as the decoding itself.
    records = list(fastavro.reader(io.BytesIO(plain)))
    try:
        return projection.apply(records)
    except UnexpectedNull:
        return _resolved(plain, writer, schema)  # fails, naming the record and the field


# The magic bytes of the other formats Paimon 0.9-1.3's `manifest.format` could choose: such a file is
# not damaged, it is one lake_assets does not read (docs/format.md §4.1).
_OTHER_MANIFEST_FORMATS = {b"ORC": "an ORC", b"PAR1": "a Parquet"}


def read_records(
    data: bytes, name: str, schema: AvroSchema, *, resolve_each_record: bool = False
) -> list[dict[str, Any]]:
    """Records of a container read as ``schema``, with their ``_VERSION`` checked; ``name`` only
    labels errors (CorruptMetadataError). ``resolve_each_record`` reads through fastavro's
    per-record resolution instead of the plan (the reference the plan is tested against)."""
    records: list[Any]
    other = _OTHER_MANIFEST_FORMATS.get(bytes(data[:4])) or _OTHER_MANIFEST_FORMATS.get(bytes(data[:3]))
    if other is not None:
        raise UnsupportedFeatureError(
            f"Cannot read manifest file {name}: it is {other} file, not Avro (Paimon 0.9-1.3 write manifests "
            f"so under the table option manifest.format = '{other.split()[-1].lower()}'); lake_assets reads Avro "
            "manifests only")
    try:
        writer, plain = read_container(data, path_named)
        records = _decoded(plain, path_named(writer), schema, resolve_each_record)
    except _Unreadable as exc:
        raise CorruptMetadataError(f"Cannot decode Avro file {name}: {exc}") from exc
    except Exception as exc:  # fastavro, codecs and json raise many types; callers get one
        raise CorruptMetadataError(f"Cannot decode Avro file {name}: {exc}") from exc
    for rec in records:
        if rec["_VERSION"] != schema.version:
            raise CorruptMetadataError(
                f"Cannot decode Avro file {name}: unsupported _VERSION {rec['_VERSION']} (expected {schema.version})"
            )
    return records
