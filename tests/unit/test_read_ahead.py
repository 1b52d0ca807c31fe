"""The pooled whole-table read (`ops.read_ahead`): files of buckets read without a merge are tasks
of their own, started largest first, and the rows come out exactly as a serial read gives them."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CorruptMetadataError
from lake_assets.ops.read import SplitReader
from lake_assets.ops.read_ahead import read_splits_ahead, read_tasks
from lake_assets.parallelism import usable_cpus
from lake_assets.predicate import Predicate

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.string()), ("n", pa.float64())])


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat


def rows(keys: range, p: str, tag: str) -> pa.Table:
    ks = list(keys)
    return pa.table({"k": ks, "p": [p] * len(ks), "v": [f"{tag}-{k % 7}" for k in ks],
                     "n": [k * 0.5 for k in ks]}, schema=SCHEMA)


def dv_table(catalog: Catalog, **options: str):
    """Two partitions of two buckets, compacted into files on several levels, some of them with
    deletion vectors, some without."""
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                                 options={"bucket": "2", "deletion-vectors.enabled": "true", **options})
    for p in ("a", "b"):
        table.write_arrow(rows(range(0, 400), p, "r0"))
    table.write_arrow(rows(range(0, 400, 9), "a", "r1"))   # vectors on the files below
    table.write_arrow(rows(range(500, 600), "b", "r2"))    # new keys only: no vectors
    table.write_arrow(rows(range(3, 400, 11), "b", "r3"))
    return table


def serial(table, columns=None, filter=None) -> pa.Table:
    """What a serial read of every split in plan order gives."""
    reader = SplitReader(table.store, table.schema, columns, Predicate.of(filter))
    parts = [part for split in table.plan(filter=filter) for part in reader.read_split(split)]
    return pa.concat_tables(parts)


def file_counts(table) -> tuple[int, int]:
    """(files with a deletion vector, files without) among the files a read sees."""
    with_dv = without = 0
    for split in table.plan():
        reader = SplitReader(table.store, table.schema)
        for meta in reader.raw_files(split) or ():
            if reader.kept_rows(split, meta) is None:
                without += 1
            else:
                with_dv += 1
    return with_dv, without


@pytest.mark.parametrize(("columns", "filter"), [
    (None, None),
    (["v", "k"], None),
    (["n"], None),
    (None, [("k", ">=", 100), ("k", "<", 300)]),
    (["k", "v"], [("v", "=", "r1-3")]),
    (["p", "n"], [("p", "=", "b")]),
])
def test_pooled_read_equals_the_serial_read_row_for_row(catalog: Catalog, columns, filter) -> None:
    table = dv_table(catalog)
    with_dv, without = file_counts(table)
    assert with_dv and without  # files with and without deleted rows
    got = table.to_arrow(columns=columns, filter=filter)
    assert got.equals(serial(table, columns, filter))  # same rows, same order, same schema
    if columns is None and filter is None:
        expect = {(k, p) for p in ("a", "b") for k in range(400)} | {(k, "b") for k in range(500, 600)}
        assert sorted(zip(got.column("k").to_pylist(), got.column("p").to_pylist(), strict=True)) == sorted(expect)
        v = dict(zip(zip(got.column("k").to_pylist(), got.column("p").to_pylist(), strict=True),
                     got.column("v").to_pylist(), strict=True))
        assert v[(9, "a")] == "r1-2" and v[(10, "a")] == "r0-3" and v[(14, "b")] == "r3-0"


def test_files_of_buckets_read_without_a_merge_are_tasks_of_their_own(catalog: Catalog) -> None:
    table = dv_table(catalog)
    reader = SplitReader(table.store, table.schema)
    splits = table.plan()
    tasks = read_tasks(reader, splits)
    assert all(t.file is not None for t in tasks)
    assert [(t.split.bucket, t.file) for t in tasks] == [
        (s.bucket, f) for s in splits for f in reader.raw_files(s) or ()]
    assert len(tasks) > len(splits)
    assert [t.size for t in tasks] == [t.file.file_size for t in tasks if t.file is not None]


def test_a_bucket_that_needs_a_merge_is_one_task(catalog: Catalog) -> None:
    table = catalog.create_table("db.m", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                                 options={"bucket": "2", "write-only": "true"})
    for i, p in enumerate(("a", "b", "a")):
        table.write_arrow(rows(range(i * 30, 200), p, f"w{i}"))
    reader = SplitReader(table.store, table.schema)
    splits = table.plan()
    tasks = read_tasks(reader, splits)
    assert [(t.split, t.file, t.size) for t in tasks] == [(s, None, s.size_bytes) for s in splits]
    got = table.to_arrow()
    assert got.equals(serial(table))
    latest = {(k, p): v for k, p, v in zip(*(got.column(c).to_pylist() for c in ("k", "p", "v")), strict=True)}
    assert latest[(70, "a")] == "w2-0" and latest[(10, "a")] == "w0-3" and latest[(70, "b")] == "w1-0"


def test_append_table_files_read_in_the_serial_order(catalog: Catalog) -> None:
    table = catalog.create_table("db.log", SCHEMA, options={"bucket": "-1"})
    for i in range(5):
        table.write_arrow(rows(range(i * 100, i * 100 + 60 + 40 * i), "a", f"w{i}"))
    reader = SplitReader(table.store, table.schema)
    assert len(read_tasks(reader, table.plan())) == 5
    got = table.to_arrow()
    assert got.equals(serial(table))
    assert got.column("v").to_pylist()[:2] == ["w0-0", "w0-1"]


class Recorder:
    """Wraps `SplitReader.read_raw_file` (which still reads): the order tasks start in, and
    whether each asked pyarrow for its inner threads."""

    def __init__(self, reader: SplitReader) -> None:
        self.started: list[str] = []
        self.threads: dict[str, bool | None] = {}
        self.finished = 0
        self.lock = threading.Lock()
        self.real = reader.read_raw_file
        reader.read_raw_file = self.read  # type: ignore[method-assign]

    def read(self, split, meta, *, use_threads=None):
        with self.lock:
            self.started.append(meta.file_name)
            self.threads[meta.file_name] = use_threads
        try:
            return self.real(split, meta, use_threads=use_threads)
        finally:
            with self.lock:
                self.finished += 1


def test_tasks_start_largest_first_and_yield_in_plan_order(catalog: Catalog) -> None:
    table = dv_table(catalog)
    reader = SplitReader(table.store, table.schema)
    splits = table.plan()
    recorder = Recorder(reader)
    got = pa.concat_tables(list(read_splits_ahead(reader, splits)))
    assert got.equals(serial(table))
    tasks = read_tasks(reader, splits)
    sizes = {t.file.file_name: t.file.file_size for t in tasks if t.file is not None}
    started = [sizes[name] for name in recorder.started]
    # submitted largest first: two workers take them in that order, give or take a swap of neighbours
    assert len(started) == len(tasks)
    assert max(started[:2]) == max(sizes.values())
    assert min(started[-2:]) == min(sizes.values())


def test_pyarrow_threads_only_for_files_that_are_a_large_share_of_the_read(catalog: Catalog) -> None:
    table = dv_table(catalog)
    reader = SplitReader(table.store, table.schema)
    splits = table.plan()
    tasks = read_tasks(reader, splits)
    workers = min(len(tasks), max(2, usable_cpus()))
    large = sum(t.size for t in tasks) / (2 * workers)
    recorder = Recorder(reader)
    got = pa.concat_tables(list(read_splits_ahead(reader, splits)))
    assert got.equals(serial(table))
    sizes = {t.file.file_name: t.file.file_size for t in tasks if t.file is not None}
    assert recorder.threads == {name: size > large for name, size in sizes.items()}
    reader.file_threads = False  # the reader's own setting still wins
    recorder.threads.clear()
    list(read_splits_ahead(reader, splits))
    assert set(recorder.threads.values()) == {False}


def test_a_file_that_is_most_of_the_read_keeps_pyarrow_threads(catalog: Catalog) -> None:
    table = catalog.create_table("db.big", SCHEMA, primary_keys=["k", "p"],
                                 options={"bucket": "1", "deletion-vectors.enabled": "true"})
    table.write_arrow(rows(range(20_000), "a", "x"))
    table.write_arrow(rows(range(20_000, 20_010), "a", "y"))
    reader = SplitReader(table.store, table.schema)
    splits = table.plan()
    tasks = read_tasks(reader, splits)
    assert len(tasks) == 2
    recorder = Recorder(reader)
    assert pa.concat_tables(list(read_splits_ahead(reader, splits))).equals(serial(table))
    biggest = max(tasks, key=lambda t: t.size).file
    assert biggest is not None
    assert recorder.threads == {t.file.file_name: t.file is biggest for t in tasks if t.file is not None}


def test_remote_storage_keeps_pyarrow_threads_for_every_file(catalog: Catalog) -> None:
    table = dv_table(catalog)
    table.store.file_io.parallel_reads_pay_off = True  # as S3: a round trip per request
    reader = SplitReader(table.store, table.schema)
    recorder = Recorder(reader)
    got = pa.concat_tables(list(read_splits_ahead(reader, table.plan())))
    assert got.equals(serial(table))
    assert len(recorder.threads) > 2 and set(recorder.threads.values()) == {True}


def test_a_read_of_one_file_keeps_the_readers_setting(catalog: Catalog) -> None:
    table = catalog.create_table("db.one", SCHEMA, primary_keys=["k", "p"],
                                 options={"bucket": "1", "deletion-vectors.enabled": "true"})
    table.write_arrow(rows(range(100), "a", "x"))
    reader = SplitReader(table.store, table.schema)
    splits = table.plan()
    assert len(read_tasks(reader, splits)) == 1
    recorder = Recorder(reader)
    got = pa.concat_tables(list(read_splits_ahead(reader, splits)))
    assert got.num_rows == 100 and list(recorder.threads.values()) == [None]  # file_threads: on


def test_a_missing_file_fails_the_read_with_its_error(catalog: Catalog) -> None:
    table = dv_table(catalog)
    split = table.plan()[-1]
    meta = SplitReader(table.store, table.schema).raw_files(split)[-1]
    os.remove(table.store.data_file_path(split.partition, split.bucket, meta))
    with pytest.raises(CorruptMetadataError, match=f"{meta.file_name} is missing"):
        table.to_arrow()


def test_a_caller_that_stops_early_leaves_no_task_running(catalog: Catalog) -> None:
    table = dv_table(catalog)
    reader = SplitReader(table.store, table.schema)
    recorder = Recorder(reader)
    gen = read_splits_ahead(reader, table.plan())
    first = next(gen)
    gen.close()  # cancels what has not started and waits for what has
    with recorder.lock:
        started, finished = len(recorder.started), recorder.finished
    assert first.num_rows and finished == started
    time.sleep(0.2)  # (had any task of the read been left running, it would start or end here)
    assert recorder.finished == finished == len(recorder.started)
