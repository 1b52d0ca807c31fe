"""Writes, renames and deletes of a local table's files, never through a symbolic link out of the
table directory (`LocalFileIO` for every table opened through it).

A table's root is registered once (`TableRoots.add`, from `FileIO.confine_to_table`); a path
below a registered root is then reached through `nofollow_dirs.open_below`: its directories are
opened one at a time from the root's descriptor, a link among them followed only when it
resolves inside the root, and the file itself is created, linked, renamed or removed relative to
the last directory's descriptor, never following a link at its own name either. A link that
leaves the table raises `UnsafePathError` naming the path, before anything is made behind it.

The root itself may be reached through links (a table living elsewhere, linked at its root): it
is resolved once, when registered. Paths under no registered root (a warehouse's database
directories) are written as plain paths.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import pyarrow as pa

from lake_assets.errors import UnsafePathError
from lake_assets.io.nofollow_dirs import open_below, rename_below

T = TypeVar("T")

# How often an act makes its directory again when it keeps vanishing (as `local.in_directory`).
_DIRECTORY_ROUNDS = 64
NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
# Linux names an open file by its descriptor here: a native Arrow stream (which opens by name) is
# then opened on the very file created relative to its directory's descriptor.
_FD_NAMES = "/proc/self/fd"
_HAS_FD_NAMES = os.path.isdir(_FD_NAMES)


@dataclass(frozen=True)
class Below:
    """A path below a registered table root: the root (as registered, and resolved), the
    directories between them and the path's last component."""

    path: str
    root: str
    real_root: str
    dirs: tuple[str, ...]
    name: str

    def directory(self, *, create: bool) -> contextlib.AbstractContextManager[int]:
        """The descriptor of the path's directory (made with ``create``), as `open_below` opens it."""
        return open_below(self.root, self.dirs, create=create, what=self.path, real_root=self.real_root)


class TableRoots:
    """The table roots registered with one `LocalFileIO` (lexical path -> resolved path)."""

    def __init__(self) -> None:
        self._roots: dict[str, str] = {}

    def add(self, root: str) -> None:
        key = posixpath.normpath(root)
        if key not in self._roots and key != "/":
            self._roots[key] = os.path.realpath(key)

    def below(self, path: str) -> Below | None:
        """``path`` as below the nearest registered root enclosing it, else None (a root itself
        included: it is no path below one)."""
        if not self._roots:
            return None
        norm = posixpath.normpath(path)
        directory, name = posixpath.split(norm)
        dirs: list[str] = []
        while directory not in self._roots:
            parent, last = posixpath.split(directory)
            if parent == directory:
                return None
            dirs.append(last)
            directory = parent
        dirs.reverse()
        return Below(norm, directory, self._roots[directory], tuple(dirs), name)


def act_in(below: Below, act: Callable[[int, str], T]) -> T:
    """``act(directory descriptor, name)``, the directory made as needed. Orphan removal deletes
    emptied directories (as `local.in_directory` says): an act that finds its directory removed
    after it was opened (no links left to it) runs again in a new one; another missing file (a
    rename's source) is raised."""
    for _ in range(_DIRECTORY_ROUNDS):
        with below.directory(create=True) as fd:
            try:
                return act(fd, below.name)
            except FileNotFoundError:
                if os.fstat(fd).st_nlink > 0:
                    raise
    raise FileNotFoundError(errno.ENOENT, "directory kept vanishing while a file was written in it", below.path)


def refuse_link(below: Below, exc: OSError) -> UnsafePathError:
    """The error for a file name that is itself a symbolic link (``O_NOFOLLOW``'s ``ELOOP``)."""
    return UnsafePathError(f"Refusing to write {below.path}: it is a symbolic link (nothing is written "
                           f"through a link in the table directory {below.root})")


def write_synced(fd: int, name: str, below: Below, data: bytes) -> None:
    """`write_new`, flushed to the disk before it returns (a put's temporary file)."""
    write_new(fd, name, below, data, sync=True)


def write_new(fd: int, name: str, below: Below, data: bytes, *, sync: bool = False) -> None:
    """Create (or truncate) ``name`` in the directory ``fd`` holding ``data``; never through a link."""
    try:
        out = os.open(name, NEW_FILE, 0o666, dir_fd=fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise refuse_link(below, exc) from None
        raise
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view):]  # a short write (a signal, a full pipe) goes on
        if sync:
            os.fsync(out)
    finally:
        os.close(out)


def create_exclusive(fd: int, name: str, data: bytes) -> bool:
    """``name`` created with ``O_EXCL`` (file systems without hard links): False if it exists."""
    try:
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                      0o644, dir_fd=fd)
    except FileExistsError:
        return False
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view):]
    finally:
        os.close(out)
    return True


def open_output(below: Below) -> pa.NativeFile:
    """A native Arrow stream over a new file at ``below``, created relative to its directory."""
    def act(fd: int, name: str) -> pa.NativeFile:
        try:
            out = os.open(name, NEW_FILE, 0o666, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise refuse_link(below, exc) from None
            raise
        try:
            # Without descriptor names (not Linux) the file, made here through no link, is opened
            # again by its path: a directory swapped in that instant is not caught.
            return pa.OSFile(f"{_FD_NAMES}/{out}" if _HAS_FD_NAMES else below.path, "wb")
        finally:
            os.close(out)
    return act_in(below, act)


def rename(src: str, src_below: Below | None, dst: Below) -> None:
    """Move ``src`` (below a table root or not) to ``dst``, replacing what is there (a link at
    ``dst`` is replaced, never followed); a missing source raises `FileNotFoundError`."""
    if src_below is None:
        with contextlib.ExitStack() as stack:
            src_fd = os.open(posixpath.dirname(src) or ".", os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
            stack.callback(os.close, src_fd)
            rename_below(src_fd, posixpath.basename(src), dst.root, dst.path, real_root=dst.real_root)
        return
    with src_below.directory(create=False) as src_fd:
        rename_below(src_fd, src_below.name, dst.root, dst.path, real_root=dst.real_root)


def unlink(below: Below) -> bool:
    """Remove the file ``below`` (a link at its name: the link); whether it existed."""
    try:
        with below.directory(create=False) as fd:
            os.unlink(below.name, dir_fd=fd)
    except FileNotFoundError:
        return False
    return True


def rmdir(below: Below) -> bool:
    """Remove the directory ``below`` if it is empty (never a link's target); whether it was removed."""
    try:
        with below.directory(create=False) as fd:
            os.rmdir(below.name, dir_fd=fd)
    except OSError:  # missing, not empty, not a directory (a link at its name among them)
        return False
    return True


def remove_tree(below: Below) -> None:
    """Remove ``below`` and all under it; a link there is removed itself, nothing behind it."""
    try:
        with below.directory(create=False) as fd:
            try:
                st = os.stat(below.name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(below.name, dir_fd=fd)  # descends by descriptors, following no link
            else:
                os.unlink(below.name, dir_fd=fd)
    except FileNotFoundError:
        return


def make_dirs(below: Below) -> None:
    """Make the directory ``below`` and its parents (a link out of the table on the way refused)."""
    with open_below(below.root, (*below.dirs, below.name), create=True, what=below.path,
                    real_root=below.real_root):
        pass
