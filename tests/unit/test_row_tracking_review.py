"""Review of row tracking / data evolution (issue 14): reads of merged row-id ranges that ask for
no file column, row ids from storage that no Paimon writer makes, and the memory of the merge.

Update files are made by hand in the layout pypaimon 2.1's ``update_by_arrow_with_row_id`` commits
(``_WRITE_COLS`` the updated columns, ``_FIRST_ROW_ID`` the base file's, sequence numbers left to
the commit); tests/interop/test_row_tracking_interop.py drives pypaimon itself."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets import Catalog
from lake_assets.errors import CorruptMetadataError
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spec.manifest import EMPTY_ROW, DataFileMeta, FileSource, SimpleStats

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
EVOLVING = {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def update_file(t, first: int | None, v: list[str | None], n: int, *, rows: int | None = None,  # type: ignore[no-untyped-def]
                row_group: int | None = None) -> None:
    """Commit a file of column ``v`` alone for the row ids ``first`` .. ``first + len(v) - 1``
    (its entry claims ``rows`` rows if given)."""
    name = f"data-00000000-0000-0000-0000-{n:012d}-0.parquet"
    path = os.path.join(t.store.paths.root, "bucket-0", name)
    pq.write_table(pa.table({"v": pa.array(v, pa.string())}), path, row_group_size=row_group)
    count = len(v) if rows is None else rows
    f = DataFileMeta(name, os.path.getsize(path), count, EMPTY_ROW, EMPTY_ROW, SimpleStats.EMPTY,
                     SimpleStats.EMPTY, 0, 0, t.schema.id, 0, file_source=FileSource.APPEND,
                     first_row_id=first, write_cols=("v",), value_stats_cols=())
    t.new_committer(f"hand-{n}").commit([CommitMessage(EMPTY_ROW, 0, -1, new_files=(f,))], 1)


def forge_first_row_id(store, first: int) -> None:  # type: ignore[no-untyped-def]
    """Rewrite the latest snapshot (in place, as no writer would) over one manifest whose files
    all claim ``_FIRST_ROW_ID`` ``first``."""
    sm = store.snapshot_manager
    snap = sm.latest()
    mio = store.manifest_io()
    entries = [dataclasses.replace(e, file=dataclasses.replace(e.file, first_row_id=first))
               for e in store.file_store_scan().live_entries(snap)]
    base, base_size = mio.write_manifest_list(mio.write_manifests(entries))
    delta, delta_size = mio.write_manifest_list([])
    forged = dataclasses.replace(snap, base_manifest_list=base, base_manifest_list_size=base_size,
                                 delta_manifest_list=delta, delta_manifest_list_size=delta_size)
    path = store.paths.snapshot_file(snap.id)
    store.file_io.delete(path)
    store.file_io.write_bytes(path, forged.to_json().encode())


def evolved(catalog: Catalog):  # type: ignore[no-untyped-def]
    t = catalog.create_table("db.t", SCHEMA, options=EVOLVING)
    t.write_arrow(pa.table({"id": [1, 2, 3], "p": ["a"] * 3, "v": ["x", "y", "z"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [4], "p": ["a"], "v": ["w"]}, schema=SCHEMA))
    update_file(t, 0, ["X", None, "Z"], 1)
    return catalog.get_table("db.t")


def test_a_merged_range_read_for_no_file_column_keeps_its_rows(catalog: Catalog) -> None:
    """Paimon's ``DataEvolutionSplitRead`` reads a range of no read column through one file reader,
    which counts its rows; the merge must not build a table of no column (and so of no row)."""
    t = evolved(catalog)
    got = t.to_arrow(columns=["id", "v", "_ROW_ID"]).sort_by("_ROW_ID").to_pylist()
    assert [(r["id"], r["v"], r["_ROW_ID"]) for r in got] == [(1, "X", 0), (2, None, 1), (3, "Z", 2), (4, "w", 3)]
    assert t.to_arrow(columns=["_ROW_ID"]).sort_by("_ROW_ID").column("_ROW_ID").to_pylist() == [0, 1, 2, 3]
    seqs = t.to_arrow(columns=["_SEQUENCE_NUMBER", "_ROW_ID"]).sort_by("_ROW_ID").column(0).to_pylist()
    assert seqs == [3, 3, 3, 2]  # the update's snapshot for its range
    batches = list(t.to_batches(columns=["_ROW_ID"], batch_size=2))
    assert sorted(i for b in batches for i in b.column(0).to_pylist()) == [0, 1, 2, 3]
    assert t.to_arrow().num_rows == 4


def test_a_streamed_merge_holds_one_batch_of_each_file(catalog: Catalog) -> None:
    """``to_batches(batch_size=n)`` of a merged range gives batches of at most n rows (it gave the
    whole range in one), whatever the row groups of its files: here the update's row groups of 4
    rows end where the base file's batches of 3 do not."""
    t = catalog.create_table("db.t", SCHEMA, options=EVOLVING)
    t.write_arrow(pa.table({"id": list(range(10)), "p": ["a"] * 10, "v": [f"v{i}" for i in range(10)]},
                           schema=SCHEMA))
    update_file(t, 0, [f"u{i}" if i % 3 else None for i in range(10)], 1, row_group=4)
    t = catalog.get_table("db.t")
    want = [(i, f"u{i}" if i % 3 else None, i) for i in range(10)]
    batches = list(t.to_batches(columns=["id", "v", "_ROW_ID"], batch_size=3))
    assert [b.num_rows for b in batches] == [3, 3, 3, 1]
    got = [(r["id"], r["v"], r["_ROW_ID"]) for b in batches for r in b.to_pylist()]
    assert got == want
    whole = t.to_arrow(columns=["id", "v", "_ROW_ID"]).to_pylist()
    assert [(r["id"], r["v"], r["_ROW_ID"]) for r in whole] == want


def test_a_file_whose_rows_do_not_match_its_range_is_refused(catalog: Catalog) -> None:
    t = catalog.create_table("db.t", SCHEMA, options=EVOLVING)
    t.write_arrow(pa.table({"id": [1, 2, 3], "p": ["a"] * 3, "v": ["x", "y", "z"]}, schema=SCHEMA))
    update_file(t, 0, ["X", "Y"], 1, rows=3)  # the entry claims 3 rows, the file holds 2
    t = catalog.get_table("db.t")
    # the file's own check (ops/file_rows.py) meets it before the range's does
    damaged = r"data file \S*data-\S+-000000000001-0.parquet holds 2 rows, but its manifest entry says 3"
    with pytest.raises(CorruptMetadataError, match=damaged):
        t.to_arrow()
    with pytest.raises(CorruptMetadataError, match=damaged):
        list(t.to_batches(batch_size=2))


def test_row_ids_no_paimon_writer_makes_are_refused_naming_the_file(catalog: Catalog) -> None:
    """A negative ``_FIRST_ROW_ID`` (as a foreign writer's manifest may carry) was read as negative
    ids; one whose rows run past the largest BIGINT failed the commit with a TypeError from the
    Avro encoder; a negative ``nextRowId`` gave new rows negative ids. Each is refused with a
    `LakeError` naming the file or snapshot, and a refused commit leaves the table as it was."""
    import json

    from lake_assets.errors import InvalidCommitMessageError

    e = catalog.create_table("db.e", SCHEMA, options=EVOLVING)
    e.write_arrow(pa.table({"id": [1, 2], "p": ["a"] * 2, "v": ["x", "y"]}, schema=SCHEMA))
    with pytest.raises(InvalidCommitMessageError, match=r"0002-0.parquet has first_row_id = 9223372036854775807"):
        update_file(e, 2**63 - 1, ["X", "Y"], 2)
    assert catalog.get_table("db.e").latest_snapshot().id == 1
    # a negative first id cannot come from our committer either; a foreign manifest's is read back
    t = catalog.create_table("db.t", SCHEMA, options={"row-tracking.enabled": "true"})
    t.write_arrow(pa.table({"id": [1], "p": ["a"], "v": ["x"]}, schema=SCHEMA))
    with pytest.raises(InvalidCommitMessageError, match=r"has first_row_id = -5"):
        update_file(t, -5, ["y", "z"], 1)
    for name in ("db.t", "db.e"):  # each latest snapshot re-pointed at manifests holding the forged id
        forge_first_row_id(catalog.get_table(name).store, -5)
    with pytest.raises(CorruptMetadataError, match=r"Cannot read db.t: data file data-\S+ has _FIRST_ROW_ID -5"):
        catalog.get_table("db.t").to_arrow(columns=["v", "_ROW_ID"])
    with pytest.raises(CorruptMetadataError, match=r"Cannot read db.e: data file data-\S+ has _FIRST_ROW_ID -5"):
        catalog.get_table("db.e").to_arrow()
    # a snapshot recording a negative nextRowId (made by hand: no writer records one)
    path = t.store.paths.snapshot_file(t.latest_snapshot().id)
    doc = json.loads(t.store.file_io.read_bytes(path))
    doc["nextRowId"] = -3
    t.store.file_io.delete(path)
    t.store.file_io.write_bytes(path, json.dumps(doc).encode())
    before = sorted(os.listdir(os.path.join(t.store.paths.root, "manifest")))
    with pytest.raises(CorruptMetadataError, match=r"Cannot commit to db.t: snapshot 1 records nextRowId -3"):
        catalog.get_table("db.t").write_arrow(pa.table({"id": [9], "p": ["a"], "v": ["n"]}, schema=SCHEMA))
    assert catalog.get_table("db.t").latest_snapshot().id == 1
    assert sorted(os.listdir(os.path.join(t.store.paths.root, "manifest"))) == before


def test_a_new_file_without_file_source_is_refused(catalog: Catalog) -> None:
    """HEAD's ``assignRowTrackingMeta`` requires every new file's ``_FILE_SOURCE``; one without
    it got no first row id here, so its rows read with null ``_ROW_ID``."""
    from lake_assets.errors import InvalidCommitMessageError

    t = catalog.create_table("db.t", SCHEMA, options={"row-tracking.enabled": "true"})
    t.write_arrow(pa.table({"id": [1], "p": ["a"], "v": ["x"]}, schema=SCHEMA))
    f = t.store.file_store_scan().live_entries(t.latest_snapshot())[0].file
    name = "data-00000000-0000-0000-0000-000000000009-0.parquet"
    src = t.store.data_file_path(EMPTY_ROW, 0, f)
    dst = os.path.join(os.path.dirname(src), name)
    with open(src, "rb") as a, open(dst, "wb") as b:
        b.write(a.read())
    copy = dataclasses.replace(f, file_name=name, file_source=None, first_row_id=None,
                               min_sequence_number=0, max_sequence_number=0)
    with pytest.raises(InvalidCommitMessageError, match=f"new file {name} of a row-tracking table has no _FILE_SOURCE"):
        t.new_committer("hand").commit([CommitMessage(EMPTY_ROW, 0, -1, new_files=(copy,))], 1)
    assert catalog.get_table("db.t").latest_snapshot().id == 1


def test_a_batched_read_reads_stored_row_ids_once_per_file(catalog: Catalog, monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """A file storing its ``_ROW_ID`` (a Paimon HEAD compaction's layout, made by hand) had the
    whole stored column re-read for every batch of ``to_batches``: reads grew with the batches."""
    import lake_assets.ops.data_evolution_read as de

    t = catalog.create_table("db.t", SCHEMA, options={"row-tracking.enabled": "true"})
    name = "data-00000000-0000-0000-0000-000000000003-0.parquet"
    path = os.path.join(t.store.paths.root, "bucket-0", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    n = 10
    pq.write_table(pa.table({"id": list(range(n)), "p": ["a"] * n, "v": ["x"] * n,
                             "_ROW_ID": pa.array([100 + i for i in range(n)], pa.int64())}), path, row_group_size=2)
    f = DataFileMeta(name, os.path.getsize(path), n, EMPTY_ROW, EMPTY_ROW, SimpleStats.EMPTY, SimpleStats.EMPTY, 1, 1,
                     0, 0, file_source=FileSource.COMPACT, write_cols=("id", "p", "v", "_ROW_ID"), value_stats_cols=())
    t.new_committer("hand").commit([CommitMessage(EMPTY_ROW, 0, -1, new_files=(f,))], 1)
    reads: list[str] = []
    real = de.read_data_file

    def counted(file_io, p, *args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(p)
        return real(file_io, p, *args, **kwargs)

    monkeypatch.setattr(de, "read_data_file", counted)
    batches = list(catalog.get_table("db.t").to_batches(columns=["id", "_ROW_ID"], batch_size=2))
    assert [r["_ROW_ID"] for b in batches for r in b.to_pylist()] == [100 + i for i in range(n)]
    assert len(batches) == 5 and len(reads) == 1


def test_overlapping_row_ids_of_a_row_tracking_table_are_refused(catalog: Catalog) -> None:
    """Two live files of one row-id range (no Paimon writer leaves them: a commit gives each new
    file fresh ids) were read as two rows of one ``_ROW_ID``. A read of the data alone still works."""
    t = catalog.create_table("db.t", SCHEMA, options={"row-tracking.enabled": "true"})
    t.write_arrow(pa.table({"id": [1, 2], "p": ["a"] * 2, "v": ["x", "y"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [3, 4, 5], "p": ["a"] * 3, "v": ["z", "u", "w"]}, schema=SCHEMA))
    assert sorted(t.to_arrow(columns=["_ROW_ID"]).column(0).to_pylist()) == [0, 1, 2, 3, 4]
    forge_first_row_id(t.store, 1)
    t = catalog.get_table("db.t")
    with pytest.raises(CorruptMetadataError, match=r"Cannot read db.t: data files data-\S+ and data-\S+ hold "
                                                   r"overlapping row ids \(up to 2, from 1\)"):
        t.to_arrow(columns=["id", "_ROW_ID"])
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2, 3, 4, 5]


def test_a_write_of_no_rows_to_a_row_tracking_table_is_not_a_compaction(catalog: Catalog) -> None:
    """A commit of no message was checked as a compaction, which row-tracking tables refused: an
    empty ``write_arrow`` failed with "Cannot compact db.t". It commits nothing, as on any table,
    and the next write takes the next ids."""
    t = catalog.create_table("db.t", SCHEMA, options={"row-tracking.enabled": "true"})
    t.write_arrow(pa.table({"id": [1], "p": ["a"], "v": ["x"]}, schema=SCHEMA))
    t.write_arrow(SCHEMA.empty_table())
    assert [s.id for s in t.snapshots()] == [1]
    t.write_arrow(pa.table({"id": [2], "p": ["a"], "v": ["y"]}, schema=SCHEMA))
    got = t.to_arrow(columns=["id", "_ROW_ID"]).sort_by("id").to_pylist()
    assert got == [{"id": 1, "_ROW_ID": 0}, {"id": 2, "_ROW_ID": 1}]
