"""A new stream enumerator reads the latest snapshot once: the snapshot its start mode reads
(``latest-full``'s full phase, ``latest``'s position) also fixes its schema
(`StreamEnumerator.read_schema`), instead of a second read of the latest snapshot file."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


@pytest.fixture
def table(catalog: Catalog) -> Table:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        t.write_arrow(pa.table({"id": [i], "v": [str(i)]}, schema=SCHEMA))
    return t


def _snapshot_reads(table: Table, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    read_bytes = table.file_io.read_bytes

    def counting(path: str) -> bytes:
        if "/snapshot/snapshot-" in path:
            reads.append(path.rsplit("/", 1)[1])
        return read_bytes(path)

    monkeypatch.setattr(table.file_io, "read_bytes", counting)
    return reads


@pytest.mark.parametrize("mode", ["latest-full", "latest"])
def test_a_new_stream_reads_the_latest_snapshot_once(table: Table, monkeypatch: pytest.MonkeyPatch, mode: str):
    reads = _snapshot_reads(table, monkeypatch)
    stream = table.stream(mode=mode)
    assert reads.count("snapshot-3") == 1, reads
    assert stream.position == 4
    assert stream.read_schema.id == table.schema.id
    # it still plans what it did: the full phase of snapshot 3, or nothing until a new snapshot
    batches = stream.poll()
    assert [b.snapshot_id for b in batches] == ([3] if mode == "latest-full" else [])


def test_a_stream_started_elsewhere_reads_the_latest_once_for_its_schema(table: Table,
                                                                        monkeypatch: pytest.MonkeyPatch):
    reads = _snapshot_reads(table, monkeypatch)
    stream = table.stream(position=2)
    assert reads == ["snapshot-3"]  # the schema the stream reads with is the latest snapshot's
    assert stream.position == 2


def test_the_schema_comes_from_the_snapshot_read_when_another_handle_evolved_it(catalog: Catalog, table: Table):
    other = catalog.get_table("db.t")
    other.update_schema().add_column("w", pa.int32()).commit()
    other.refresh()
    other.write_arrow(pa.table({"id": [9], "v": ["9"], "w": [9]},
                               schema=pa.schema([*SCHEMA, pa.field("w", pa.int32())])))
    for mode in ("latest-full", "latest"):
        stream = table.stream(mode=mode)
        assert stream.read_schema.id == 1 and "w" in [f.name for f in stream.read_schema.fields]
