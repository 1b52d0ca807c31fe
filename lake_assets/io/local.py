"""`LocalFileIO`: a local (or NFS-like POSIX) disk through the os module and native Arrow files."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import posixpath
import shutil
import uuid
from collections.abc import Callable
from typing import TypeVar

import pyarrow as pa
import pyarrow.fs as pafs

from lake_assets.errors import LakeError
from lake_assets.io import table_confinement as confined
from lake_assets.io.file_io import FileIO, FileStatus, PreparedCreate
from lake_assets.io.table_confinement import Below, TableRoots

T = TypeVar("T")

# How often a write makes its directory again when it keeps vanishing. Orphan removal removes a
# directory only when empty and once per run, so each round needs another clean's rmdir landing
# exactly between our mkdir and our file; this bound only stops a runaway remover.
_DIRECTORY_ROUNDS = 64


def in_directory(path: str, create: Callable[[], T]) -> T:
    """Run ``create`` (which makes the file ``path``) and return its result; when it fails because
    ``path``'s directory is missing, make the directory and run it again.

    Orphan removal deletes emptied data directories (as Paimon's clean does): a directory seen to
    exist, or just made, may be gone by the time the file is created in it, and ``os.makedirs``
    itself fails when a parent it saw is removed before it makes the child. Once the file exists,
    the directory is not empty and no clean removes it. A failure that repeats with the directory
    present (another cause, e.g. a missing source of a rename) is raised."""
    directory = os.path.dirname(path)
    present = False
    for _ in range(_DIRECTORY_ROUNDS):
        try:
            return create()
        except FileNotFoundError:
            if os.path.isdir(directory):
                if present:
                    raise
                present = True  # perhaps another writer made it meanwhile: try once more
                continue
        present = False
        with contextlib.suppress(FileNotFoundError):  # a parent removed while making the child
            os.makedirs(directory, exist_ok=True)
    raise FileNotFoundError(errno.ENOENT, "directory kept vanishing while a file was written in it", path)


class LocalFileIO(FileIO):
    """Plain files; put-if-absent is a hard link from a fully written temporary file.

    Below a table's root (`confine_to_table`) every write, rename and delete goes through
    `table_confinement`: never through a symbolic link that leaves the table directory."""

    protocol = "file"
    has_symlinks = True
    keeps_empty_directories = True

    def __init__(self) -> None:
        self._arrow_fs = pafs.LocalFileSystem()
        self._tables = TableRoots()

    def confine_to_table(self, root: str) -> None:
        # set up here too: a subclass (a test's faulty disk) may not call __init__
        self.__dict__.setdefault("_tables", TableRoots()).add(root)

    def _below(self, path: str) -> Below | None:
        tables: TableRoots | None = self.__dict__.get("_tables")
        return None if tables is None else tables.below(path)

    # ------------------------------------------------------------------ reads
    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as fh:
            return fh.read()

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def size(self, path: str) -> int:
        return os.path.getsize(path)

    def list_status(self, path: str) -> list[FileStatus]:
        try:
            it = os.scandir(path)
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        with it:
            for e in it:
                try:
                    st = e.stat()
                except FileNotFoundError:
                    # Removed between readdir and stat (a temporary file renamed or unlinked,
                    # a tag withdrawn): skip it. Never let one vanished entry empty the whole
                    # listing - expiry would then see no tags and delete what they keep.
                    continue
                out.append(FileStatus(e.path, st.st_size, e.is_dir(), int(st.st_mtime * 1000)))
        return out

    def _list_for_walk(self, path: str) -> list[FileStatus]:
        # Symlinks are left out (see FileIO.walk_files), and never followed to stat their target.
        try:
            with os.scandir(path) as it:
                out = []
                for e in it:
                    if e.is_symlink():
                        continue
                    try:
                        st = e.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    out.append(FileStatus(e.path, st.st_size, e.is_dir(follow_symlinks=False),
                                          int(st.st_mtime * 1000)))
                return out
        except (FileNotFoundError, NotADirectoryError):
            return []

    def open_input(self, path: str) -> pa.NativeFile:
        # A native file, not a path string: a path would make pyarrow resolve a filesystem on
        # every open, which adds up over thousands of small files.
        return pa.OSFile(path, "rb")

    # ----------------------------------------------------------------- writes
    def mkdirs(self, path: str) -> None:
        below = self._below(path)
        if below is not None:
            confined.make_dirs(below)
            return
        os.makedirs(path, exist_ok=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        below = self._below(path)
        if below is not None:
            confined.act_in(below, lambda fd, name: confined.write_new(fd, name, below, data))
            return
        # the directory is made after a failed open, not before (`in_directory`): orphan removal
        # deletes empty data directories (as Paimon's does), so one seen to exist may be gone
        in_directory(path, lambda: self._write_new(path, data))

    @staticmethod
    def _write_new(path: str, data: bytes) -> None:
        # open/write/close on the descriptor: Python's buffered file adds an fstat, an isatty
        # ioctl and a seek to every file made (metadata files are written once, whole)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]  # a short write (a signal, a full pipe) goes on
        finally:
            os.close(fd)

    def overwrite_atomic(self, path: str, data: bytes) -> None:
        below = self._below(path)
        if below is not None:
            def replace(fd: int, name: str) -> None:
                tmp = _temp_name(name)
                confined.write_new(fd, tmp, below, data)
                try:
                    os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)  # a link at ``name`` is replaced
                except BaseException:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp, dir_fd=fd)
                    raise
            confined.act_in(below, replace)
            return
        tmp = self._temp_beside(path)
        in_directory(tmp, lambda: self._write_new(tmp, data))
        os.replace(tmp, path)  # the temporary file keeps the directory from being removed

    def try_create(self, path: str, data: bytes) -> bool:
        # A link is never retried, so "exists" here is a lost race, never our own earlier attempt.
        below = self._below(path)
        if below is not None:
            def create(fd: int, name: str) -> bool:
                tmp = _temp_name(name)
                try:
                    confined.write_new(fd, tmp, below, data, sync=True)
                    return self._link_new(tmp, name, data, fd)
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp, dir_fd=fd)
            return confined.act_in(below, create)
        tmp = self._temp_beside(path)
        try:
            # A failure while writing the temporary file (ENOSPC) is a proven "not created".
            in_directory(tmp, lambda: self._write_synced(tmp, data))
            return self._link_new(tmp, path, data)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def prepare_create(self, path: str, data: bytes) -> PreparedCreate:
        # The slow part of a put, the temporary file's fsync, is done now; `create` only links.
        # A FileIO whose try_create was replaced (a subclass, or an instance patched to inject
        # faults) defers to it instead: every put then still goes through that try_create.
        if type(self).try_create is not LocalFileIO.try_create or "try_create" in vars(self):
            return super().prepare_create(path, data)
        below = self._below(path)
        if below is not None:
            return self._prepare_create_below(below, data)
        tmp = self._temp_beside(path)
        try:
            in_directory(tmp, lambda: self._write_synced(tmp, data))
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

        def create() -> bool:
            try:
                return self._link_new(tmp, path, data)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)

        def discard() -> None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return PreparedCreate(create, discard)

    def _prepare_create_below(self, below: Below, data: bytes) -> PreparedCreate:
        tmp_name = _temp_name(below.name)
        tmp = dataclasses.replace(below, name=tmp_name, path=posixpath.join(posixpath.dirname(below.path), tmp_name))
        confined.act_in(below, lambda fd, _name: confined.write_synced(fd, tmp.name, below, data))

        def discard() -> None:
            # also after a landed link: a refusal here must not hide that the file was created
            with contextlib.suppress(FileNotFoundError, LakeError):
                confined.unlink(tmp)

        def create() -> bool:
            try:
                with below.directory(create=False) as fd:
                    return self._link_new(tmp.name, below.name, data, fd)
            finally:
                discard()
        return PreparedCreate(create, discard)

    def _link_new(self, tmp: str, path: str, data: bytes, dir_fd: int | None = None) -> bool:
        """Link the written temporary file ``tmp`` as ``path`` if absent (try_create's last step);
        with ``dir_fd`` both are names in that directory."""
        try:
            os.link(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)  # link(2) never replaces a name
        except FileExistsError:
            return False
        except OSError as exc:
            if exc.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                if dir_fd is not None:
                    return confined.create_exclusive(dir_fd, path, data)
                return self._create_exclusive(path, data)
            raise  # link(2) is atomic: it failed, so nothing was created
        return True

    @staticmethod
    def _write_synced(path: str, data: bytes) -> None:
        with open(path, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())

    @staticmethod
    def _create_exclusive(path: str, data: bytes) -> bool:
        # Filesystems without hard links: O_EXCL create is atomic, but a crash mid-write could leave
        # a torn file; readers treat an unparsable newest snapshot as corrupt, which the caller tests.
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return True

    @staticmethod
    def _temp_beside(path: str) -> str:
        # its directory is made when the file is created (`in_directory`)
        return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")

    def open_output(self, path: str) -> pa.NativeFile:
        # A native Arrow file, never a Python file object: the Parquet writer then reports a
        # failed write (ENOSPC) as a plain Arrow status, without carrying a Python exception
        # object through C++ on a worker thread (that path crashed the interpreter when the
        # disk filled during the parallel level-0 flush). The directory exists for all but a
        # bucket's first file: try the open first rather than pay a makedirs per file.
        below = self._below(path)
        if below is not None:
            return confined.open_output(below)
        return in_directory(path, lambda: pa.OSFile(path, "wb"))

    def rename(self, src: str, dst: str) -> None:
        # a missing source is raised as it is; a missing destination directory is made
        below = self._below(dst)
        if below is not None:
            confined.rename(src, self._below(src), below)
            return
        in_directory(dst, lambda: os.replace(src, dst))

    # ---------------------------------------------------------------- deletes
    def delete(self, path: str) -> bool:
        below = self._below(path)
        if below is not None:
            return confined.unlink(below)
        try:
            os.unlink(path)
            return True
        except FileNotFoundError:
            return False

    def delete_dir_if_empty(self, path: str) -> bool:
        below = self._below(path)
        if below is not None:
            return confined.rmdir(below)
        try:
            os.rmdir(path)
            return True
        except OSError:
            return False

    def delete_tree(self, path: str) -> None:
        below = self._below(path)
        if below is not None:
            confined.remove_tree(below)
            return
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)

    # ------------------------------------------------------------ pyarrow view
    @property
    def arrow_fs(self) -> pafs.FileSystem:
        return self._arrow_fs

    def uri(self, path: str) -> str:
        return path


def _temp_name(name: str) -> str:
    """A temporary file's name beside ``name`` (as `LocalFileIO._temp_beside`)."""
    return f".{name}.{uuid.uuid4().hex}.tmp"
