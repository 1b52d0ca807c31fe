"""64-bit deletion vectors (``deletion-vectors.bitmap64``) against Java (docs/format.md §4.6).

Paimon Java 0.9, the oracle, predates the 64-bit form (Paimon 1.2, apache/paimon#5475): it ignores
the option, writes 32-bit vectors into such a table and fails on a 64-bit one. So:

* the bytes: the oracle's ``bitmap64_serialize`` / ``bitmap64_deserialize`` (``Bitmap64Ops.java``)
  frame vectors as Paimon HEAD's ``Bitmap64DeletionVector`` source does, each 32-bit bitmap written
  and read by Java's RoaringBitmap; ours must be those bytes, and each side must read the other's;
* the table: Java 0.9 writes a bitmap64 table (32-bit vectors); we read it as Java does, and our
  compaction then adds 64-bit vectors beside Java's 32-bit ones in one index file (as Paimon 1.2+
  does). pypaimon-rust 0.4, which reads both forms, reads what we read.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pyarrow as pa
import pytest
from pyroaring import BitMap, BitMap64

from lake_assets import Catalog
from lake_assets.ops.deletion_vectors import VectorLoader, snapshot_index
from lake_assets.spec.deletion_vector import encode_index_file, new_vector, read_vector
from lake_assets.spec.manifest import DeletionVectorRange
from tests.differential.helpers import assert_same_rows
from tests.interop.paimon import PypaimonRust

HIGH = 2**32


def _vectors() -> dict[str, list[int]]:
    rnd = random.Random(1681511377)
    return {
        "one": [0],
        "sparse": sorted(rnd.sample(range(1_000_000), 300)),
        "dense bitset": sorted(rnd.sample(range(65_536), 30_000)),
        "runs": [p for start in range(0, 500_000, 9_000) for p in range(start, start + rnd.randrange(1, 4_000))],
        "around 2**31": [2**31 - 2, 2**31 - 1, 2**31, 2**31 + 5],
        "two high keys": [3, 70_000, HIGH + 1, *range(HIGH + 100, HIGH + 2_000)],
    }


@pytest.mark.parametrize("name", sorted(_vectors()))
def test_our_64_bit_vectors_are_the_bytes_javas_serializer_writes(java, name: str) -> None:
    positions = _vectors()[name]
    vector = new_vector(np.array(positions, dtype=np.int64), bitmap64=True)
    vector.run_optimize()  # compaction does, as Java's serializeTo does (runLengthEncode)
    data, (rng,) = encode_index_file({"d": vector})
    ours = data[1:]
    assert rng.length == len(ours)  # Java's serializeTo returns the whole frame's length
    theirs = java.bitmap64_serialize(positions)
    assert ours == theirs
    assert java.bitmap64_deserialize(ours) == positions


def test_javas_bitmaps_of_missing_high_keys_read_both_ways(java) -> None:
    """Java writes an empty bitmap for each high key below the largest that holds nothing
    (``OptimizedRoaringBitmap64`` keeps an array); pyroaring leaves them out. The bytes differ,
    the positions do not: each side reads the other's."""
    positions = [7, 2 * HIGH + 3, 5 * HIGH + 9]
    theirs = java.bitmap64_serialize(positions)
    got = read_vector(b"\x01" + theirs, DeletionVectorRange("d", 1, len(theirs), None), "index-x")
    assert isinstance(got, BitMap64) and list(got) == positions
    data, _ = encode_index_file({"d": got})
    assert len(data) - 1 < len(theirs)  # three bitmaps against Java's six
    assert java.bitmap64_deserialize(data[1:]) == positions


SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
# files keep their vectors (ours would rewrite a file a fifth deleted, and its vector with it)
BITMAP64 = {"bucket": "2", "deletion-vectors.enabled": "true", "deletion-vectors.bitmap64": "true",
            "compaction.delete-ratio-threshold": "0.99"}


def _rows(keys, dt: str, tag: str) -> pa.Table:
    keys = list(keys)
    return pa.table({"k": keys, "dt": [dt] * len(keys), "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def _forms(table) -> dict[str, type]:  # type: ignore[no-untyped-def]
    loader = VectorLoader(table.store)
    return {name: type(v) for es in snapshot_index(table.store, table.latest_snapshot()).values()
            for name, v in loader.vectors(es).items()}


def test_a_bitmap64_table_java_09_wrote_is_read_and_compacted_into_mixed_index_files(java, wh: str) -> None:
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"], options=BITMAP64)
    java.write(wh, "db.t", pa.concat_tables([_rows(range(200), "d1", "a"), _rows(range(80), "d2", "a")]))
    java.write(wh, "db.t", _rows(range(0, 200, 3), "d1", "b"))
    java.write(wh, "db.t", _rows(range(0, 80, 4), "d2", "c"))
    table = Catalog(wh).get_table("db.t")
    java_forms = _forms(table)
    assert java_forms and set(java_forms.values()) == {BitMap}, "Java 0.9 writes 32-bit vectors whatever the option"
    assert_same_rows(table.to_arrow(), java.read(wh, "db.t"))
    # our writes compact: files Java's vectors mark keep 32-bit ones, files without one get 64-bit ones
    table.write_arrow(_rows(range(1, 200, 5), "d1", "e"))
    table.write_arrow(_rows(range(2, 80, 3), "d2", "e"))
    forms = _forms(table)
    assert set(forms.values()) == {BitMap, BitMap64}, forms
    assert all(forms[name] is BitMap for name in java_forms if name in forms)
    mixed = [es for es in snapshot_index(table.store, table.latest_snapshot()).values()
             if {type(v) for v in VectorLoader(table.store).vectors(es).values()} == {BitMap, BitMap64}]
    assert mixed, "no index file holds both forms: the test proves nothing"
    expected = {**{(k, "d1"): f"a{k}" for k in range(200)}, **{(k, "d2"): f"a{k}" for k in range(80)}}
    expected.update({(k, "d1"): f"b{k}" for k in range(0, 200, 3)})
    expected.update({(k, "d2"): f"c{k}" for k in range(0, 80, 4)})
    expected.update({(k, "d1"): f"e{k}" for k in range(1, 200, 5)})
    expected.update({(k, "d2"): f"e{k}" for k in range(2, 80, 3)})
    ours = table.to_arrow().to_pylist()
    assert {(r["k"], r["dt"]): r["v"] for r in ours} == expected and len(ours) == len(expected)
    # Paimon 1.2+ readers read both forms: pypaimon-rust returns our rows
    rust = PypaimonRust()
    if rust.available():
        assert {(r["k"], r["dt"]): r["v"] for r in rust.read_rows(wh, "db.t")} == expected
    # Java 0.9 predates the 64-bit form: its read fails on it (never returns rows unfiltered),
    # at the length check (a 64-bit vector's manifest length counts its size int and CRC) before the magic
    with pytest.raises(Exception, match=r"Size not match, actual size: \d+, expert size: \d+") as failed:
        java.read(wh, "db.t")
    size, recorded = map(int, re.findall(r"actual size: (\d+), expert size: (\d+)", str(failed.value))[0])
    assert recorded == size + 8
