"""pypaimon 2.1 reads the deletion vectors lake_assets writes into an append table (``bucket = -1``):
the rows ``Table.delete_where`` marked are gone from its reads too, before and after a compaction
that rewrote some of the marked files and moved the other vectors into a new index file."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.interop.paimon import Pypaimon, canonical

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def _rows(ids, dt: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


def test_pypaimon_reads_our_append_deletion_vectors(pypaimon: Pypaimon, tmp_path: Path) -> None:
    import lake_assets

    # this checkout's lake_assets wrote the table (not another one installed in the venv)
    assert Path(lake_assets.__file__).resolve().is_relative_to(Path(__file__).resolve().parents[2])
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    # a tiny target size: only the ratio decides what compaction rewrites
    t = cat.create_table("db.t", SCHEMA, partition_keys=["dt"],
                         options={"bucket": "-1", "deletion-vectors.enabled": "true", "target-file-size": "1 b"})
    t.write_arrow(pa.concat_tables([_rows(range(20), "d1"), _rows(range(10), "d2")]))
    t.write_arrow(_rows(range(20, 40), "d1"))
    t.delete_where([[("id", "<", 8)], [("id", "=", 30)]])
    t.delete_where([("v", "=", "v9")])
    cols = ["id", "dt"]
    for table in (t, cat.get_table("db.t")):
        assert canonical(table.to_arrow().select(cols), cols) == canonical(pypaimon.read(wh, "db.t").select(cols), cols)
        table.compact()  # d1's first file and d2's are rewritten; d1's second keeps its 1-row vector
    assert canonical(cat.get_table("db.t").to_arrow().select(cols), cols) == canonical(
        pypaimon.read(wh, "db.t").select(cols), cols)
    assert cat.get_table("db.t").to_arrow().num_rows == 50 - 8 - 8 - 1 - 2
