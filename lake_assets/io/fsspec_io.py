"""`FsspecFileIO`: the parts of the contract any fsspec filesystem provides (memory, object stores).

Put-if-absent is not one of them: each backend supplies its own `try_create`.
"""

from __future__ import annotations

import posixpath
from abc import abstractmethod
from collections.abc import Iterable
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.fs as pafs

from lake_assets.io.file_io import FileIO, FileStatus

# Fewer files than this in one directory are looked up one by one by `missing`: a few lookups cost
# less than listing a big bucket directory.
_LIST_FROM = 8


class FsspecFileIO(FileIO):
    """A FileIO over an fsspec filesystem; paths are as the filesystem spells them."""

    def __init__(self, fs: fsspec.AbstractFileSystem) -> None:
        self.fs = fs
        self._arrow_fs: pafs.FileSystem | None = None

    # ------------------------------------------------------------------ reads
    def read_bytes(self, path: str) -> bytes:
        return bytes(self.fs.cat_file(path))

    def exists(self, path: str) -> bool:
        return bool(self.fs.exists(path))

    def is_file(self, path: str) -> bool:
        return bool(self.fs.isfile(path))

    def missing(self, paths: Iterable[str]) -> list[str]:
        """One listing per directory where many files share one, else one lookup per file; an
        absence seen in a listing is confirmed by a direct lookup."""
        by_dir: dict[str, list[str]] = {}
        for p in dict.fromkeys(paths):
            by_dir.setdefault(posixpath.dirname(p.rstrip("/")), []).append(p)
        out: list[str] = []
        for d, files in by_dir.items():
            if len(files) < _LIST_FROM:
                out += [p for p in files if not self.is_file(p)]
                continue
            listed = {posixpath.basename(s.path) for s in self.list_status(d)}
            out += [p for p in files if posixpath.basename(p) not in listed and not self.is_file(p)]
        return out

    def size(self, path: str) -> int:
        return int(self.fs.size(path))

    def list_status(self, path: str) -> list[FileStatus]:
        try:
            infos = self.fs.ls(path, detail=True)
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = []
        for info in infos:
            name = info["name"].rstrip("/")
            if name == path.rstrip("/"):
                continue
            mtime = info.get("mtime") or info.get("LastModified") or info.get("created")
            out.append(FileStatus(name, int(info.get("size") or 0), info.get("type") == "directory",
                                  to_ms(mtime)))
        return out

    def open_input(self, path: str) -> pa.NativeFile:
        return pa.PythonFile(self.fs.open(path, "rb"), mode="r")

    def open_input_chunked(self, path: str, buffer_bytes: int) -> pa.NativeFile:
        # No cache of the filesystem's own: fsspec's default (s3fs: read-ahead of
        # ``default_block_size``, 50 MiB) would hold up to a whole file beyond what the reader
        # asked for, outside Arrow's pool; each read of the reader is then one ranged request.
        return pa.PythonFile(self.fs.open(path, "rb", cache_type="none"), mode="r")

    # ----------------------------------------------------------------- writes
    def mkdirs(self, path: str) -> None:
        self.fs.makedirs(path, exist_ok=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        self.fs.pipe_file(path, data)

    def overwrite_atomic(self, path: str, data: bytes) -> None:
        # Object stores (and the memory store) replace a whole object at once.
        self.fs.pipe_file(path, data)

    @abstractmethod
    def try_create(self, path: str, data: bytes) -> bool: ...

    def open_output(self, path: str) -> Any:
        return pa.PythonFile(self.fs.open(path, "wb"), mode="w")

    def rename(self, src: str, dst: str) -> None:
        if not self.fs.isfile(src):
            raise FileNotFoundError(src)
        self.fs.mv(src, dst)

    # ---------------------------------------------------------------- deletes
    def delete(self, path: str) -> bool:
        try:
            self.fs.rm_file(path)
            return True
        except FileNotFoundError:
            return False

    def delete_dir_if_empty(self, path: str) -> bool:
        if self.list_status(path):
            return False
        try:
            self.fs.rmdir(path)
        except (OSError, NotImplementedError):
            return False
        return True

    def delete_tree(self, path: str) -> None:
        if self.exists(path):
            self.fs.rm(path, recursive=True)

    # ------------------------------------------------------------ pyarrow view
    @property
    def arrow_fs(self) -> pafs.FileSystem:
        if self._arrow_fs is None:
            self._arrow_fs = pafs.PyFileSystem(pafs.FSSpecHandler(self.fs))
        return self._arrow_fs


def to_ms(value: Any) -> int | None:
    """A listing's modification time (seconds, milliseconds or a datetime) in epoch milliseconds."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        # fsspec local/memory give seconds; heuristically treat huge values as ms already.
        return int(value if value > 1e11 else value * 1000)
    ts = getattr(value, "timestamp", None)
    if ts is not None:
        return int(ts() * 1000)
    return None
