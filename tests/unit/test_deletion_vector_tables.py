"""Deletion-vector tables end to end in lake_assets alone: writes, compaction, commits, maintenance.

Java 0.9 checks the same tables both ways in tests/differential/test_deletion_vectors_java.py; these
tests pin what needs no JVM: a random history read against a plain dict model, the no-merge read
path, conflicts between compactions, overwrite, expiry, tags, rollback and orphan removal.
"""

from __future__ import annotations

import os
import random
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from pyroaring import BitMap, BitMap64

import lake_assets.ops.level0_flush as level0_mod
import lake_assets.ops.read as read_mod
from lake_assets import Catalog
from lake_assets.errors import CommitConflictError
from lake_assets.ops import dv_key_lookup
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.compact import plan_compaction, run_compaction_task
from lake_assets.ops.deletion_vectors import VectorLoader, snapshot_index
from lake_assets.spec.binary_row import deserialize_row

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.string()), ("op", pa.string())])


class FormCatalog(Catalog):
    """A catalog whose tables made by `make` write deletion vectors of one form."""

    bitmap64 = "false"


@pytest.fixture(params=["false", "true"], ids=["bitmap32", "bitmap64"])
def catalog(tmp_path: Path, request: pytest.FixtureRequest) -> Catalog:
    """Every test runs with 32-bit vectors and again with 64-bit ones (``deletion-vectors.bitmap64``)."""
    cat = FormCatalog(str(tmp_path / "wh"))
    cat.bitmap64 = request.param
    cat.create_database("db")
    return cat


def make(catalog: Catalog, **options: str):
    form = {"deletion-vectors.bitmap64": catalog.bitmap64} if isinstance(catalog, FormCatalog) else {}
    return catalog.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                                options={"bucket": "2", "deletion-vectors.enabled": "true",
                                         "rowkind.field": "op", **form, **options})


def rows(keys, p: str, tag: str, op: str = "+I") -> pa.Table:
    keys = list(keys)
    return pa.table({"k": keys, "p": [p] * len(keys), "v": [f"{tag}{k}" for k in keys], "op": [op] * len(keys)},
                    schema=SCHEMA)


def as_model(table: pa.Table) -> dict[tuple[int, str], str]:
    return {(r["k"], r["p"]): r["v"] for r in table.select(["k", "p", "v"]).to_pylist()}


def vectors(table) -> dict[str, list[int]]:
    loader = VectorLoader(table.store)
    out: dict[str, list[int]] = {}
    wide = table.schema.options.get("deletion-vectors.bitmap64") == "true"
    for entries in snapshot_index(table.store, table.latest_snapshot()).values():
        got = loader.vectors(entries)
        # every vector is in the table's form: compaction wrote them all
        assert {type(v) for v in got.values()} <= {BitMap64 if wide else BitMap}
        out.update({k: list(v) for k, v in got.items()})
    return out


def index_files(table) -> set[str]:
    d = Path(table.paths.index_dir)
    return {p.name for p in d.iterdir()} if d.exists() else set()


def no_merge(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("read merged a deletion-vector bucket")

    monkeypatch.setattr(read_mod, "sort_and_merge", refuse)
    monkeypatch.setattr(read_mod, "winner_masks", refuse)


def test_random_history_reads_like_a_dict(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    table = make(catalog, **{"num-sorted-run.compaction-trigger": "3"})
    rng = random.Random(7)
    model: dict[tuple[int, str], str] = {}
    for round_ in range(12):
        parts = []
        for p in ("a", "b"):
            keys = sorted(rng.sample(range(200), 40))
            dels = keys[:5] if round_ % 3 == 2 else []
            ups = [k for k in keys if k not in dels]
            parts.append(rows(ups, p, f"r{round_}-"))
            if dels:
                parts.append(rows(dels, p, "x", "-D"))
            for k in ups:
                model[(k, p)] = f"r{round_}-{k}"
            for k in dels:
                model.pop((k, p), None)
        table.write_arrow(pa.concat_tables(parts))
        assert as_model(table.to_arrow()) == model
    assert vectors(table), "no deletion vectors were written: the test proves nothing"
    # every level-0 file was compacted at commit: the read needs no merge, also with a value filter
    with monkeypatch.context() as m:
        no_merge(m)
        assert as_model(table.to_arrow()) == model
        got = table.to_arrow(filter=[("v", ">=", "r11")])
        assert as_model(got) == {k: v for k, v in model.items() if v >= "r11"}


def test_write_only_rows_wait_for_the_dedicated_compaction(catalog: Catalog) -> None:
    table = make(catalog, **{"write-only": "true"})
    table.write_arrow(rows(range(20), "a", "a"))
    table.write_arrow(rows(range(0, 20, 2), "a", "b"))
    assert table.to_arrow().num_rows == 0  # level 0 is invisible, as in Paimon
    result = table.compact()
    assert result.snapshot_id is not None
    got = as_model(table.to_arrow())
    assert got == {(k, "a"): ("b" if k % 2 == 0 else "a") + str(k) for k in range(20)}
    table.write_arrow(rows(range(0, 20, 5), "a", "c"))
    table.compact()
    assert vectors(table)
    got = as_model(table.to_arrow())
    assert got[(5, "a")] == "c5" and got[(3, "a")] == "a3" and len(got) == 20


def test_merge_on_read_shows_level0(catalog: Catalog) -> None:
    table = make(catalog, **{"write-only": "true", "deletion-vectors.merge-on-read": "true"})
    table.write_arrow(rows(range(10), "a", "a"))
    table.write_arrow(rows(range(5), "a", "b"))
    got = as_model(table.to_arrow())
    assert got == {(k, "a"): ("b" if k < 5 else "a") + str(k) for k in range(10)}


def test_concurrent_compactions_of_a_bucket_conflict(catalog: Catalog) -> None:
    table = make(catalog, **{"write-only": "true"})
    table.write_arrow(rows(range(30), "a", "a"))
    table.compact(full=True)
    table.write_arrow(rows(range(0, 30, 3), "a", "b"))
    plan_1 = plan_compaction(table.store)
    plan_2 = plan_compaction(table.store)
    first = [run_compaction_task(table.store, t) for t in plan_1.tasks]
    second = [run_compaction_task(table.store, t) for t in plan_2.tasks]
    assert any(m.index_after for m in second)
    table.new_committer("c1").commit(first, check_committed=False)
    expected = as_model(table.to_arrow())
    with pytest.raises(CommitConflictError):
        table.new_committer("c2").commit(second, check_committed=False)
    # the loser's files are gone, the winner's vectors stand
    for m in second:
        for e in m.index_after:
            assert not os.path.exists(table.paths.index_file(e.file_name))
    assert as_model(table.to_arrow()) == expected


def test_messages_with_index_files_travel_as_json(catalog: Catalog) -> None:
    table = make(catalog, **{"write-only": "true"})
    table.write_arrow(rows(range(30), "a", "a"))
    table.compact(full=True)
    table.write_arrow(rows(range(0, 30, 3), "a", "b"))
    messages = [run_compaction_task(table.store, t) for t in plan_compaction(table.store).tasks]
    assert any(m.index_after for m in messages)
    back = [CommitMessage.from_json(m.to_json()) for m in messages]
    assert back == messages
    table.new_committer("c").commit(back, check_committed=False)
    assert as_model(table.to_arrow())[(3, "a")] == "b3"


def test_overwrite_drops_the_vectors_of_replaced_partitions(catalog: Catalog) -> None:
    table = make(catalog)
    table.write_arrow(pa.concat_tables([rows(range(20), "a", "a"), rows(range(20), "b", "a")]))
    table.write_arrow(pa.concat_tables([rows(range(5), "a", "b"), rows(range(5), "b", "b")]))
    entries = table.store.index_entries(table.latest_snapshot().index_manifest)
    assert {table.store.file_store_scan().partition_values(e.partition) for e in entries} == {("a",), ("b",)}
    table.write_arrow(rows(range(3), "a", "c"), overwrite={"p": "a"})
    entries = table.store.index_entries(table.latest_snapshot().index_manifest)
    assert {table.store.file_store_scan().partition_values(e.partition) for e in entries} == {("b",)}
    got = as_model(table.to_arrow())
    assert {k for k in got if k[1] == "a"} == {(0, "a"), (1, "a"), (2, "a")}
    assert got[(1, "b")] == "b1" and got[(10, "b")] == "a10"


def test_expiry_tags_rollback_and_orphans_know_index_files(catalog: Catalog) -> None:
    table = make(catalog, **{"snapshot.num-retained.min": "1"})
    table.write_arrow(rows(range(40), "a", "a"))
    for i in range(4):
        table.write_arrow(rows(range(i, 40, 4), "a", f"u{i}-"))
        if i == 1:
            table.create_tag("t1")
            tagged = as_model(table.to_arrow())
            tagged_index = {e.file_name for e in table.store.index_entries(table.latest_snapshot().index_manifest)}
    latest = as_model(table.to_arrow())
    before = index_files(table)
    current = {e.file_name for e in table.store.index_entries(table.latest_snapshot().index_manifest)}
    assert len(before) > len(current | tagged_index)
    result = table.expire_snapshots(retain_max=1, older_than=timedelta(0))
    assert result.deleted_index_files
    # only index files the latest snapshot or the tag uses survive
    assert index_files(table) == current | tagged_index
    assert as_model(table.to_arrow()) == latest
    assert as_model(table.to_arrow(tag="t1")) == tagged
    # nothing left for orphan removal to find (the index files of both are referenced)
    assert table.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []
    # back to the tag: the vectors of its snapshot apply again; later index files become orphans
    table.rollback_to(tag="t1")
    assert as_model(table.to_arrow()) == tagged
    orphans = table.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths
    assert {p.rsplit("/", 1)[-1] for p in orphans} >= current - tagged_index
    assert as_model(table.to_arrow()) == tagged


def test_stale_deletion_vectors_conflict_even_without_data_changes(catalog: Catalog) -> None:
    """The index check stands on its own: a message replacing a bucket's vectors that another
    commit replaced meanwhile is refused, whatever its data files say."""
    import dataclasses

    table = make(catalog, **{"write-only": "true"})
    table.write_arrow(rows(range(30), "a", "a"))
    table.compact(full=True)
    table.write_arrow(rows(range(0, 30, 3), "a", "b"))
    stale = [run_compaction_task(table.store, t) for t in plan_compaction(table.store).tasks]
    table.compact()  # replaces the vectors the stale messages planned against
    index_only = [dataclasses.replace(m, compact_before=(), compact_after=()) for m in stale if m.index_after]
    assert index_only
    with pytest.raises(CommitConflictError, match="deletion vectors of bucket"):
        table.new_committer("late").commit(index_only, check_committed=False)


def test_health_reports_deleted_rows(catalog: Catalog) -> None:
    table = make(catalog)
    table.write_arrow(rows(range(40), "a", "a"))
    assert table.health().column("deletion_vector_rows").to_pylist() == [0, 0]
    table.write_arrow(rows(range(10), "a", "b"))
    health = table.health().to_pylist()
    assert sum(r["deletion_vector_rows"] for r in health) == 10 == sum(len(v) for v in vectors(table).values())
    for r in health:
        assert r["deleted_row_ratio"] == pytest.approx(r["deletion_vector_rows"] / sum(
            f.row_count for s in table.plan() if s.bucket == r["bucket"] for f in s.files))


def test_compaction_rewrites_files_past_the_delete_ratio(catalog: Catalog) -> None:
    table = make(catalog, **{"write-only": "true", "compaction.delete-ratio-threshold": "0.3"})
    table.write_arrow(rows(range(100), "a", "a"))
    table.compact(full=True)
    table.write_arrow(rows(range(20), "a", "b"))  # 20% of the big files' rows: below the threshold
    table.compact()
    assert sum(len(v) for v in vectors(table).values()) == 20
    expected = as_model(table.to_arrow())
    heavy_before = {n for n, v in vectors(table).items()}
    table.write_arrow(rows(range(20, 45), "a", "c"))  # now 45%: the next compaction rewrites them
    table.compact()
    assert heavy_before <= {f.file_name for s in table.plan() for f in s.files}
    assert table.compact().snapshot_id is not None  # nothing else to do: the delete ratio alone
    expected.update({(k, "a"): f"c{k}" for k in range(20, 45)})
    assert as_model(table.to_arrow()) == expected
    live = {f.file_name for s in table.plan() for f in s.files}
    assert not heavy_before & live, "files past the delete ratio were not rewritten"
    assert all(r["deleted_row_ratio"] < 0.3 for r in table.health().to_pylist())


def test_a_writers_inline_compaction_losing_to_a_dedicated_one_leaves_nothing_behind(catalog: Catalog) -> None:
    """The writer's data lands (APPEND); its compaction lost the race for the bucket's vectors, so
    its outputs and its index file are removed and the table reads the winner's state plus the data."""
    table = make(catalog)
    table.write_arrow(rows(range(50), "a", "a"))
    table.write_arrow(rows(range(0, 50, 5), "a", "b"))  # vectors in both buckets
    writer = table.new_writer("w")
    writer.write_arrow(rows(range(0, 50, 2), "a", "c"))
    messages = writer.prepare_commit()
    assert any(m.index_after for m in messages)
    # meanwhile another writer's inline compaction replaces the vectors of the same buckets
    table.write_arrow(rows(range(1, 50, 10), "a", "d"))
    ids = table.new_committer("w").commit(messages, 1)
    assert len(ids) == 1  # the APPEND only
    for m in messages:
        for e in m.index_after:
            assert not os.path.exists(table.paths.index_file(e.file_name))
    assert table.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []
    table.compact()  # level 0 of the writer becomes visible
    got = as_model(table.to_arrow())
    for k in range(50):
        want = "c" if k % 2 == 0 else ("d" if k % 10 == 1 else ("b" if k % 5 == 0 else "a"))
        assert got[(k, "a")] == f"{want}{k}", k


def test_value_filters_skip_files_of_buckets_read_without_a_merge(catalog: Catalog,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """In a compacted deletion-vector bucket a file's value stats decide alone: files whose values
    cannot match are not read at all (a merge-on-read bucket could not skip them)."""
    table = make(catalog)
    table.write_arrow(rows(range(100), "a", "a"))
    table.write_arrow(rows(range(10), "a", "z"))  # its own file above level 0; v from 'z0' to 'z9'
    expected = {(k, "a"): f"z{k}" for k in range(10)}
    read: list[str] = []
    real = read_mod.read_data_file

    def counting(file_io, path, *args, **kwargs):
        read.append(path)
        return real(file_io, path, *args, **kwargs)

    monkeypatch.setattr(read_mod, "read_data_file", counting)
    assert as_model(table.to_arrow(filter=[("v", ">=", "z")])) == expected
    files = sum(len(s.files) for s in table.plan())
    assert 0 < len(read) < files
    read.clear()
    assert len(as_model(table.to_arrow())) == 100 and len(read) == files


def test_aborting_a_writers_messages_removes_its_index_files(catalog: Catalog) -> None:
    table = make(catalog)
    table.write_arrow(rows(range(30), "a", "a"))
    table.write_arrow(rows(range(5), "a", "b"))
    before = index_files(table)
    writer = table.new_writer("w")
    writer.write_arrow(rows(range(10), "a", "c"))
    messages = writer.prepare_commit()
    assert any(m.index_after for m in messages)
    writer.abort(messages)
    assert index_files(table) == before
    assert table.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []


def test_a_writer_looks_up_the_keys_it_wrote_without_reading_its_files_back(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each commit's level 0 goes up and its keys are looked up in the files above: the writer
    # hands the keys of the level-0 files it writes to the lookup, so neither the files it
    # relabels nor, later, the files above them (its own earlier level 0) are read back. (Rounds
    # much smaller than the load: universal compaction moves each level 0 up alone, no merge
    # writes files of its own.)
    table = make(catalog)
    misses: list[str] = []  # lookups that had to read a file's keys
    real_get = dv_key_lookup._KEY_CACHE.get

    def get(key):
        got = real_get(key)
        if got is None and key[3] == "keys":  # a search index missing is built from the keys
            misses.append(key[0])
        return got

    monkeypatch.setattr(dv_key_lookup._KEY_CACHE, "get", get)
    model: dict[tuple[int, str], str] = {}
    rng = random.Random(3)
    for round_ in range(4):
        keys = sorted(rng.sample(range(2000), 2000 if round_ == 0 else 40))
        table.write_arrow(rows(keys, "a", f"r{round_}-"))
        model.update({(k, "a"): f"r{round_}-{k}" for k in keys})
    assert misses == []
    assert max(len(s.files) for s in table.plan()) > 2, "no bucket holds several levels: the test proves less"
    assert vectors(table), "no deletion vectors were written: the test proves nothing"
    assert as_model(table.to_arrow()) == model
    # a fresh process's compaction reads the files and finds the same rows superseded
    table.compact(full=True)
    assert as_model(table.to_arrow()) == model


def test_keys_of_rolled_level0_files_mark_the_right_rows(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    # A small target-file-size rolls each commit's level 0 into several files: the keys the
    # writer hands on are cut file by file, and every vector built from them hides exactly the
    # replaced rows (a read without merge shows the model).
    table = make(catalog, **{"target-file-size": "2 kb"})
    handed: list[int] = []  # files per hand-over

    def remember(store, partition, bucket, files, data):
        handed.append(len(files))
        dv_key_lookup.remember_written_keys(store, partition, bucket, files, data)

    monkeypatch.setattr(level0_mod, "remember_written_keys", remember)
    model: dict[tuple[int, str], str] = {}
    rng = random.Random(5)
    for round_ in range(6):
        keys = sorted(rng.sample(range(6000), 6000 if round_ == 0 else 2500))
        table.write_arrow(rows(keys, "a", f"r{round_}-"))
        model.update({(k, "a"): f"r{round_}-{k}" for k in keys})
        with monkeypatch.context() as m:
            no_merge(m)
            assert as_model(table.to_arrow()) == model
    assert vectors(table), "no deletion vectors were written: the test proves nothing"
    assert max(handed) > 1, "no level 0 was rolled into several files: the test proves nothing"


def test_keys_at_the_edges_of_each_top_level_file_are_marked(catalog: Catalog, monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    # The lookup searches each file of a sorted run only for the unit's keys inside its key range:
    # a key equal to a file's first or last key, or between two files, must be found or skipped
    # exactly (a vector marks precisely the replaced rows; the read without merge shows the model).
    table = make(catalog, **{"target-file-size": "4 kb", "bucket": "1"})
    table.write_arrow(rows(range(0, 6000, 2), "a", "r0-"))
    table.compact(full=True)
    top = [e.file for e in table.store.file_store_scan().live_entries(table.latest_snapshot())]
    assert len(top) > 2, "the top level is one file: the test proves nothing"
    types = table.store.schema.types(["k"])
    edges = sorted({deserialize_row(b, types)[0] for f in top for b in (f.min_key, f.max_key)}
                   | {1, 5999, 6001})  # odd keys fall between rows and files: new rows only
    table.write_arrow(rows(edges, "a", "r1-"))
    model = {(k, "a"): f"r0-{k}" for k in range(0, 6000, 2)} | {(k, "a"): f"r1-{k}" for k in edges}
    with monkeypatch.context() as m:
        no_merge(m)
        assert as_model(table.to_arrow()) == model
    marked = sum(len(v) for v in vectors(table).values())
    assert marked == len([k for k in edges if k % 2 == 0 and k < 6000])
