"""Dynamic-bucket primary-key tables (``bucket = -1``) written by lake_assets, end to end in the core:
keys keep their bucket, buckets fill to the target, the hash index follows the data through
commits, overwrites, aborts, conflicts, expiry and orphan removal."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import CommitConflictError, InvalidCommitMessageError
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.dynamic_bucket import key_hashes
from lake_assets.spec.binary_row import deserialize_row
from lake_assets.spec.hash_index import HASH_INDEX, decode_hashes
from lake_assets.spec.manifest import FileKind, IndexManifestEntry

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string()), ("op", pa.string())])


def rows(ids: range | list[int], tag: str, dt: str = "d1", op: str = "+I") -> pa.Table:
    ids = list(ids)
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [f"{tag}{i}" for i in ids], "op": [op] * len(ids)},
                    schema=SCHEMA)


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


@pytest.fixture
def table(catalog: Catalog) -> Table:
    # no 'bucket' option: dynamic bucket mode is Paimon's default for primary-key tables
    return catalog.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"dynamic-bucket.target-row-num": "10", "rowkind.field": "op"})


def index(t: Table) -> dict[tuple[bytes, int], IndexManifestEntry]:
    snap = t.snapshot_manager.latest()
    assert snap is not None and snap.index_manifest
    return {(e.partition, e.bucket): e for e in t.store.index_entries(snap.index_manifest)}


def bucket_of_keys(t: Table) -> dict[tuple[int, str], int]:
    from lake_assets.ops.read import SplitReader

    reader = SplitReader(t.store, t.schema)
    out = {}
    for split in t.plan():
        for part in reader.read_split(split):
            for i, d in zip(part.column("id").to_pylist(), part.column("dt").to_pylist(), strict=True):
                assert (i, d) not in out, f"key {(i, d)} in two buckets"
                out[(i, d)] = split.bucket
    return out


def check_index(t: Table) -> None:
    """Each bucket's index file holds the hashes of the keys in that bucket (at least)."""
    idx = index(t)
    keys = list(t.schema.trimmed_primary_keys)
    from lake_assets.ops.read import SplitReader

    reader = SplitReader(t.store, t.schema)
    for split in t.plan():
        data = pa.concat_tables(reader.read_split(split))
        entry = idx[(split.partition, split.bucket)]
        hashes = set(decode_hashes(t.file_io.read_bytes(t.paths.index_file(entry.file_name)), "x").tolist())
        assert entry.row_count == len(hashes)
        assert set(key_hashes([data.column(k) for k in keys], t.schema.types(keys)).tolist()) <= hashes


def test_buckets_fill_to_the_target_and_keys_stay(table: Table) -> None:
    table.write_arrow(rows(range(35), "a"))
    first = bucket_of_keys(table)
    assert sorted(set(first.values())) == [0, 1, 2, 3]
    assert max(list(first.values()).count(b) for b in range(4)) == 10
    table.write_arrow(rows(range(20, 50), "b"))  # 15 updates, 15 new keys
    second = bucket_of_keys(table)
    assert all(second[k] == b for k, b in first.items())
    assert sorted(set(second.values())) == [0, 1, 2, 3, 4]
    assert table.to_arrow().num_rows == 50
    check_index(table)
    # retractions delete in the key's bucket; the writer indexes every key it writes
    table.write_arrow(rows([3, 47, 99], "x", op="-D"))
    assert sorted(table.to_arrow().column("id").to_pylist()) == [i for i in range(50) if i not in (3, 47)]
    check_index(table)


def test_a_write_touches_only_the_index_of_buckets_that_got_new_keys(table: Table) -> None:
    table.write_arrow(rows(range(25), "a"))
    before = index(table)
    table.write_arrow(rows(range(5), "b"))  # bucket 0's keys only: nothing new to index
    assert index(table) == before
    table.write_arrow(rows([25], "c"))  # a new key goes to bucket 2 (5 keys there)
    after = index(table)
    changed = {k for k in after if after[k] != before.get(k)}
    assert [b for _, b in changed] == [2]


def test_partitions_have_their_own_index(table: Table) -> None:
    table.write_arrow(pa.concat_tables([rows(range(12), "a", dt="d1"), rows(range(12), "a", dt="d2")]))
    types = table.schema.types(["dt"])
    assert sorted((tuple(deserialize_row(p, types)), b) for p, b in index(table)) == [
        (("d1",), 0), (("d1",), 1), (("d2",), 0), (("d2",), 1)]
    assert table.to_arrow().num_rows == 24
    check_index(table)


def test_a_second_writer_from_the_same_snapshot_conflicts_and_leaves_nothing(table: Table) -> None:
    table.write_arrow(rows(range(5), "a"))
    w1, w2 = table.new_writer("u1"), table.new_writer("u2")
    w1.write_arrow(rows([100, 101], "w1"))
    w2.write_arrow(rows([200, 201], "w2"))
    m1, m2 = w1.prepare_commit(), w2.prepare_commit()
    table.new_committer("u1").commit(m1, 1)
    files_before = sorted(p.name for p in Path(table.paths.root).rglob("*") if p.is_file())
    with pytest.raises(CommitConflictError, match="one writer per table"):
        table.new_committer("u2").commit(m2, 1)
    # w2's data and index files are gone; the table holds w1's rows only, keys once
    files_after = sorted(p.name for p in Path(table.paths.root).rglob("*") if p.is_file())
    assert set(files_after) <= set(files_before)
    assert not {e.file_name for m in m2 for e in m.index_after} & set(files_after)
    assert sorted(table.to_arrow().column("id").to_pylist()) == [0, 1, 2, 3, 4, 100, 101]
    check_index(table)


def test_a_writer_spans_commits_and_replays_are_no_ops(table: Table) -> None:
    w = table.new_writer("job")
    committer = table.new_committer("job")
    w.write_arrow(rows(range(15), "a"))
    first = w.prepare_commit()
    committer.commit(first, 1)
    w.write_arrow(rows(range(10, 25), "b"))
    second = w.prepare_commit()
    assert any(m.index_before for m in second)  # the new files replace the ones the writer wrote before
    committer.commit(second, 2)
    assert table.new_committer("job").commit(second, 2, check_committed=True) == []
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(25))
    check_index(table)


def test_messages_carry_index_files_through_json_and_abort_deletes_them(table: Table) -> None:
    w = table.new_writer("job")
    w.write_arrow(rows(range(3), "a"))
    messages = [CommitMessage.from_json(m.to_json()) for m in w.prepare_commit()]
    (entry,) = [e for m in messages for e in m.index_after]
    assert entry.index_type == HASH_INDEX and entry.row_count == 3
    path = Path(table.paths.index_file(entry.file_name))
    assert path.exists()
    table.new_committer("job").abort(messages)
    assert not path.exists()


def test_hash_index_entries_only_fit_dynamic_bucket_tables(catalog: Catalog, table: Table) -> None:
    fixed = catalog.create_table("db.f", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                 options={"bucket": "2", "rowkind.field": "op"})
    w = table.new_writer("job")
    w.write_arrow(rows(range(3), "a"))
    (m,) = w.prepare_commit()
    with pytest.raises(InvalidCommitMessageError, match="only dynamic-bucket primary-key tables"):
        fixed.new_committer("job").commit([dataclasses.replace(m, total_buckets=0)], 1)
    bad = IndexManifestEntry(FileKind.ADD, m.partition, m.bucket, HASH_INDEX, "../../escape", 4, 1)
    with pytest.raises(InvalidCommitMessageError):
        CommitMessage(m.partition, m.bucket, -1, index_after=(bad,))
    other_bucket = IndexManifestEntry(FileKind.ADD, m.partition, m.bucket + 1, HASH_INDEX, "index-x-0", 4, 1)
    with pytest.raises(InvalidCommitMessageError, match="another bucket"):
        CommitMessage(m.partition, m.bucket, -1, index_after=(other_bucket,))


def test_overwrite_replaces_the_partitions_index(table: Table) -> None:
    table.write_arrow(pa.concat_tables([rows(range(20), "a", dt="d1"), rows(range(20), "a", dt="d2")]))
    table.write_arrow(rows([1, 2, 300], "new", dt="d1"), overwrite={"dt": "d1"})
    types = table.schema.types(["dt"])
    d1 = [e for (p, _), e in index(table).items() if deserialize_row(p, types) == ["d1"]]
    hashes = set().union(*(set(decode_hashes(table.file_io.read_bytes(table.paths.index_file(e.file_name)),
                                             "x").tolist()) for e in d1))
    assert len(hashes) == 3  # the old keys of d1 are gone with their rows
    assert table.to_arrow(filter=[("dt", "=", "d1")]).num_rows == 3
    assert table.to_arrow(filter=[("dt", "=", "d2")]).num_rows == 20
    check_index(table)


def test_expiry_and_orphan_removal_keep_the_live_index(table: Table) -> None:
    for r in range(6):
        table.write_arrow(rows(range(r * 4, r * 4 + 8), f"r{r}"))
    table.compact(full=True)
    live = {e.file_name for e in index(table).values()}
    table.expire_snapshots(retain_min=1, retain_max=1)
    on_disk = {p.name for p in Path(table.paths.index_dir).iterdir()}
    assert live <= on_disk
    table.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert {p.name for p in Path(table.paths.index_dir).iterdir()} == live
    table.write_arrow(rows(range(20, 30), "after"))
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(30))
    check_index(table)


def test_an_overwrite_writers_index_is_refused_outside_an_overwrite(table: Table) -> None:
    """A writer that ignores previous files starts its buckets' index empty (as Paimon's overwrite
    writers): committed without the overwrite it would drop the old keys from the index, so the
    commit is refused and the table is unchanged."""
    table.write_arrow(rows(range(5), "a"))
    before = index(table)
    w = table.new_writer("job", ignore_previous_files=True)
    w.write_arrow(rows([1, 7], "b"))
    with pytest.raises(CommitConflictError, match="hash index of bucket 0 changed"):
        table.new_committer("job").commit(w.prepare_commit(), 1)
    assert index(table) == before
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(5))
