"""Where lake_assets disagreed with Paimon Java's writer, and now follows it.

Each case states what Paimon Java 0.9/1.x does (its MergeTreeWriter, compaction manager and
FileStoreCommit) and checks that our table reads the same.
"""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.spec.row_kind import RowKind
from lake_assets.spec.snapshot import CommitKind

# ---------------------------------------------------------------------------------------------
# 1. A commit whose only record for a key is a retraction keeps it as a retraction.

AGG_SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.int64()), ("p", pa.int64()), ("lnn", pa.string()),
                        ("op", pa.string())])
AGG_OPTIONS = {
    "bucket": "1", "rowkind.field": "op", "merge-engine": "aggregation",
    "fields.s.aggregate-function": "sum", "fields.p.aggregate-function": "product",
    "fields.lnn.aggregate-function": "last_non_null_value",
}


def _rows(t, columns=None) -> list[dict]:
    return sorted(t.to_arrow(columns=columns).to_pylist(), key=lambda r: r["k"])


def _level0_kinds(t) -> list[int]:
    """_VALUE_KIND of every record in the latest snapshot's level-0 files."""
    import pyarrow.parquet as pq

    kinds: list[int] = []
    for split in t.plan():
        for f in split.files:
            if f.level == 0:
                path = t.store.data_file_path(split.partition, split.bucket, f)
                kinds += pq.read_table(path, columns=["_VALUE_KIND"]).column(0).to_pylist()
    return kinds


@pytest.mark.parametrize("write_only", [True, False])
def test_aggregation_lone_retraction_is_kept_as_written(catalog: Catalog, write_only: bool):
    options = {**AGG_OPTIONS, "write-only": str(write_only).lower()}
    t = catalog.create_table("db.agg", AGG_SCHEMA, primary_keys=["k"], options=options)
    t.write_arrow(pa.table({"k": [1], "s": [10], "p": [6], "lnn": ["a"], "op": ["+I"]}, schema=AGG_SCHEMA))
    t.write_arrow(pa.table({"k": [1], "s": [3], "p": [2], "lnn": ["b"], "op": ["-U"]}, schema=AGG_SCHEMA))
    # Java: sum retracts (10-3), product divides (6/2), last_non_null_value retract -> null
    expected = [{"k": 1, "s": 7, "p": 3, "lnn": None}]
    assert _rows(t, ["k", "s", "p", "lnn"]) == expected
    if write_only:
        assert RowKind.UPDATE_BEFORE in _level0_kinds(t)  # stored as written, kind -U
    t.compact(full=True)
    assert _rows(t, ["k", "s", "p", "lnn"]) == expected


def test_aggregation_lone_retraction_of_unknown_key_is_invisible(catalog: Catalog):
    t = catalog.create_table("db.agg", AGG_SCHEMA, primary_keys=["k"], options={**AGG_OPTIONS, "write-only": "true"})
    t.write_arrow(pa.table({"k": [5], "s": [3], "p": [2], "lnn": ["b"], "op": ["-U"]}, schema=AGG_SCHEMA))
    # Java's reader sees the lone -U as it was written and drops it (not an add)
    assert t.to_arrow().num_rows == 0


def test_deduplicate_lone_delete_is_kept_as_delete(catalog: Catalog):
    schema = pa.schema([("k", pa.int64()), ("v", pa.string()), ("op", pa.string())])
    t = catalog.create_table("db.d", schema, primary_keys=["k"],
                             options={"bucket": "1", "rowkind.field": "op", "write-only": "true"})
    t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"], "op": ["+I", "+I"]}, schema=schema))
    t.write_arrow(pa.table({"k": [1], "v": ["a"], "op": ["-D"]}, schema=schema))
    assert RowKind.DELETE in _level0_kinds(t)
    assert _rows(t, ["k", "v"]) == [{"k": 2, "v": "b"}]


def test_partial_update_lone_delete_with_remove_record_on_delete(catalog: Catalog):
    schema = pa.schema([("k", pa.int64()), ("a", pa.string()), ("b", pa.string()), ("op", pa.string())])
    t = catalog.create_table("db.pu", schema, primary_keys=["k"], options={
        "bucket": "1", "rowkind.field": "op", "merge-engine": "partial-update",
        "partial-update.remove-record-on-delete": "true", "write-only": "true"})
    t.write_arrow(pa.table({"k": [1, 2], "a": ["x", "y"], "b": [None, "z"], "op": ["+I", "+I"]}, schema=schema))
    t.write_arrow(pa.table({"k": [1], "a": [None], "b": [None], "op": ["-D"]}, schema=schema))
    assert RowKind.DELETE in _level0_kinds(t)
    assert _rows(t, ["k", "a", "b"]) == [{"k": 2, "a": "y", "b": "z"}]
    t.compact(full=True)
    assert _rows(t, ["k", "a", "b"]) == [{"k": 2, "a": "y", "b": "z"}]


def test_partial_update_sequence_group_lone_retraction(catalog: Catalog):
    schema = pa.schema([("k", pa.int64()), ("g", pa.int64()), ("a", pa.int64()), ("op", pa.string())])
    t = catalog.create_table("db.pu", schema, primary_keys=["k"], options={
        "bucket": "1", "rowkind.field": "op", "merge-engine": "partial-update",
        "fields.g.sequence-group": "a", "fields.a.aggregate-function": "sum", "write-only": "true"})
    t.write_arrow(pa.table({"k": [1], "g": [1], "a": [10], "op": ["+I"]}, schema=schema))
    t.write_arrow(pa.table({"k": [1], "g": [2], "a": [4], "op": ["-U"]}, schema=schema))
    assert RowKind.UPDATE_BEFORE in _level0_kinds(t)
    assert _rows(t, ["k", "g", "a"]) == [{"k": 1, "g": 2, "a": 6}]
    t.compact(full=True)
    assert _rows(t, ["k", "g", "a"]) == [{"k": 1, "g": 2, "a": 6}]


# ---------------------------------------------------------------------------------------------
# 2. Inline compaction commits its changelog (lookup; full-compaction with delta-commits).

KV = pa.schema([("k", pa.int64()), ("v", pa.string()), ("op", pa.string())])


def _kinds_by_key(changes: pa.Table) -> list[tuple[str, int, str]]:
    return sorted((r["_row_kind"], r["k"], r["v"]) for r in changes.to_pylist())


@pytest.mark.parametrize("options", [
    {"changelog-producer": "lookup"},
    {"changelog-producer": "full-compaction", "full-compaction.delta-commits": "1"},
], ids=["lookup", "full-compaction"])
def test_inline_compaction_commits_its_changelog(catalog: Catalog, options: dict):
    t = catalog.create_table("db.cl", KV, primary_keys=["k"],
                             options={"bucket": "1", "rowkind.field": "op", **options})
    stream = t.stream(mode="latest", consumer_id="c")
    reader = t.change_reader()
    t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"], "op": ["+I", "+I"]}, schema=KV))
    s1 = t.latest_snapshot().id
    t.write_arrow(pa.table({"k": [1, 2], "v": ["c", "b"], "op": ["+U", "-D"]}, schema=KV))
    s2 = t.latest_snapshot().id
    # Java's writer commits the writes (APPEND) and its compaction with the changelog (COMPACT)
    kinds = [s.commit_kind for s in t.snapshots()]
    assert kinds == [CommitKind.APPEND, CommitKind.COMPACT, CommitKind.APPEND, CommitKind.COMPACT]
    assert _kinds_by_key(t.read_changes(0, s1)) == [("+I", 1, "a"), ("+I", 2, "b")]
    assert _kinds_by_key(t.read_changes(s1, s2)) == [("+U", 1, "c"), ("-D", 2, "b"), ("-U", 1, "a")]
    streamed = []
    for batch in stream.poll(max_snapshots=10):
        for split in batch.splits:
            streamed += _kinds_by_key(reader.read(split))
        stream.commit(batch.next_position)
    assert sorted(streamed) == sorted([("+I", 1, "a"), ("+I", 2, "b"), ("+U", 1, "c"), ("-D", 2, "b"),
                                       ("-U", 1, "a")])
    # every changelog file written is referenced: none became an orphan
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []


# ---------------------------------------------------------------------------------------------
# 3. first-row: a writer without write-only compacts level 0 on every commit.

def test_first_row_rows_visible_at_once(catalog: Catalog):
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.fr", schema, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": "first-row"})
    t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=schema))
    assert _rows(t) == [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}]
    t.write_arrow(pa.table({"k": [2, 3], "v": ["x", "c"]}, schema=schema))
    assert _rows(t) == [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 3, "v": "c"}]
    assert all(f.level > 0 for s in t.plan() for f in s.files)


def test_first_row_write_only_rows_wait_for_compaction(catalog: Catalog):
    schema = pa.schema([("k", pa.int64()), ("v", pa.string())])
    t = catalog.create_table("db.fr", schema, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": "first-row", "write-only": "true"})
    t.write_arrow(pa.table({"k": [1], "v": ["a"]}, schema=schema))
    assert t.to_arrow().num_rows == 0  # Java too: its batch scan skips level 0 of first-row tables
    t.compact()
    assert _rows(t) == [{"k": 1, "v": "a"}]


# ---------------------------------------------------------------------------------------------
# 4. overwrite=True on a partitioned table honours dynamic-partition-overwrite.

PART = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def _part_table(catalog: Catalog, pk: bool, dynamic: str | None):
    options = {"bucket": "1"} if pk else {}
    if dynamic is not None:
        options["dynamic-partition-overwrite"] = dynamic
    return catalog.create_table("db.p", PART, primary_keys=["k", "dt"] if pk else (),
                                partition_keys=["dt"], options=options)


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
@pytest.mark.parametrize("dynamic", [None, "true"])
def test_overwrite_replaces_only_written_partitions_by_default(catalog: Catalog, pk: bool, dynamic: str | None):
    t = _part_table(catalog, pk, dynamic)
    t.write_arrow(pa.table({"k": [1, 2], "dt": ["d1", "d2"], "v": ["a", "b"]}, schema=PART))
    t.write_arrow(pa.table({"k": [3], "dt": ["d2"], "v": ["c"]}, schema=PART), overwrite=True)
    assert _rows(t) == [{"k": 1, "dt": "d1", "v": "a"}, {"k": 3, "dt": "d2", "v": "c"}]
    assert t.latest_snapshot().commit_kind == CommitKind.OVERWRITE
    # nothing written: nothing replaced (Java skips a dynamic overwrite without data)
    t.write_arrow(pa.table({"k": [], "dt": [], "v": []}, schema=PART), overwrite=True)
    assert _rows(t) == [{"k": 1, "dt": "d1", "v": "a"}, {"k": 3, "dt": "d2", "v": "c"}]


@pytest.mark.parametrize("pk", [True, False], ids=["pk", "append"])
def test_overwrite_replaces_whole_table_without_dynamic_partition_overwrite(catalog: Catalog, pk: bool):
    t = _part_table(catalog, pk, "false")
    t.write_arrow(pa.table({"k": [1, 2], "dt": ["d1", "d2"], "v": ["a", "b"]}, schema=PART))
    t.write_arrow(pa.table({"k": [3], "dt": ["d2"], "v": ["c"]}, schema=PART), overwrite=True)
    assert _rows(t) == [{"k": 3, "dt": "d2", "v": "c"}]


def test_overwrite_unpartitioned_replaces_whole_table(catalog: Catalog):
    t = catalog.create_table("db.u", KV, primary_keys=["k"], options={"bucket": "1", "rowkind.field": "op"})
    t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"], "op": ["+I", "+I"]}, schema=KV))
    t.write_arrow(pa.table({"k": [3], "v": ["c"], "op": ["+I"]}, schema=KV), overwrite=True)
    assert [r["k"] for r in _rows(t)] == [3]


# ---------------------------------------------------------------------------------------------
# Options Java's writer would refuse.

def test_compression_none_is_rejected_with_the_java_spelling(catalog: Catalog):
    with pytest.raises(OptionError, match="uncompressed"):
        catalog.create_table("db.c", KV, primary_keys=["k"], options={"bucket": "1", "file.compression": "none"})
    with pytest.raises(OptionError, match="'null'"):
        catalog.create_table("db.c", KV, primary_keys=["k"], options={"bucket": "1", "manifest.compression": "none"})
    t = catalog.create_table("db.c", KV, primary_keys=["k"], options={
        "bucket": "1", "file.compression": "uncompressed", "manifest.compression": "null"})
    t.write_arrow(pa.table({"k": [1], "v": ["a"], "op": ["+I"]}, schema=KV))
    assert t.to_arrow().num_rows == 1


def test_compression_codecs_java_reads(catalog: Catalog):
    # Java writes lz4_raw (parquet-mr's name), so its tables must be readable and writable here
    t = catalog.create_table("db.r", KV, primary_keys=["k"], options={"bucket": "1", "file.compression": "lz4_raw"})
    t.write_arrow(pa.table({"k": [1], "v": ["a"], "op": ["+I"]}, schema=KV))
    assert t.to_arrow().num_rows == 1
    # Paimon Java has no Brotli codec: files it could not read are never written
    with pytest.raises(UnsupportedFeatureError, match="Brotli"):
        catalog.create_table("db.b", KV, primary_keys=["k"], options={"bucket": "1", "file.compression": "brotli"})


def test_overwrite_writer_ignores_the_replaced_files(catalog: Catalog):
    """Paimon's overwrite writer ignores previous files: inline compaction does not merge the new
    rows with the files the OVERWRITE deletes. Its commit carries no changelog (Java's
    FileStoreCommit: "Overwrite mode currently does not commit any changelog"), and the changelog
    files the writer made are not left behind."""
    t = catalog.create_table("db.p", PART, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "1", "changelog-producer": "lookup"})
    t.write_arrow(pa.table({"k": [1, 2], "dt": ["d1", "d2"], "v": ["x", "y"]}, schema=PART))
    before = t.latest_snapshot().id
    t.write_arrow(pa.table({"k": [1, 3], "dt": ["d1", "d1"], "v": ["z", "w"]}, schema=PART), overwrite=True)
    assert [s.commit_kind for s in t.snapshots()][before:] == [CommitKind.OVERWRITE, CommitKind.COMPACT]
    assert _rows(t) == [{"k": 1, "dt": "d1", "v": "z"}, {"k": 2, "dt": "d2", "v": "y"},
                        {"k": 3, "dt": "d1", "v": "w"}]
    assert t.read_changes(before).num_rows == 0
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []


@pytest.mark.parametrize("keys", [["k"], ["k", "g"]], ids=["one-key", "two-keys"])
def test_first_row_levels_never_repeat_a_key(catalog: Catalog, keys: list[str]):
    """Java reads levels 1..max of a first-row table without merging them, so compaction drops
    level-0 records whose key an older level holds (Paimon's FirstRowMergeFunctionWrapper)."""
    import pyarrow.parquet as pq

    schema = pa.schema([("k", pa.int64()), ("g", pa.string()), ("v", pa.string())])
    t = catalog.create_table("db.fr", schema, primary_keys=keys,
                             options={"bucket": "1", "merge-engine": "first-row"})
    for i, batch in enumerate([[1, 2, 3], [2, 3, 4], [4, 5], [1, 5, 6]]):
        t.write_arrow(pa.table({"k": batch, "g": ["x"] * len(batch), "v": [f"w{i}"] * len(batch)}, schema=schema))
    seen: list[tuple] = []
    for split in t.plan():
        for f in split.files:
            assert f.level > 0
            raw = pq.read_table(t.store.data_file_path(split.partition, split.bucket, f),
                                columns=[f"_KEY_{k}" for k in keys])
            seen += list(zip(*[raw.column(c).to_pylist() for c in raw.column_names], strict=True))
    assert len(seen) == len(set(seen)) == 6
    assert {r["k"]: r["v"] for r in t.to_arrow().to_pylist()} == {1: "w0", 2: "w0", 3: "w0", 4: "w1", 5: "w2",
                                                                 6: "w3"}
