"""The `FileIO` contract as tests: one abstract class that every backend's test class subclasses.

A subclass provides the ``store`` fixture: ``(file_io, root)`` with ``root`` an empty directory
of that backend that no other test uses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_assets.io import FileIO

Store = tuple[FileIO, str]


def race(n: int, work: Callable[[int], object]) -> list[object]:
    """Run ``work(0..n-1)`` on ``n`` threads released at once; their results in index order."""
    results: list[object] = [None] * n
    errors: list[BaseException] = []
    barrier = threading.Barrier(n)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    return results


class FileIOContract:
    """Every backend passes these; backend-specific behaviour lives in the subclasses."""

    race_rounds = 5

    @pytest.fixture
    def store(self) -> Store:
        raise NotImplementedError

    # ------------------------------------------------------------------ reads
    def test_written_bytes_read_back(self, store: Store) -> None:
        fio, root = store
        fio.write_bytes(f"{root}/a/b/file.bin", b"\x00\x01payload")  # parents are implicit
        assert fio.read_bytes(f"{root}/a/b/file.bin") == b"\x00\x01payload"
        fio.write_bytes(f"{root}/t.txt", "grüße".encode())
        assert fio.read_text(f"{root}/t.txt") == "grüße"
        assert fio.size(f"{root}/a/b/file.bin") == 9

    def test_a_missing_file_is_file_not_found(self, store: Store) -> None:
        fio, root = store
        for call in (fio.read_bytes, fio.read_text, fio.size, fio.open_input):
            with pytest.raises(FileNotFoundError):
                call(f"{root}/nope")

    def test_exists_sees_files_and_directories(self, store: Store) -> None:
        fio, root = store
        fio.write_bytes(f"{root}/d/f", b"x")
        assert fio.exists(f"{root}/d/f") and fio.exists(f"{root}/d")
        assert not fio.exists(f"{root}/d/g") and not fio.exists(f"{root}/e")
        assert not fio.exists(f"{root}/d/f.tmp")  # a name extending an existing one is not it

    def test_is_file_sees_files_only(self, store: Store) -> None:
        fio, root = store
        fio.write_bytes(f"{root}/d/f", b"x")
        assert fio.is_file(f"{root}/d/f")
        assert not fio.is_file(f"{root}/d") and not fio.is_file(f"{root}/d/g") and not fio.is_file(f"{root}/e")

    def test_list_status_lists_direct_children_only(self, store: Store) -> None:
        fio, root = store
        fio.write_bytes(f"{root}/d/one", b"1")
        fio.write_bytes(f"{root}/d/two", b"22")
        fio.write_bytes(f"{root}/d/sub/deep", b"333")
        by_name = {s.path.rsplit("/", 1)[-1]: s for s in fio.list_status(f"{root}/d")}
        assert sorted(by_name) == ["one", "sub", "two"]
        assert (by_name["one"].size, by_name["two"].size) == (1, 2)
        assert not by_name["one"].is_dir and by_name["sub"].is_dir
        assert by_name["one"].path == f"{root}/d/one"  # paths as the FileIO spells them
        assert by_name["one"].modified_ms is not None and by_name["one"].modified_ms > 1_600_000_000_000
        assert sorted(fio.list_names(f"{root}/d")) == ["one", "sub", "two"]
        assert fio.list_status(f"{root}/d/")  # a trailing slash names the same directory

    def test_an_absent_directory_lists_as_empty(self, store: Store) -> None:
        fio, root = store
        assert fio.list_status(f"{root}/absent") == []
        assert fio.list_names(f"{root}/absent") == []
        assert fio.walk_files(f"{root}/absent") == []

    def test_walk_files_finds_every_file_below(self, store: Store) -> None:
        fio, root = store
        files = [f"{root}/w/a", f"{root}/w/x/b", f"{root}/w/x/y/c", f"{root}/w/z/d"]
        for p in files:
            fio.write_bytes(p, b"data")
        fio.write_bytes(f"{root}/outside", b"x")
        walked = fio.walk_files(f"{root}/w")
        assert sorted(s.path for s in walked) == sorted(files)
        assert all(s.size == 4 and not s.is_dir for s in walked)

    @pytest.mark.parametrize("count", [3, 12])  # looked up one by one / through a listing
    def test_missing_reports_exactly_the_absent_files(self, store: Store, count: int) -> None:
        fio, root = store
        present = [f"{root}/m/data-{i}" for i in range(count)]
        for p in present:
            fio.write_bytes(p, b"x")
        fio.write_bytes(f"{root}/m/data-1.tmp", b"x")  # a neighbour extending a checked name
        gone = [present[1], present[-1]]
        fio.delete_many(gone)
        absent_dir = f"{root}/never/data-0"
        asked = [*present, absent_dir, present[1]]  # duplicates are reported once
        assert fio.missing(asked) == [*gone, absent_dir]
        assert fio.missing([]) == []

    # ----------------------------------------------------------------- writes
    def test_overwrite_atomic_replaces_or_creates(self, store: Store) -> None:
        fio, root = store
        fio.overwrite_atomic(f"{root}/hint/LATEST", b"1")
        assert fio.read_bytes(f"{root}/hint/LATEST") == b"1"
        fio.overwrite_atomic(f"{root}/hint/LATEST", b"22")
        assert fio.read_bytes(f"{root}/hint/LATEST") == b"22"
        assert fio.list_names(f"{root}/hint") == ["LATEST"]  # no temporary file left behind

    def test_try_create_creates_once(self, store: Store) -> None:
        fio, root = store
        path = f"{root}/snapshot/snapshot-1"
        assert fio.try_create(path, b"first") is True
        assert fio.read_bytes(path) == b"first"
        assert fio.try_create(path, b"second") is False
        assert fio.read_bytes(path) == b"first"  # never replaced
        assert fio.list_names(f"{root}/snapshot") == ["snapshot-1"]

    def test_a_prepared_create_is_a_try_create_made_later(self, store: Store) -> None:
        fio, root = store
        path = f"{root}/snapshot/snapshot-1"
        first = fio.prepare_create(path, b"first")
        assert not fio.exists(path)  # nothing under the name before the put
        assert first.create() is True
        assert fio.read_bytes(path) == b"first"
        lost = fio.prepare_create(path, b"second")
        assert lost.create() is False  # a lost race, as try_create's
        assert fio.read_bytes(path) == b"first"
        dropped = fio.prepare_create(f"{root}/snapshot/snapshot-2", b"never")
        dropped.discard()
        dropped.discard()  # idempotent
        # nothing of the lost or the dropped put is left (no temporary file either)
        assert fio.list_names(f"{root}/snapshot") == ["snapshot-1"]
        with pytest.raises(RuntimeError, match="made once"):
            first.create()

    def test_concurrent_prepared_creates_have_exactly_one_winner(self, store: Store) -> None:
        fio, root = store
        path = f"{root}/snapshot/snapshot-1"
        prepared = [fio.prepare_create(path, f"writer-{i}".encode()) for i in range(8)]
        results = race(8, lambda i: prepared[i].create())
        assert results.count(True) == 1, results
        assert fio.read_bytes(path) == f"writer-{results.index(True)}".encode()
        assert fio.list_names(f"{root}/snapshot") == ["snapshot-1"]

    def test_concurrent_try_create_has_exactly_one_winner(self, store: Store) -> None:
        fio, root = store
        for r in range(self.race_rounds):
            path = f"{root}/snapshot/snapshot-{r}"
            results = race(8, lambda i, path=path: fio.try_create(path, f"writer-{i}".encode()))
            assert results.count(True) == 1, results
            assert results.count(False) == 7
            assert fio.read_bytes(path) == f"writer-{results.index(True)}".encode()

    def test_concurrent_try_create_of_distinct_paths_all_win(self, store: Store) -> None:
        fio, root = store
        results = race(8, lambda i: fio.try_create(f"{root}/tag/tag-{i}", str(i).encode()))
        assert results == [True] * 8
        assert sorted(fio.list_names(f"{root}/tag")) == [f"tag-{i}" for i in range(8)]

    def test_mkdirs_then_write_below(self, store: Store) -> None:
        fio, root = store
        fio.mkdirs(f"{root}/x/y")
        fio.mkdirs(f"{root}/x/y")  # idempotent
        fio.write_bytes(f"{root}/x/y/f", b"1")
        assert fio.list_names(f"{root}/x") == ["y"]
        if fio.keeps_empty_directories:
            fio.mkdirs(f"{root}/empty")
            assert fio.exists(f"{root}/empty")
            assert any(s.is_dir for s in fio.list_status(root) if s.path.endswith("/empty"))

    def test_rename_moves_and_replaces(self, store: Store) -> None:
        fio, root = store
        fio.write_bytes(f"{root}/r/src", b"new")
        fio.write_bytes(f"{root}/r/dst", b"old")
        fio.rename(f"{root}/r/src", f"{root}/r/dst")
        assert fio.read_bytes(f"{root}/r/dst") == b"new"
        assert not fio.exists(f"{root}/r/src")
        with pytest.raises(FileNotFoundError):
            fio.rename(f"{root}/r/src", f"{root}/r/other")
        assert not fio.exists(f"{root}/r/other")

    def test_parquet_through_open_output_and_open_input(self, store: Store) -> None:
        fio, root = store
        table = pa.table({"k": list(range(1000)), "v": [f"v{i}" for i in range(1000)]})
        path = f"{root}/bucket-0/data-1.parquet"
        sink = fio.open_output(path)  # creates the bucket directory
        writer = pq.ParquetWriter(sink, table.schema)
        writer.write_table(table.slice(0, 500))
        writer.write_table(table.slice(500))
        writer.close()
        if fio.publishes_on_close:
            assert not fio.exists(path)  # nothing visible before the stream is closed
        sink.close()
        assert fio.size(path) > 0
        with fio.open_input(path) as source:
            pf = pq.ParquetFile(source)
            assert pf.num_row_groups == 2
            assert pf.read(columns=["v"]).column("v").to_pylist() == table.column("v").to_pylist()
        assert pq.read_table(path, filesystem=fio.arrow_fs).equals(table)  # the same path in arrow_fs

    def test_uri_names_the_same_file_for_another_client(self, store: Store) -> None:
        fio, root = store
        fio.write_bytes(f"{root}/u/f", b"abc")
        uri = fio.uri(f"{root}/u/f")
        assert uri.endswith(f"{root}/u/f")
        opened, path = FileIO.for_url(uri, **self.storage_options())
        assert type(opened) is type(fio) and opened.read_bytes(path) == b"abc"

    def storage_options(self) -> dict:
        return {}

    # ---------------------------------------------------------------- deletes
    def test_delete_is_idempotent(self, store: Store) -> None:
        fio, root = store
        fio.write_bytes(f"{root}/del/f", b"x")
        assert fio.delete(f"{root}/del/f") is True
        assert fio.delete(f"{root}/del/f") is False
        assert not fio.exists(f"{root}/del/f")

    def test_discard_removes_a_file_and_passes_over_a_missing_one(self, store: Store) -> None:
        fio, root = store
        fio.write_bytes(f"{root}/f", b"x")
        fio.write_bytes(f"{root}/g", b"y")
        fio.discard(f"{root}/f")
        fio.discard(f"{root}/missing")
        assert not fio.exists(f"{root}/f") and fio.read_bytes(f"{root}/g") == b"y"

    def test_delete_many_removes_exactly_the_given_files(self, store: Store) -> None:
        fio, root = store
        files = [f"{root}/dm/f{i}" for i in range(25)]
        for p in files:
            fio.write_bytes(p, b"x")
        assert fio.delete_many([]) == 0
        fio.delete_many([*files[:20], f"{root}/dm/never-there"])  # a missing file is fine
        assert sorted(fio.list_names(f"{root}/dm")) == sorted(p.rsplit("/", 1)[-1] for p in files[20:])

    def test_delete_dir_if_empty_keeps_a_directory_with_files(self, store: Store) -> None:
        fio, root = store
        fio.write_bytes(f"{root}/dd/f", b"x")
        assert fio.delete_dir_if_empty(f"{root}/dd") is False
        assert fio.read_bytes(f"{root}/dd/f") == b"x"
        if fio.keeps_empty_directories:
            fio.mkdirs(f"{root}/empty")
            assert fio.delete_dir_if_empty(f"{root}/empty") is True
            assert not fio.exists(f"{root}/empty")

    def test_delete_tree_removes_everything_below_and_nothing_else(self, store: Store) -> None:
        fio, root = store
        for p in (f"{root}/tree/a", f"{root}/tree/b/c", f"{root}/tree-sibling/d"):
            fio.write_bytes(p, b"x")
        fio.delete_tree(f"{root}/tree")
        assert not fio.exists(f"{root}/tree/a") and not fio.exists(f"{root}/tree/b/c")
        assert fio.walk_files(f"{root}/tree") == []
        assert fio.read_bytes(f"{root}/tree-sibling/d") == b"x"
        fio.delete_tree(f"{root}/tree")  # absent: a no-op
