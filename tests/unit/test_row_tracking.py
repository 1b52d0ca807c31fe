"""Row tracking and data evolution in the core: row ids assigned at commit (and again when a commit
is retried on a newer snapshot), the manifests' row-id ranges, the system columns of reads, the
merge rules of data-evolution files, and what stays refused. Interop with pypaimon 2.1, the
reference engine: tests/interop/test_row_tracking_interop.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CorruptMetadataError, OptionError, SchemaError
from lake_assets.ops.data_evolution_read import merge_groups
from lake_assets.ops.row_tracking import assign_row_tracking
from lake_assets.spec.manifest import EMPTY_ROW, DataFileMeta, FileKind, FileSource, ManifestEntry, SimpleStats

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
TRACKED = {"row-tracking.enabled": "true"}


def rows(ids: list[int], p: str) -> pa.Table:
    return pa.table({"id": ids, "p": [p] * len(ids), "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def meta(name: str, first: int | None, count: int, seq: int, *, cols: tuple[str, ...] | None = None,
         source: FileSource = FileSource.APPEND) -> DataFileMeta:
    return DataFileMeta(name, 1, count, EMPTY_ROW, EMPTY_ROW, SimpleStats.EMPTY, SimpleStats.EMPTY, seq, seq, 0, 0,
                        file_source=source, first_row_id=first, write_cols=cols)


def live(t) -> list[DataFileMeta]:  # type: ignore[no-untyped-def]
    return [e.file for e in t.store.file_store_scan().live_entries(t.latest_snapshot())]


def test_commits_assign_row_ids_per_partition_and_stamp_sequence_numbers(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options=TRACKED)
    t.write_arrow(pa.concat_tables([rows([1, 2], "a"), rows([3], "b"), rows([4], "a")]))
    t.write_arrow(rows([5, 6], "b"))
    assert [s.next_row_id for s in t.snapshots()] == [4, 6]
    got = t.to_arrow(columns=["id", "_ROW_ID", "_SEQUENCE_NUMBER"]).sort_by("_ROW_ID").to_pylist()
    assert [r["_ROW_ID"] for r in got] == list(range(6))
    # a partition's rows of one commit hold contiguous ids; the sequence number is the snapshot id
    by_id = {r["id"]: (r["_ROW_ID"], r["_SEQUENCE_NUMBER"]) for r in got}
    assert sorted(by_id[i][0] for i in (1, 2, 4)) in ([0, 1, 2], [1, 2, 3])
    assert {i: s for i, (_, s) in by_id.items()} == {1: 1, 2: 1, 3: 1, 4: 1, 5: 2, 6: 2}
    files = live(t)
    assert all(f.min_sequence_number == f.max_sequence_number for f in files)
    mio = t.store.manifest_io()
    snap = t.latest_snapshot()
    metas = mio.read_manifest_list(snap.base_manifest_list) + mio.read_manifest_list(snap.delta_manifest_list)
    assert sorted((m.min_row_id, m.max_row_id) for m in metas) == [(0, 3), (4, 5)]
    # batches, a projection of the system columns alone, and time travel
    batched = pa.Table.from_batches(list(t.to_batches(columns=["_ROW_ID", "id"], batch_size=1)))
    assert sorted(batched.to_pylist(), key=lambda r: r["_ROW_ID"]) == [
        {"_ROW_ID": r["_ROW_ID"], "id": r["id"]} for r in got]
    assert t.to_arrow(snapshot_id=1, columns=["_ROW_ID"]).column("_ROW_ID").to_pylist() != []
    assert t.to_arrow(columns=["_ROW_ID"]).schema.field("_ROW_ID").type == pa.int64()


def test_a_retried_commit_takes_row_ids_after_the_commit_that_won(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options=TRACKED)
    w = t.new_writer("a")
    w.write_arrow(rows([1, 2, 3], "a"))
    messages = w.prepare_commit()
    other = catalog.get_table("db.t")
    raced = []

    def another_writer_lands_first(step: str) -> None:
        if step == "commit.before_snapshot" and not raced:
            raced.append(step)
            other.write_arrow(rows([10, 11], "b"))  # snapshot 1, row ids 0 and 1

    t.store.fault_hook = another_writer_lands_first
    t.new_committer("a").commit(messages, 1)
    t.store.fault_hook = None
    assert raced
    t = catalog.get_table("db.t")
    assert t.latest_snapshot().id == 2 and t.latest_snapshot().next_row_id == 5
    got = {r["id"]: (r["_ROW_ID"], r["_SEQUENCE_NUMBER"])
           for r in t.to_arrow(columns=["id", "_ROW_ID", "_SEQUENCE_NUMBER"]).to_pylist()}
    assert got == {10: (0, 1), 11: (1, 1), 1: (2, 2), 2: (3, 2), 3: (4, 2)}


def test_assignment_leaves_compaction_outputs_and_deletes_alone() -> None:
    compacted = meta("c", 7, 3, 4, source=FileSource.COMPACT)
    stored_ids = meta("s", None, 2, 0, cols=("id", "_ROW_ID"))
    new = dataclasses.replace(meta("n", None, 5, 0), max_sequence_number=0)
    kept_min = dataclasses.replace(meta("m", None, 1, 0), min_sequence_number=3, max_sequence_number=0)
    deleted = meta("d", 0, 4, 2)
    entries = [ManifestEntry(FileKind.ADD, EMPTY_ROW, 0, -1, f) for f in (compacted, stored_ids, new, kept_min)]
    entries.append(ManifestEntry(FileKind.DELETE, EMPTY_ROW, 0, -1, deleted))
    out, next_id = assign_row_tracking(9, 20, entries)
    files = {e.file.file_name: e.file for e in out}
    assert next_id == 26
    assert (files["c"].first_row_id, files["c"].min_sequence_number) == (7, 4)
    assert (files["s"].first_row_id, files["s"].max_sequence_number) == (None, 9)
    assert (files["n"].first_row_id, files["n"].min_sequence_number, files["n"].max_sequence_number) == (20, 9, 9)
    assert (files["m"].first_row_id, files["m"].min_sequence_number, files["m"].max_sequence_number) == (25, 3, 9)
    assert files["d"] == deleted


def test_merge_groups_order_newest_first_and_refuse_ragged_ranges() -> None:
    base = meta("base", 0, 10, 1)
    update = meta("upd", 0, 10, 3, cols=("v",))
    older_update = meta("upd0", 0, 10, 2, cols=("v",))
    other = meta("other", 10, 5, 1)
    groups = merge_groups([other, base, update, older_update], "db.t")
    assert [[f.file_name for f in g] for g in groups] == [["upd", "upd0", "base"], ["other"]]
    with pytest.raises(CorruptMetadataError, match="must span the same range"):
        merge_groups([base, meta("half", 5, 10, 2, cols=("v",))], "db.t")
    with pytest.raises(CorruptMetadataError, match="no _FIRST_ROW_ID"):
        merge_groups([meta("none", None, 3, 1)], "db.t")


def test_shapes_paimon_refuses_and_operations_still_refused(catalog: Catalog) -> None:
    with pytest.raises(OptionError, match="needs an append table"):
        catalog.create_table("db.pk", SCHEMA, primary_keys=["id"], options={**TRACKED, "bucket": "2"})
    with pytest.raises(OptionError, match=r"needs row-tracking\.enabled"):
        catalog.create_table("db.de", SCHEMA, options={"data-evolution.enabled": "true"})
    plain = catalog.create_table("db.plain", SCHEMA)
    plain.write_arrow(rows([1], "a"))
    with pytest.raises(SchemaError, match="_ROW_ID"):
        plain.to_arrow(columns=["id", "_ROW_ID"])
    t = catalog.create_table("db.de", SCHEMA, options={**TRACKED, "data-evolution.enabled": "true",
                                                       "compaction.min.file-num": "2"})
    t.write_arrow(rows([1, 2], "a"))
    t.write_arrow(rows([3], "a"))
    # compacted since session 16 (tests/unit/test_data_evolution_compaction.py)
    assert t.compact(full=True).files_out == 1
    # change streams read each snapshot's files as Paimon HEAD's delta splits (test_data_evolution_updates.py)
    assert [b.snapshot_id for b in t.stream(mode="latest-full").poll(max_snapshots=1)] == [3]
    assert t.to_arrow().sort_by("id").column("id").to_pylist() == [1, 2, 3]


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_a_projection_of_no_file_column_still_counts_the_rows(catalog: Catalog, fmt: str) -> None:
    """Partition columns alone (or system columns alone) read no column of the files; ORC and Avro
    readers then count no rows, so the reader counts them from the file's metadata."""
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options={**TRACKED, "file.format": fmt})
    t.write_arrow(rows([1, 2, 3], "a"))
    assert t.to_arrow(columns=["p"]).column("p").to_pylist() == ["a"] * 3
    assert sum(b.num_rows for b in t.to_batches(columns=["_ROW_ID"], batch_size=2)) == 3


def test_stored_row_ids_win_over_computed_ones(catalog: Catalog) -> None:
    """A Paimon HEAD compaction of a row-tracking table stores ``_ROW_ID`` and ``_SEQUENCE_NUMBER``
    as columns (``_WRITE_COLS`` lists them, ``_FIRST_ROW_ID`` stays null): readers take the stored
    value where it is not null, as Java's ``DataFileRecordReader`` falls back. The file here is
    made by hand in that layout (no Paimon HEAD writer is available to make one)."""
    import os

    import pyarrow.parquet as pq

    from lake_assets.ops.commit_message import CommitMessage

    t = catalog.create_table("db.t", SCHEMA, options=TRACKED)
    t.write_arrow(rows([1], "a"))  # row id 0, so the commit below starts at 1
    name = "data-00000000-0000-0000-0000-000000000000-0.parquet"
    data = pa.table({"id": [7, 8, 9], "p": ["a"] * 3, "v": ["x", "y", "z"],
                     "_ROW_ID": pa.array([40, None, 42], pa.int64()),
                     "_SEQUENCE_NUMBER": pa.array([5, 6, None], pa.int64())})
    bucket_dir = os.path.join(t.store.paths.root, "bucket-0")
    pq.write_table(data, os.path.join(bucket_dir, name))
    f = dataclasses.replace(meta(name, None, 3, 9, cols=("id", "p", "v", "_ROW_ID", "_SEQUENCE_NUMBER"),
                                 source=FileSource.COMPACT),
                            file_size=os.path.getsize(os.path.join(bucket_dir, name)), value_stats_cols=())
    t.new_committer("hand").commit([CommitMessage(EMPTY_ROW, 0, -1, new_files=(f,))], 1)
    got = {r["id"]: (r["_ROW_ID"], r["_SEQUENCE_NUMBER"])
           for r in t.to_arrow(columns=["id", "_ROW_ID", "_SEQUENCE_NUMBER"]).to_pylist()}
    # no first row id to fall back on: a null stored id stays null; the sequence falls back to the file's max
    assert got == {1: (0, 1), 7: (40, 5), 8: (None, 6), 9: (42, 9)}
    assert t.latest_snapshot().next_row_id == 1  # a file that stores its ids takes none
