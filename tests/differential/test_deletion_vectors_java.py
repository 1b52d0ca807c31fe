"""Deletion-vector tables written by Paimon Java 0.9, read by lake_assets (docs/format.md §4.6, §11.3).

Java's compaction of a ``deletion-vectors.enabled`` table looks keys up in higher levels and marks
superseded rows there; its batch scan skips level-0 files unless ``deletion-vectors.merge-on-read``.
Our reads must return exactly Java's rows, and our decoding of each vector must find exactly the
positions Java's own ``DeletionVector.read`` finds (the oracle's ``deletion_vectors`` command).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.deletion_vectors import VectorLoader, snapshot_index
from lake_assets.spec.manifest import IndexManifestEntry
from tests.differential.helpers import assert_same_rows

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string()), ("n", pa.int64())])
DV = {"bucket": "2", "deletion-vectors.enabled": "true"}


def _rows(keys, dt: str, tag: str) -> pa.Table:
    keys = list(keys)
    return pa.table({"k": keys, "dt": [dt] * len(keys), "v": [f"{tag}{k}" for k in keys],
                     "n": [k * 10 for k in keys]}, schema=SCHEMA)


def _java_table(java, wh: str, options: dict[str, str] | None = None) -> None:
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                      options={**DV, **(options or {})})
    java.write(wh, "db.t", pa.concat_tables([_rows(range(40), "d1", "a"), _rows(range(20), "d2", "a")]))
    java.write(wh, "db.t", _rows(range(0, 40, 3), "d1", "b"))
    java.write(wh, "db.t", pa.concat_tables([_rows([1, 2, 4], "d1", "x"), _rows([5], "d2", "x")]),
               kinds=["-D", "-D", "-D", "-D"])
    java.write(wh, "db.t", _rows(range(0, 40, 5), "d1", "c"))


def test_reads_java_deletion_vector_tables_exactly(java, wh: str) -> None:
    _java_table(java, wh)
    table = Catalog(wh).get_table("db.t")
    assert_same_rows(table.to_arrow(), java.read(wh, "db.t"))
    # filters on value columns and projections see the same rows
    for flt in ([("n", ">", 100), ("v", "!=", "b3")], [("v", ">=", "c")], [("v", "=", "a7")],
                [[("n", "<", 30)], [("v", "in", ["b9", "c35", "x1"])]]):
        # value filters prune whole files of buckets read without a merge (their value stats)
        assert_same_rows(table.to_arrow(columns=["k", "v"], filter=flt),
                         java.read(wh, "db.t", projection=["k", "v"], filter=flt))
    # every earlier snapshot too (time travel through older index manifests)
    for snap in table.snapshots():
        assert_same_rows(table.to_arrow(snapshot_id=snap.id), java.read(wh, "db.t", snapshot_id=snap.id))


def test_decodes_the_positions_java_reads(java, wh: str) -> None:
    _java_table(java, wh)
    table = Catalog(wh).get_table("db.t")
    index = snapshot_index(table.store, table.latest_snapshot())
    ours = {}
    loader = VectorLoader(table.store)
    for entries in index.values():
        ours.update({name: list(v) for name, v in loader.vectors(entries).items()})
    theirs = {f["name"]: f["deleted"] for s in java.deletion_vectors(wh, "db.t") for f in s["files"]
              if "deleted" in f}
    assert theirs, "Java wrote no deletion vectors: the scenario tests nothing"
    assert ours == theirs


def test_level0_is_invisible_unless_merge_on_read(java, wh: str) -> None:
    _java_table(java, wh)
    # a write-only commit leaves level-0 files that Java's batch scan skips
    java.write(wh, "db.t", _rows(range(100, 110), "d1", "l0"), options={"write-only": "true"})
    table = Catalog(wh).get_table("db.t")
    hidden = java.read(wh, "db.t")
    assert not set(range(100, 110)) & set(hidden.column("k").to_pylist())
    assert_same_rows(table.to_arrow(), hidden)
    # deletion-vectors.merge-on-read (Paimon 2.x, apache/paimon#7948; Java 0.9 predates it) shows
    # them: what Java reads once a compaction has made them visible
    java.alter_table(wh, "db.t", {"change": "set_option", "key": "deletion-vectors.merge-on-read",
                                  "value": "true"})
    merged = Catalog(wh).get_table("db.t").to_arrow()
    java.compact(wh, "db.t", full=False)
    shown = java.read(wh, "db.t")
    assert set(range(100, 110)) <= set(shown.column("k").to_pylist())
    assert_same_rows(merged, shown)


def test_compacted_buckets_are_read_without_a_merge(java, wh: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _java_table(java, wh)
    java.compact(wh, "db.t", full=True)
    import lake_assets.ops.read as read_mod

    def no_merge(*args, **kwargs):
        raise AssertionError("a compacted deletion-vector table must be read without a merge")

    monkeypatch.setattr(read_mod, "sort_and_merge", no_merge)
    monkeypatch.setattr(read_mod, "winner_masks", no_merge)
    table = Catalog(wh).get_table("db.t")
    assert all(s["raw_convertible"] for s in java.deletion_vectors(wh, "db.t"))
    assert_same_rows(table.to_arrow(), java.read(wh, "db.t"))


def test_streams_start_from_the_vectors_and_follow_the_appends(java, wh: str) -> None:
    """A latest-full stream's first batch is the table as batch reads see it (vectors applied,
    level 0 hidden); later batches are the APPEND snapshots' rows, as Java's stream returns them."""
    _java_table(java, wh)
    table = Catalog(wh).get_table("db.t")
    theirs = java.stream(wh, "db.t", options={"scan.mode": "latest-full"})
    ours = table.stream(mode="latest-full")
    reader = table.change_reader()

    def drain() -> pa.Table:
        parts = [reader.read(s) for b in ours.poll(max_snapshots=10) for s in b.splits]
        return pa.concat_tables(parts) if parts else reader.output_schema.empty_table()

    assert_same_rows(drain(), theirs.next())
    java.write(wh, "db.t", _rows(range(0, 40, 6), "d1", "s"))
    java.write(wh, "db.t", _rows([3, 5], "d1", "x"), kinds=["-D", "-D"])
    seen = [theirs.next() for _ in range(6)]
    assert_same_rows(drain(), pa.concat_tables([s for s in seen if s.num_rows]))
    theirs.close()


# ------------------------------------------------------------------------- written by lake_assets
OPS_SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string()), ("n", pa.int64()),
                        ("op", pa.string())])


def _ops(keys, dt: str, tag: str, op: str = "+I") -> pa.Table:
    keys = list(keys)
    return pa.table({"k": keys, "dt": [dt] * len(keys), "v": [f"{tag}{k}" for k in keys],
                     "n": [k * 10 for k in keys], "op": [op] * len(keys)}, schema=OPS_SCHEMA)


def _our_table(lake: Catalog, **options: str):
    return lake.create_table("db.ours", OPS_SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={**DV, "rowkind.field": "op", **options})


def _assert_vectors_agree(java, wh: str, table) -> int:
    """Our vectors of the latest snapshot are the ones Java reads; their number."""
    ours: dict[str, list[int]] = {}
    loader = VectorLoader(table.store)
    for entries in snapshot_index(table.store, table.latest_snapshot()).values():
        ours.update({name: list(v) for name, v in loader.vectors(entries).items()})
    theirs = {f["name"]: f["deleted"] for s in java.deletion_vectors(wh, "db.ours") for f in s["files"]
              if "deleted" in f}
    assert ours == theirs
    return len(ours)


def test_java_reads_the_deletion_vectors_we_write(java, wh: str, lake: Catalog) -> None:
    table = _our_table(lake)
    table.write_arrow(pa.concat_tables([_ops(range(60), "d1", "a"), _ops(range(30), "d2", "a")]))
    table.write_arrow(_ops(range(0, 60, 4), "d1", "b"))
    table.write_arrow(pa.concat_tables([_ops([1, 2, 8], "d1", "x", "-D"), _ops([3], "d2", "x", "-D")]))
    table.write_arrow(_ops(range(0, 60, 7), "d1", "c"))
    assert _assert_vectors_agree(java, wh, table) > 0
    assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))
    assert all(s["raw_convertible"] for s in java.deletion_vectors(wh, "db.ours"))
    for snap in table.snapshots():
        assert_same_rows(table.to_arrow(snapshot_id=snap.id), java.read(wh, "db.ours", snapshot_id=snap.id))
    # a full compaction folds every vector into rewritten files
    table.compact(full=True)
    assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))
    _assert_vectors_agree(java, wh, table)


def test_both_engines_take_turns_on_one_table(java, wh: str, lake: Catalog) -> None:
    table = _our_table(lake)
    table.write_arrow(_ops(range(50), "d1", "a"))
    java.write(wh, "db.ours", _ops(range(0, 50, 3), "d1", "j"))
    table = lake.get_table("db.ours")
    assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))
    table.write_arrow(_ops(range(0, 50, 5), "d1", "b"))
    java.write(wh, "db.ours", _ops([1, 4, 10], "d1", "j", "-D"))
    table.write_arrow(_ops(range(40, 70), "d1", "c"))
    assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))
    assert _assert_vectors_agree(java, wh, table) > 0
    java.compact(wh, "db.ours", full=False)
    table.compact()
    assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))


def test_dedicated_compaction_makes_write_only_rows_visible(java, wh: str, lake: Catalog) -> None:
    table = _our_table(lake, **{"write-only": "true"})
    table.write_arrow(_ops(range(30), "d1", "a"))
    table.write_arrow(_ops(range(0, 30, 2), "d1", "b"))
    # level 0 only: invisible to both until compacted
    assert table.to_arrow().num_rows == 0 == java.read(wh, "db.ours").num_rows
    table.compact()
    assert table.to_arrow().num_rows == 30
    assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))
    table.write_arrow(_ops(range(0, 30, 3), "d1", "c"))
    table.compact()
    assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))
    assert _assert_vectors_agree(java, wh, table) > 0


def test_random_turns_of_both_engines_agree(java, wh: str, lake: Catalog) -> None:
    """Writes, deletes, inline and dedicated compactions of both engines in random order on one
    deletion-vector table: after every step both read the same rows and the same vectors."""
    import random

    rng = random.Random(14)
    table = _our_table(lake)
    for step in range(14):
        keys = sorted(rng.sample(range(120), rng.randint(5, 40)))
        dt = rng.choice(["d1", "d2"])
        op = "-D" if rng.random() < 0.25 else "+I"
        data = _ops(keys, dt, f"s{step}-", op)
        who = rng.choice(["ours", "ours-write-only", "java", "java-write-only", "ours-compact", "java-compact"])
        if who == "ours":
            lake.get_table("db.ours").write_arrow(data)
        elif who == "ours-write-only":
            writer = lake.get_table("db.ours").new_writer(f"w{step}", write_only=True)
            writer.write_arrow(data)
            lake.get_table("db.ours").new_committer(f"w{step}").commit(writer.prepare_commit(), 1)
        elif who.startswith("java"):
            if who == "java-compact":
                java.compact(wh, "db.ours", full=rng.random() < 0.3)
            else:
                java.write(wh, "db.ours", data,  # rowkind.field op: Java takes each row's kind from it
                           options={"write-only": "true"} if who == "java-write-only" else None)
        else:
            lake.get_table("db.ours").compact(full=rng.random() < 0.3)
        table = lake.get_table("db.ours")
        assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))
        _assert_vectors_agree(java, wh, table)
    table.compact()
    assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))


# ------------------------------------------------------------ deletion-vectors.index-file.target-size
TINY_TARGET = {"deletion-vectors.index-file.target-size": "1 b"}  # would close a file after every vector
# Rounds much smaller than what is below them, so universal compaction (size ratio 1%) moves each
# round's level 0 up on its own and marks rows in the files above instead of merging them, and
# under compaction.delete-ratio-threshold (20%), so our compaction keeps those files' vectors:
# after round c a bucket has vectors for two files.
LOADED = 5000
ROUND_B = range(0, LOADED, 10)
ROUND_C = [*range(0, LOADED, 100), *range(5, LOADED, 100)]  # half of them replace round b's rows


def _index_files(table) -> list[tuple[IndexManifestEntry, ...]]:
    """The deletion-vector index files of each bucket of the latest snapshot."""
    return list(snapshot_index(table.store, table.latest_snapshot()).values())


def test_index_file_target_size_rolls_no_bucket_of_a_primary_key_table(java, wh: str, lake: Catalog) -> None:
    """Paimon Java (0.9 to 1.x) applies ``deletion-vectors.index-file.target-size`` to bucket-unaware
    tables only (AbstractFileStore gives bucketed stores an unbounded target): a bucket keeps all
    its vectors in one index file however small the target. We write the same, and each engine
    reads the other's."""
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                      options={**DV, **TINY_TARGET})
    java.write(wh, "db.t", pa.concat_tables([_rows(range(LOADED), "d1", "a"), _rows(range(30), "d2", "a")]))
    java.write(wh, "db.t", _rows(ROUND_B, "d1", "b"))
    java.write(wh, "db.t", _rows(ROUND_C, "d1", "c"))
    theirs = Catalog(wh).get_table("db.t")
    buckets = _index_files(theirs)
    assert max(len(files[0].dv_ranges or ()) for files in buckets) >= 2, "the scenario tests nothing"
    assert all(len(files) == 1 for files in buckets)  # Java: one file per bucket, target or not
    assert_same_rows(theirs.to_arrow(), java.read(wh, "db.t"))
    ours: dict[str, list[int]] = {}
    loader = VectorLoader(theirs.store)
    for files in buckets:
        ours.update({name: list(v) for name, v in loader.vectors(files).items()})
    assert ours == {f["name"]: f["deleted"] for s in java.deletion_vectors(wh, "db.t") for f in s["files"]
                    if "deleted" in f}

    table = _our_table(lake, **TINY_TARGET)
    table.write_arrow(pa.concat_tables([_ops(range(LOADED), "d1", "a"), _ops(range(30), "d2", "a")]))
    table.write_arrow(_ops(ROUND_B, "d1", "b"))
    table.write_arrow(_ops(ROUND_C, "d1", "c"))
    table = lake.get_table("db.ours")
    buckets = _index_files(table)
    assert max(len(files[0].dv_ranges or ()) for files in buckets) >= 2
    assert all(len(files) == 1 for files in buckets)  # as Java's
    assert _assert_vectors_agree(java, wh, table) >= 2
    assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))


def test_java_string_columns_read_through_their_dictionaries(java, wh: str) -> None:
    """parquet-java's files: a repeating string column is read through its dictionary (the
    footer's page encodings say every data page uses it); a column whose dictionary outgrew
    ``parquet.dictionary.page.size`` fell back to plain pages and is read plainly. Both give
    Java's rows, the vectors' rows dropped."""
    import pyarrow.parquet as pq

    from lake_assets.formats.parquet_read import dictionary_columns

    _java_table(java, wh, {"parquet.dictionary.page.size": "64"})
    java.write(wh, "db.t", pa.table({"k": list(range(200)), "dt": ["d1"] * 200,
                                     "v": [f"long-distinct-value-{k:06d}" for k in range(200)],
                                     "n": list(range(200))}, schema=SCHEMA))
    table = Catalog(wh).get_table("db.t")
    assert sum(r["deletion_vector_rows"] for r in table.health().to_pylist()) > 0
    seen = {"dt": 0, "v": 0}
    for split in table.plan():
        for f in split.files:
            pf = pq.ParquetFile(table.store.data_file_path(split.partition, split.bucket, f))
            assert pf.metadata.created_by.startswith("parquet-mr")
            for name in dictionary_columns(pf, ["dt", "v"]):
                seen[name] += 1
    assert seen["dt"] > 0          # the partition column repeats: dictionary throughout
    assert seen["v"] == 0          # distinct values past a 64-byte dictionary: plain fallback pages
    assert_same_rows(table.to_arrow(), java.read(wh, "db.t"))
    assert_same_rows(table.to_arrow(columns=["v", "dt"]), java.read(wh, "db.t", projection=["v", "dt"]))
