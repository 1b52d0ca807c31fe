"""A writer never fails or loses a file because orphan removal removed its directory.

Orphan removal (as Paimon's ``LocalOrphanFilesClean``) removes the bucket directories it emptied
and then their partition directories, each only when empty (``rmdir``). On a local disk a writer
that finds a directory missing makes it and writes; the clean can remove what it just made (or
its parent) between the two. Forced here with two threads and events at the worst moment: the
clean has removed the bucket directory, the writer's ``makedirs`` has seen the partition
directory and is about to make the bucket directory in it, and the clean removes the partition
directory right then. Every write of `LocalFileIO` must still land its file.

On object stores there is no such window: a directory is no object (a PUT needs none), and
``delete_dir_if_empty`` of a key prefix deletes at most an empty directory marker, which no write
needs (tests/unit/io/test_s3_directories.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from lake_assets.io.local import LocalFileIO
from lake_assets.ops.orphans import OrphanResult, remove_empty_directories

Write = Callable[[LocalFileIO, str], None]


def _open_output(fio: LocalFileIO, path: str) -> None:
    out = fio.open_output(path)
    out.write(b"data")
    out.close()


def _rename(fio: LocalFileIO, path: str) -> None:
    staged = Path(path).parents[2] / "staged.parquet"
    staged.write_bytes(b"data")
    fio.rename(str(staged), path)


WRITES: dict[str, Write] = {
    "write_bytes": lambda fio, p: fio.write_bytes(p, b"data"),
    "open_output": _open_output,
    "overwrite_atomic": lambda fio, p: fio.overwrite_atomic(p, b"data"),
    "try_create": lambda fio, p: None if fio.try_create(p, b"data") else pytest.fail("not created"),
    "rename": _rename,
}


class _Store:
    """What `remove_empty_directories` reads of a store: a root, its file io, its partition keys."""

    def __init__(self, root: str, fio: LocalFileIO) -> None:
        from types import SimpleNamespace

        from lake_assets.paths import TablePaths

        self.paths = TablePaths(root)
        self.file_io = fio
        self.schema = SimpleNamespace(partition_keys=["dt"])


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_lands_when_the_clean_removes_its_directories_meanwhile(tmp_path: Path, write: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "t"
    partition = root / "dt=b"
    bucket = partition / "bucket-0"
    bucket.mkdir(parents=True)  # a crashed writer's directories: the clean deleted its file
    target = bucket / "data-new-0.parquet"
    clean_io = LocalFileIO()
    bucket_gone, in_mkdir, partition_gone = threading.Event(), threading.Event(), threading.Event()
    real_remove = clean_io.delete_dir_if_empty

    def clean_remove(path: str) -> bool:  # the clean's rmdir, paced by the writer
        if path == str(partition):
            assert in_mkdir.wait(30)
        removed = real_remove(path)
        (bucket_gone if path == str(bucket) else partition_gone).set()
        return removed

    clean_io.delete_dir_if_empty = clean_remove  # type: ignore[method-assign]
    writer = threading.current_thread()
    real_mkdir = os.mkdir

    def writer_mkdir(path, mode=0o777, *args, **kwargs):  # type: ignore[no-untyped-def]
        # the writer's makedirs has seen the partition directory; the clean removes it now
        if threading.current_thread() is writer and os.fspath(path) == str(bucket) and not in_mkdir.is_set():
            in_mkdir.set()
            assert partition_gone.wait(30)
        return real_mkdir(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", writer_mkdir)
    found = OrphanResult(dry_run=False, bucket_dirs=[str(bucket)])
    clean = threading.Thread(target=remove_empty_directories, args=(_Store(str(root), clean_io), found))
    clean.start()
    assert bucket_gone.wait(30)
    try:
        WRITES[write](LocalFileIO(), str(target))
    finally:
        in_mkdir.set()
        clean.join(30)
    assert partition_gone.is_set()  # the clean did remove the partition directory under the writer
    assert target.read_bytes() == b"data"


def test_writers_making_one_directory_at_once_all_land(tmp_path: Path) -> None:
    """Two writers find a directory missing; the other one makes it between this one's failed
    open and its check: the write is tried again, not failed (a directory present after a
    failure is not proof of another cause)."""
    fio = LocalFileIO()
    target = tmp_path / "index" / "index-a-0"
    real_write = LocalFileIO._write_new
    calls: list[str] = []

    def first_fails_then_the_other_writer_makes_the_directory(path: str, data: bytes) -> None:
        calls.append(path)
        try:
            real_write(path, data)
        except FileNotFoundError:
            (tmp_path / "index").mkdir()  # the other writer's makedirs lands right now
            raise

    fio._write_new = first_fails_then_the_other_writer_makes_the_directory  # type: ignore[method-assign]
    fio.write_bytes(str(target), b"data")
    assert target.read_bytes() == b"data" and len(calls) == 2
    # a failure that repeats with the directory there is another cause: raised
    with pytest.raises(FileNotFoundError):
        fio.rename(str(tmp_path / "missing"), str(tmp_path / "index" / "x"))
