"""A Flink table with Paimon 0.9-1.3's ``manifest.format = orc``: Java 0.9 writes its manifest lists
and manifests as ORC. lake_assets reads Avro manifests only, so every operation is refused naming the
option (reads and compaction failed as damaged metadata, expiry and orphan removal called it an
unknown option), nothing on storage changes. ALTER is refused too: Java reads every manifest in the
format the option names now, so setting it back to avro breaks Java's reads of the table; after
Java's own such ALTER, our reads say what the manifest files are instead of "bad magic"."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, UnsupportedFeatureError
from tests.java.oracle import JavaError, PaimonJava

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])

CALLS = {
    "read": lambda t: t.to_arrow(),
    "read_changes": lambda t: t.read_changes(1),
    "health": lambda t: t.health(),
    "compact": lambda t: t.compact(full=True),
    "write": lambda t: t.write_arrow(pa.table({"id": [9], "v": ["z"]}, schema=SCHEMA)),
    "expire": lambda t: t.expire_snapshots(retain_min=1, retain_max=1),
    "orphans": lambda t: t.remove_orphan_files(dry_run=True),
    "tag": lambda t: t.create_tag("t1"),
    "alter": lambda t: t.update_schema().set_option("manifest.format", "avro").commit(),
}


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_orc_manifests_are_refused_by_name_and_nothing_changes(java: PaimonJava, wh: str, lake: Catalog) -> None:
    java.create_table(wh, "db.mf", SCHEMA, primary_keys=["id"], options={"bucket": "1", "manifest.format": "orc"})
    for i in range(2):
        java.write(wh, "db.mf", pa.table({"id": [1, 2], "v": [f"a{i}", f"b{i}"]}, schema=SCHEMA))
    table_dir = Path(wh) / "db.db" / "mf"
    assert (table_dir / "manifest").is_dir()
    lists = sorted((table_dir / "manifest").glob("manifest-list-*"))
    assert lists and lists[0].read_bytes()[:3] == b"ORC"  # Java 0.9 honours the option
    before = tree(table_dir)
    table = lake.get_table("db.mf")
    for what, call in CALLS.items():
        with pytest.raises(UnsupportedFeatureError, match=r"manifest\.format = 'orc'.*Avro manifests only"):
            call(table)
        assert tree(table_dir) == before, f"{what} changed db.mf"

    # Java's own ALTER back to avro leaves ORC manifests that Java itself then fails on; ours name them
    java.alter_table(wh, "db.mf", {"change": "set_option", "key": "manifest.format", "value": "avro"})
    with pytest.raises(JavaError, match="manifest list"):
        java.read(wh, "db.mf")
    with pytest.raises(UnsupportedFeatureError, match=r"is an ORC file, not Avro .*manifest\.format = 'orc'"):
        lake.get_table("db.mf").to_arrow()
