"""What a batch's postpone files store, against Paimon Java 0.9: HEAD sizes a new partition's real
buckets by its staged postpone files' stored size (Avro, ``metadata.stats-mode = none``, the
table's ``file.compression``; ops/postpone_size.py). Java 0.9 has no postpone bucket mode, but it
writes the same key-value Avro files for a fixed-bucket table with ``file.format = avro``: the
bytes we measure for a batch are the bytes Java stores for it (and Arrow's size is not)."""

from __future__ import annotations

import pytest

from lake_assets import Catalog
from lake_assets.ops.postpone_size import postpone_file_bytes
from lake_assets.table_support import Op
from tests.java.oracle import PaimonJava
from tests.unit.test_postpone_size import SCHEMA, batch


@pytest.mark.parametrize("compression", ["zstd", "snappy"])
def test_postpone_bytes_are_javas_avro_bytes(java: PaimonJava, lake: Catalog, wh: str, compression: str) -> None:
    data = batch(20_000)
    java.create_table(wh, "db.j", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                      options={"bucket": "1", "file.format": "avro", "metadata.stats-mode": "none",
                               "file.compression": compression, "write-only": "true"})
    java.write(wh, "db.j", data)
    j = lake.get_table("db.j")
    entries = j.store.file_store_scan(Op.COMPACT).live_entries(j.snapshot_manager.latest())
    assert len(entries) == 1
    javas = entries[0].file.file_size
    ours = lake.create_table("db.p", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2", "file.compression": compression})
    measured = postpone_file_bytes(ours.store, data)
    assert abs(measured - javas) <= 0.02 * javas, (measured, javas)
    assert data.nbytes > 1.5 * javas  # zstd: ours 378827, Java 374097, Arrow 806580 bytes
