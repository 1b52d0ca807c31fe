"""pypaimon 2.1 reads the deletion vectors lake_assets writes (docs/format.md §4.6).

pypaimon's scan skips level 0 of a deletion-vector table and applies each file's vector, as Java's
does; a vector it decodes differently, or a range it cannot follow, shows up as different rows.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.interop.paimon import Pypaimon, canonical

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string()), ("op", pa.string())])


def rows(keys, dt: str, tag: str, op: str = "+I") -> pa.Table:
    keys = list(keys)
    return pa.table({"k": keys, "dt": [dt] * len(keys), "v": [f"{tag}{k}" for k in keys], "op": [op] * len(keys)},
                    schema=SCHEMA)


def same(ours: pa.Table, theirs: pa.Table) -> None:
    cols = ["k", "dt", "v"]
    assert canonical(ours.select(cols), ["k", "dt"]) == canonical(theirs.select(cols), ["k", "dt"])


def test_pypaimon_reads_our_deletion_vectors(pypaimon: Pypaimon, tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.dv", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "2", "deletion-vectors.enabled": "true", "rowkind.field": "op"})
    t.write_arrow(pa.concat_tables([rows(range(80), "d1", "a"), rows(range(40), "d2", "a")]))
    t.write_arrow(rows(range(0, 80, 3), "d1", "b"))
    t.write_arrow(pa.concat_tables([rows([1, 2, 4], "d1", "x", "-D"), rows([5, 6], "d2", "x", "-D")]))
    t.write_arrow(rows(range(0, 80, 7), "d1", "c"))
    assert t.health().column("deletion_vector_rows").to_pylist() != [0] * t.health().num_rows
    same(t.to_arrow(), pypaimon.read(wh, "db.dv"))
    for snap in t.snapshots():
        same(t.to_arrow(snapshot_id=snap.id), pypaimon.read(wh, "db.dv", snapshot_id=snap.id))


NUMERIC = pa.schema([("k", pa.int64()), ("qty", pa.int32()), ("amount", pa.float64()), ("day", pa.date32()),
                     ("price", pa.decimal128(10, 2))])


def test_pypaimon_reads_our_fixed_width_dictionary_pages(pypaimon: Pypaimon, tmp_path: Path) -> None:
    """Repeating integer, double, date and decimal columns get dictionary pages (issue 14;
    formats/file_layout); pypaimon decodes them, with deletion vectors applied, as we do."""
    import numpy as np
    import pyarrow.parquet as pq

    def numeric(keys: np.ndarray, shift: int) -> pa.Table:
        c = (keys + shift) % 50
        return pa.table({"k": keys, "qty": c.astype(np.int32), "amount": c * 0.25,
                         "day": pa.array(c.astype(np.int32)).cast(pa.date32()),
                         "price": pa.array(c).cast(pa.decimal128(21, 2)).cast(pa.decimal128(10, 2))},
                        schema=NUMERIC)

    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.dvnum", NUMERIC, primary_keys=["k"],
                         options={"bucket": "1", "deletion-vectors.enabled": "true"})
    t.write_arrow(numeric(np.arange(20_000), 0))
    t.compact(full=True)
    t.write_arrow(numeric(np.arange(0, 20_000, 7), 3))
    for path in Path(wh).rglob("data-*.parquet"):
        md = pq.ParquetFile(path).metadata
        dictionary = {md.schema.column(j).path for j in range(md.num_columns)
                      if md.row_group(0).column(j).has_dictionary_page}
        assert {"qty", "amount", "day", "price"} <= dictionary, path
    assert t.health().column("deletion_vector_rows").to_pylist() != [0] * t.health().num_rows
    cols = NUMERIC.names
    assert canonical(t.to_arrow().select(cols), ["k"]) == canonical(pypaimon.read(wh, "db.dvnum").select(cols), ["k"])
