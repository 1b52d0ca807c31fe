"""Manifests and manifest lists Paimon Java 0.9 writes decode through a resolution plan exactly as
through fastavro's per-record resolution (its writer schemas differ from ours: record names and the
fields 0.9 predates)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.formats import manifest_codec as codec
from lake_assets.formats.avro_container import read_container
from lake_assets.formats.avro_record_paths import path_named
from lake_assets.formats.avro_resolution import projection_for
from lake_assets.formats.manifest_schemas import read_records
from tests.java.oracle import PaimonJava

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def test_java_manifests_decode_through_a_plan_like_resolution(java: PaimonJava, wh: str, lake: Catalog) -> None:
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    for i in range(3):
        ids = range(i * 10, i * 10 + 20)
        java.write(wh, "db.t", pa.table({"id": pa.array(ids, pa.int64()), "dt": [f"d{k % 2}" for k in ids],
                                         "v": [f"r{i}" if k % 3 else None for k in ids]}, schema=SCHEMA))
    java.compact(wh, "db.t")
    files = sorted((Path(wh) / "db.db" / "t" / "manifest").iterdir())
    kinds = {"manifest-list-": (codec._LIST, codec._meta_from), "manifest-": (codec._ENTRY, codec._entry_from)}
    seen = set()
    for path in files:
        prefix = next((p for p in kinds if path.name.startswith(p)), None)
        if prefix is None:
            continue
        schema, convert = kinds[prefix]
        data = path.read_bytes()
        writer, _ = read_container(data, path_named)
        projection = projection_for(path_named(writer), schema.reader_json)
        assert projection is not None and not projection.identity, path.name
        fast = read_records(data, path.name, schema)
        reference = read_records(data, path.name, schema, resolve_each_record=True)
        assert fast == reference
        assert codec._convert(fast, path.name, convert) == codec._convert(reference, path.name, convert)
        seen.add(prefix)
    assert seen == set(kinds)
    # And the table those manifests describe reads as Java reads it.
    assert lake.get_table("db.t").to_arrow().num_rows == java.read(wh, "db.t").num_rows
