"""64-bit deletion vectors (``deletion-vectors.bitmap64``) between lake_assets and the Python peers.

What the peers do with the option (checked here, so a new release that changes it shows up):

* pypaimon-rust 0.4 reads 64-bit vectors (its ``DeletionVector::from_bitmap64_bytes``) and
  writes none: its writers (data-evolution deletes; it has no primary-key compaction) write
  32-bit vectors even into a table carrying the option.
* pypaimon 2.1 neither reads nor writes them: its reader knows the 32-bit magic only.

So no peer writes a 64-bit vector for us to read: the bytes Java's serializer writes are checked in
tests/unit/test_deletion_vector_64.py (Iceberg Java's golden vectors) and
tests/differential/test_deletion_vector_64_java.py (Java's RoaringBitmap, Paimon HEAD's framing).
Here pypaimon-rust reads what we write and compact; the vectors it writes into a bitmap64 table are
32-bit ones in a table kind we refuse (tests/differential/test_deletion_vector_64_java.py reads and
compacts 32-bit vectors Java 0.9 wrote into a bitmap64 table, which turns them into a mixed file).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyroaring import BitMap64

from lake_assets import Catalog
from lake_assets.ops.deletion_vectors import VectorLoader, snapshot_index
from tests.interop.paimon import Pypaimon, PypaimonRust

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string()), ("op", pa.string())])
BITMAP64 = {"deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": "true"}


def _rows(keys, dt: str, tag: str, op: str = "+I") -> pa.Table:
    keys = list(keys)
    return pa.table({"k": keys, "dt": [dt] * len(keys), "v": [f"{tag}{k}" for k in keys], "op": [op] * len(keys)},
                    schema=SCHEMA)


def _as_set(rows) -> set[tuple]:  # type: ignore[no-untyped-def]
    return {(r["k"], r["dt"], r["v"]) for r in rows}


def _vector_forms(table) -> set[type]:  # type: ignore[no-untyped-def]
    loader = VectorLoader(table.store)
    return {type(v) for es in snapshot_index(table.store, table.latest_snapshot()).values()
            for v in loader.vectors(es).values()}


def _our_table(tmp_path: Path) -> tuple[str, object]:
    """A partitioned two-bucket bitmap64 table after upserts and deletes, each write compacting
    (its vectors all 64-bit)."""
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.dv", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "2", "rowkind.field": "op", **BITMAP64})
    t.write_arrow(pa.concat_tables([_rows(range(300), "d1", "a"), _rows(range(120), "d2", "a")]))
    t.write_arrow(_rows(range(0, 300, 3), "d1", "b"))
    t.write_arrow(pa.concat_tables([_rows([1, 2, 4, 200], "d1", "x", "-D"), _rows([5, 6], "d2", "x", "-D")]))
    t.write_arrow(_rows(range(0, 300, 7), "d1", "c"))
    t.write_arrow(_rows(range(50, 120), "d2", "e"))
    return wh, t


def test_rust_reads_the_64_bit_vectors_we_write_and_compact(rust: PypaimonRust, tmp_path: Path) -> None:
    wh, t = _our_table(tmp_path)
    assert _vector_forms(t) == {BitMap64}, "no 64-bit vectors were written: the test proves nothing"
    ours = t.to_arrow().to_pylist()
    assert len(ours) == 300 + 120 - 6
    assert _as_set(rust.read_rows(wh, "db.dv")) == _as_set(ours)
    t.compact(full=True)  # every file rewritten: the vectors go with them
    t.write_arrow(_rows(range(0, 300, 11), "d1", "f"))  # ... and new 64-bit ones mark the full-compacted files
    assert _vector_forms(t) == {BitMap64}
    assert _as_set(rust.read_rows(wh, "db.dv")) == _as_set(t.to_arrow().to_pylist())


def test_pypaimon_2_1_cannot_read_64_bit_vectors(pypaimon: Pypaimon, tmp_path: Path) -> None:
    """pypaimon 2.1 predates them (docs/options.md says so): its read fails on the magic number
    (0xD1D33964, the little-endian magic read big-endian) rather than returning rows it cannot filter."""
    wh, _ = _our_table(tmp_path)
    with pytest.raises(AssertionError, match="Invalid magic number: 3520280932"):
        pypaimon.read(wh, "db.dv")


def test_rust_writes_32_bit_vectors_into_a_bitmap64_table_of_a_kind_we_refuse(
    rust: PypaimonRust, tmp_path: Path
) -> None:
    """pypaimon-rust writes vectors (32-bit, whatever the option) only by deleting from a
    data-evolution table, a kind lake_assets refuses: the table is refused by name, never read
    with its vectors ignored."""
    wh = str(tmp_path / "wh")
    rust.sql(wh, "CREATE DATABASE IF NOT EXISTS paimon.db",
             "CREATE TABLE paimon.db.de (k BIGINT, v STRING) WITH ('row-tracking.enabled' = 'true', "
             "'data-evolution.enabled' = 'true', 'deletion-vectors.enabled' = 'true', "
             "'deletion-vectors.bitmap64' = 'true')",
             "INSERT INTO paimon.db.de (k, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')",
             "DELETE FROM paimon.db.de WHERE k = 2")
    index = list((Path(wh) / "db.db" / "de" / "index").iterdir())
    assert len(index) == 1
    assert index[0].read_bytes()[5:9] == (1581511376).to_bytes(4, "big"), "rust now writes 64-bit vectors"
    table = Catalog(wh).get_table("db.de")
    with pytest.raises(Exception, match="data-evolution"):
        table.to_arrow()
