"""pypaimon reads vector 02 after every manifest and manifest list is rewritten by our encoder."""

from __future__ import annotations

import dataclasses
import io
import json
import shutil
from pathlib import Path

import fastavro
import pytest

from lake_assets.formats.manifest_codec import (
    decode_manifest_entries,
    decode_manifest_list,
    encode_manifest_entries,
    encode_manifest_list,
)
from lake_assets.formats.manifest_schemas import MANIFEST_ENTRY_SCHEMA, MANIFEST_FILE_META_SCHEMA
from tests.interop.driver_server import DriverForkServer
from tests.interop.paimon import Pypaimon, driver_env
from tests.vectors import VECTORS_DIR

PAIMON_PYTHON = Pypaimon().python  # .venv-paimon, or $PYPAIMON_PYTHON (worktrees, other layouts)
VECTOR = VECTORS_DIR / "02_pk_partitioned"

pytestmark = [
    pytest.mark.interop,
    pytest.mark.skipif(
        not PAIMON_PYTHON.exists(),
        reason=f"pypaimon virtualenv missing: {PAIMON_PYTHON} (interop check needs pypaimon 2.1.0)",
    ),
]

# Runs under .venv-paimon: prints the rows pypaimon reads, sorted like expected.json.
READ_SCRIPT = """
import json, sys
from pypaimon import CatalogFactory
warehouse, snapshot_id = sys.argv[1], sys.argv[2]
table = CatalogFactory.create({"warehouse": warehouse}).get_table("db.pk")
if snapshot_id:
    table = table.copy({"scan.snapshot-id": snapshot_id})
builder = table.new_read_builder()
arrow = builder.new_read().to_arrow(builder.new_scan().plan().splits())
rows = sorted(arrow.to_pylist(), key=lambda r: (r["dt"], r["id"]))
print(json.dumps({"columns": arrow.schema.names, "rows": rows}))
"""


def _rewrite_table(table: Path, codec: str) -> None:
    """Decode and re-encode every manifest, then every list, fixing the recorded sizes."""
    manifest_dir = table / "manifest"
    for path in sorted(manifest_dir.glob("manifest-*")):
        if not path.name.startswith("manifest-list-"):
            entries = decode_manifest_entries(path.read_bytes(), path.name)
            path.write_bytes(encode_manifest_entries(entries, codec))
    for path in sorted(manifest_dir.glob("manifest-list-*")):
        metas = decode_manifest_list(path.read_bytes(), path.name)
        fixed = [dataclasses.replace(m, file_size=(manifest_dir / m.file_name).stat().st_size) for m in metas]
        path.write_bytes(encode_manifest_list(fixed, codec))
    for snap in sorted((table / "snapshot").glob("snapshot-*")):
        doc = json.loads(snap.read_text())
        for key in ("baseManifestList", "deltaManifestList", "changelogManifestList"):
            if doc.get(key):
                doc[key + "Size"] = (manifest_dir / doc[key]).stat().st_size
        snap.write_text(json.dumps(doc))


def _read_with_pypaimon(warehouse: Path, snapshot_id: str = "") -> dict:
    script = warehouse.parent / "read_pk.py"
    script.write_text(READ_SCRIPT)
    driver = Pypaimon()  # its fork server: a process of its own that has pypaimon imported already
    rc, stdout, stderr = DriverForkServer.for_python(PAIMON_PYTHON).call(
        script, [str(warehouse), snapshot_id], driver_env(), timeout=driver.timeout)
    assert rc == 0, stderr[-4000:]
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("codec", ["zstandard", "null", "deflate", "snappy"])
def test_pypaimon_reads_our_manifests(tmp_path: Path, codec: str) -> None:
    warehouse = tmp_path / "warehouse"
    shutil.copytree(VECTOR / "warehouse", warehouse)
    table = warehouse / "db.db" / "pk"
    _rewrite_table(table, codec)

    # Every Avro file is now ours: Java record names, Java field sets, the chosen codec.
    for path in (table / "manifest").iterdir():
        reader = fastavro.reader(io.BytesIO(path.read_bytes())) if codec in ("null", "deflate") else None
        header = path.read_bytes()[:4096]
        assert b"org.apache.paimon.avro.generated.record" in header
        assert b"ManifestEntry" not in header and b"ManifestFileMeta" not in header
        assert codec.encode() in header
        if reader is not None:
            schema = json.loads(reader.metadata["avro.schema"])
            want = (
                MANIFEST_FILE_META_SCHEMA if path.name.startswith("manifest-list-") else MANIFEST_ENTRY_SCHEMA
            )
            assert schema == want

    expected = json.loads((VECTOR / "expected.json").read_text())
    got = _read_with_pypaimon(warehouse)
    assert got["columns"] == expected["columns"]
    assert got["rows"] == expected["rows"]

    expected_1 = json.loads((VECTOR / "expected_snapshot_1.json").read_text())
    got_1 = _read_with_pypaimon(warehouse, "1")
    assert got_1["rows"] == expected_1["rows"]
