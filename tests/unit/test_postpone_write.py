"""Writes into postpone-bucket tables (``bucket = -2``, ops/postpone_write.py): rows land unsorted in
``bucket-postpone`` as Paimon's postpone writer leaves them, batch reads skip them until the
postpone compaction (ops/postpone.py) moves them into real buckets, and the result is what the
same rounds written into a fixed-bucket table read as.

Cross-engine checks (pypaimon and pypaimon-rust reading ours, mixed writers) live in
tests/interop/test_postpone_write_interop.py.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND, read_data_file
from lake_assets.ops.postpone_write import PostponeWriter
from lake_assets.spec.snapshot import CommitKind
from lake_assets.table import Table

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string()), ("n", pa.int64()), ("op", pa.string())])
NAME = re.compile(r"^data--u-(?P<user>.+)-s-(?P<id>\d+)-w-[0-9a-f-]{36}-\d+\.avro$")


def rows(ids: list[int], dt: str, tag: str, op: str = "+I") -> pa.Table:
    return pa.table({"id": ids, "dt": [dt] * len(ids), "v": [f"{tag}{i}" for i in ids], "n": [1] * len(ids),
                     "op": [op] * len(ids)}, schema=SCHEMA)


def make(catalog: Catalog, name: str, bucket: str, **options: str) -> Table:
    return catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": bucket, "rowkind.field": "op", **options})


def content(t: Table) -> list[dict]:
    return t.to_arrow().sort_by([("dt", "ascending"), ("id", "ascending")]).to_pylist()


def live(t: Table) -> list:
    return list(t.store.file_store_scan().live_entries(t.store.snapshot_manager.latest()))


ROUNDS = [
    [rows([5, 3, 1], "d1", "a"), rows([2, 4], "d2", "a")],
    [rows([3, 7], "d1", "b"), rows([2], "d2", "x", "-D")],
    [rows([1], "d1", "y", "-D"), rows([4, 9], "d2", "c"), rows([7], "d1", "c")],
]


def test_rows_wait_unsorted_in_bucket_postpone_as_paimon_writes_them(catalog: Catalog):
    t = make(catalog, "p", "-2")
    sid = t.write_arrow(pa.concat_tables([rows([5, 3, 1], "d1", "a"), rows([2], "d1", "x", "-D")]))
    snap = t.snapshot(sid)
    assert snap.commit_kind == CommitKind.APPEND
    assert t.to_arrow().num_rows == 0  # batch readers skip bucket-postpone, as Paimon's do
    [e] = live(t)
    f = e.file
    assert (e.bucket, e.total_buckets, f.level) == (-2, -2, 0)
    m = NAME.match(f.file_name)
    assert m and m["user"] == snap.commit_user
    assert (f.row_count, f.min_sequence_number, f.max_sequence_number, f.delete_row_count) == (4, 0, 3, 1)
    assert f.value_stats_cols == () and f.value_stats.null_counts == ()  # metadata.stats-mode = none
    # arrival order, not key order: the first and last rows' keys are the file's "min" and "max"
    raw = read_data_file(t.store.file_io, t.store.data_file_path(e.partition, e.bucket, f))
    assert raw.column("id").to_pylist() == [5, 3, 1, 2]
    assert raw.column(SEQUENCE_NUMBER).to_pylist() == [0, 1, 2, 3]
    assert raw.column(VALUE_KIND).to_pylist() == [0, 0, 0, 3]


@pytest.mark.parametrize("engine", [
    {},
    {"merge-engine": "partial-update"},
    {"merge-engine": "aggregation", "fields.n.aggregate-function": "sum"},
])
def test_compacted_rounds_read_as_the_same_rounds_in_fixed_buckets(catalog: Catalog, engine):
    """Rounds with updates, deletes and two partitions; a compaction after the second round (so
    the third merges with rows already in real buckets) and one at the end."""
    if engine:
        engine = {**engine, "ignore-delete": "true"}  # these engines take no deletes by default
    post = make(catalog, "p", "-2", **engine, **{"postpone.default-bucket-num": "2"})
    fixed = make(catalog, "f", "2", **engine)
    for i, batches in enumerate(ROUNDS):
        for b in batches:
            post.write_arrow(b)
            fixed.write_arrow(b)
        if i == 1:
            post.compact()
            assert content(post) == content(fixed)
    before = content(post)
    post.compact()
    assert content(post) == content(fixed) != before
    assert {e.bucket for e in live(post)} == {0, 1} and {e.total_buckets for e in live(post)} == {2}


def test_new_partitions_get_their_bucket_count_and_keep_it(catalog: Catalog):
    t = make(catalog, "p", "-2", **{"postpone.default-bucket-num": "3"})
    t.write_arrow(rows(list(range(20)), "d1", "a"))
    t.compact()
    t.write_arrow(rows(list(range(10, 30)), "d1", "b"))
    t.compact()
    assert {e.total_buckets for e in live(t)} == {3}
    assert [r["v"] for r in content(t)] == [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10, 30)]


def test_two_phase_commit_is_exactly_once(catalog: Catalog):
    t = make(catalog, "p", "-2")
    writer = t.new_writer("job-1")
    assert isinstance(writer, PostponeWriter)
    writer.write_arrow(rows([1, 2], "d1", "a"))
    first = writer.prepare_commit()
    writer.write_arrow(rows([3], "d1", "a"))
    second = writer.prepare_commit()
    writer.close()
    committer = t.new_committer("job-1")
    committer.commit(first, commit_identifier=1)
    committer.commit(second, commit_identifier=2)
    committer.commit(second, commit_identifier=2)  # a retry after a restart: no-op
    assert len(t.snapshots()) == 2
    # one writer, one prefix: the compaction replays its files in order
    prefixes = {e.file.file_name.split("-w-")[0] for e in live(t)}
    assert len(prefixes) == 1
    t.compact()
    assert [r["id"] for r in content(t)] == [1, 2, 3]


def test_ignore_delete_drops_retractions_before_they_reach_a_file(catalog: Catalog):
    t = make(catalog, "p", "-2", **{"ignore-delete": "true"})
    t.write_arrow(rows([1, 2], "d1", "a"))
    t.write_arrow(rows([1], "d1", "x", "-D"))  # nothing left to write: no snapshot
    assert len(t.snapshots()) == 1
    t.compact()
    assert [r["id"] for r in content(t)] == [1, 2]


def test_abort_deletes_the_written_files(catalog: Catalog):
    t = make(catalog, "p", "-2")
    writer = t.new_writer("job")
    writer.write_arrow(rows([1, 2], "d1", "a"))
    messages = writer.prepare_commit()
    path = t.store.data_file_path(messages[0].partition, -2, messages[0].new_files[0])
    assert t.store.file_io.exists(path)
    writer.abort(messages)
    writer.close()
    assert not t.store.file_io.exists(path)


def test_overwrite_replaces_the_partition_with_postponed_rows(catalog: Catalog):
    """An overwrite removes everything of the partition (real buckets and bucket-postpone) and adds
    postpone files: until a compaction the partition reads empty, as for Paimon's readers."""
    t = make(catalog, "p", "-2")
    t.write_arrow(pa.concat_tables([rows([1, 2], "d1", "a"), rows([3], "d2", "a")]))
    t.compact()
    t.write_arrow(rows([4], "d1", "z"))
    t.write_arrow(rows([5], "d1", "b"), overwrite={"dt": "d1"})
    assert [r["id"] for r in content(t)] == [3]
    t.compact()
    assert [(r["id"], r["dt"]) for r in content(t)] == [(5, "d1"), (3, "d2")]


def test_maintenance_keeps_what_postpone_files_need(catalog: Catalog):
    """Tags, expiry, orphan removal and rollback with postpone files live, tagged and compacted away."""
    t = make(catalog, "p", "-2", **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.write_arrow(rows([1, 2], "d1", "a"))
    t.create_tag("before")
    postponed = {e.file.file_name for e in live(t)}
    t.write_arrow(rows([2, 3], "d1", "b"))
    assert t.remove_orphan_files(older_than=timedelta(0)).paths == []
    t.compact()
    t.expire_snapshots()
    # the tag still needs its postpone file; the newer one was compacted away and expired
    kept = {p.name for p in _postpone_files(t)}
    assert postponed <= kept
    assert t.remove_orphan_files(older_than=timedelta(0)).paths == []
    assert postponed <= {p.name for p in _postpone_files(t)}
    assert [r["v"] for r in content(t)] == ["a1", "b2", "b3"]
    t.rollback_to(tag="before")
    assert content(t) == []  # the tag's rows are still postponed
    t.compact()
    assert [r["v"] for r in content(t)] == ["a1", "a2"]


def _postpone_files(t: Table) -> list:
    from pathlib import Path

    root = Path(t.store.paths.bucket_dir("dt=d1", -2))
    return sorted(root.iterdir()) if root.exists() else []


def test_write_ids_differ_per_writer(catalog: Catalog):
    t = make(catalog, "p", "-2")
    ids = {t.new_writer("u").write_id for _ in range(8)}
    assert len(ids) > 1 and all(0 <= i < 2**31 - 1 for i in ids)


def test_one_writers_rolled_files_replay_in_order(catalog: Catalog):
    """A small write buffer and target file size: one writer's rows of one commit spread over many
    files (numbered on across them), and the compaction replays them in the order written. Files
    roll at a multiple of 1,000 rows written, as Java's (RollingFileWriter), so 1,500 keys each."""
    t = make(catalog, "p", "-2", **{"write-buffer-size": "1 kb", "target-file-size": "1 kb",
                                     "page-size": "1 kb"})
    versions = [rows(list(range(1500)), "d1", tag) for tag in ("a", "b", "c")]
    t.write_arrow(pa.RecordBatchReader.from_batches(SCHEMA, [b for v in versions for b in v.to_batches()]))
    files = sorted((e.file for e in live(t)), key=lambda f: f.min_sequence_number)
    assert len(files) >= 3 and len({f.file_name.split("-w-")[0] for f in files}) == 1
    assert [f.min_sequence_number for f in files[1:]] == [f.max_sequence_number + 1 for f in files[:-1]]
    assert [f.row_count for f in files] == [1000, 1000, 1000, 1000, 500]
    assert files[-1].max_sequence_number == 4499
    t.compact()
    assert [r["v"] for r in content(t)] == [f"c{i}" for i in range(1500)]
