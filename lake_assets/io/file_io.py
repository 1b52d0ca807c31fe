"""Bytes in, bytes out: the only module that talks to storage.

`FileIO` wraps an fsspec filesystem and adds what a table format needs on top of it:
an atomic create-if-absent for snapshot and schema files, an atomic overwrite for hint files,
batched deletes, and a pyarrow filesystem view for Parquet.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import fsspec
import pyarrow.fs as pafs
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from lake_assets.errors import CommitStateUnknownError, UnsupportedFeatureError

# fsspec's MemoryFileSystem is process-global; this lock makes its create-if-absent atomic
# between threads of this process (the only place a memory filesystem is shared).
_MEMORY_CREATE_LOCK = threading.Lock()


@dataclass(frozen=True)
class FileStatus:
    """What a directory listing tells about one entry."""

    path: str
    size: int
    is_dir: bool
    modified_ms: int | None


class FileIO:
    """Storage for one warehouse, addressed by paths as the underlying filesystem spells them."""

    def __init__(self, fs: fsspec.AbstractFileSystem, *, protocol: str = "file") -> None:
        self.fs = fs
        self.protocol = protocol
        self._arrow_fs: pafs.FileSystem | None = None

    @classmethod
    def for_url(cls, url: str, **storage_options: Any) -> tuple[FileIO, str]:
        """Return the FileIO for ``url`` and the root path inside it (no protocol prefix)."""
        if url.startswith(("s3://", "s3a://")):
            # Listings drive snapshot and schema discovery: a cached listing would hide new commits.
            storage_options.setdefault("use_listings_cache", False)
        fs, root = fsspec.core.url_to_fs(url, **storage_options)
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        if isinstance(fs, LocalFileSystem):
            protocol = "file"
            root = os.path.abspath(root)
        return cls(fs, protocol=protocol), root.rstrip("/") or "/"

    # ------------------------------------------------------------------ reads
    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    def read_bytes(self, path: str) -> bytes:
        """Read a whole file; raises FileNotFoundError when it does not exist."""
        if self.is_local:
            with open(path, "rb") as fh:
                return fh.read()
        return self.fs.cat_file(path)

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def exists(self, path: str) -> bool:
        if self.is_local:
            return os.path.exists(path)
        return self.fs.exists(path)

    def missing(self, paths: Iterable[str]) -> list[str]:
        """The given files that do not exist, in one request per directory where many files share
        one (object stores), else one existence check per file; an absence seen in a listing is
        confirmed by a direct check, so only files that are really gone are reported."""
        paths = list(dict.fromkeys(paths))
        if self.is_local:
            return [p for p in paths if not os.path.exists(p)]
        by_dir: dict[str, list[str]] = {}
        for p in paths:
            by_dir.setdefault(posixpath.dirname(p.rstrip("/")), []).append(p)
        out = []
        for d, files in by_dir.items():
            if len(files) < 8:  # a few lookups cost less than listing a big bucket directory
                out += [p for p in files if not self.exists(p)]
                continue
            listed = {posixpath.basename(s.path) for s in self.list_status(d)}
            out += [p for p in files if posixpath.basename(p) not in listed and not self.exists(p)]
        return out

    def size(self, path: str) -> int:
        if self.is_local:
            return os.path.getsize(path)
        return int(self.fs.size(path))

    def list_status(self, path: str) -> list[FileStatus]:
        """Entries directly under ``path``; an absent directory lists as empty."""
        if self.is_local:
            try:
                it = os.scandir(path)
            except FileNotFoundError:
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
        try:
            infos = self.fs.ls(path, detail=True)
        except FileNotFoundError:
            return []
        out = []
        for info in infos:
            name = info["name"].rstrip("/")
            if name == path.rstrip("/"):
                continue
            mtime = info.get("mtime") or info.get("LastModified") or info.get("created")
            out.append(
                FileStatus(
                    name,
                    int(info.get("size") or 0),
                    info.get("type") == "directory",
                    _to_ms(mtime),
                )
            )
        return out

    def list_names(self, path: str) -> list[str]:
        return [posixpath.basename(s.path) for s in self.list_status(path)]

    def walk_files(self, path: str) -> list[FileStatus]:
        """Every file below ``path`` (recursive). On a local disk symlinks are skipped: a walk never
        leaves ``path`` through a symlinked directory, and never offers a link (perhaps a
        deliberately relocated directory) to a caller that deletes what it walks."""
        out: list[FileStatus] = []
        stack = [path]
        while stack:
            cur = stack.pop()
            for st in self._list_no_follow(cur) if self.is_local else self.list_status(cur):
                if st.is_dir:
                    stack.append(st.path)
                else:
                    out.append(st)
        return out

    @staticmethod
    def _list_no_follow(path: str) -> list[FileStatus]:
        try:
            with os.scandir(path) as it:
                out = []
                for e in it:
                    if e.is_symlink():
                        continue
                    st = e.stat(follow_symlinks=False)
                    out.append(FileStatus(e.path, st.st_size, e.is_dir(follow_symlinks=False),
                                          int(st.st_mtime * 1000)))
                return out
        except FileNotFoundError:
            return []

    # ----------------------------------------------------------------- writes
    def mkdirs(self, path: str) -> None:
        if self.is_local:
            os.makedirs(path, exist_ok=True)
        else:
            self.fs.makedirs(path, exist_ok=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a file under a fresh, unique name (data files, manifests): no atomicity needed."""
        if self.is_local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(data)
            return
        self.fs.pipe_file(path, data)

    def overwrite_atomic(self, path: str, data: bytes) -> None:
        """Replace a small file so that readers see the old or the new content, never a torn one."""
        if self.is_local:
            directory = os.path.dirname(path)
            os.makedirs(directory, exist_ok=True)
            tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
            return
        # Object stores replace whole objects atomically on PUT.
        self.fs.pipe_file(path, data)

    def try_create(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist.

        True: ``path`` now holds exactly ``data`` (this call created it). False: another writer's
        object is there. Raises `CommitStateUnknownError` when it cannot tell: the request may have
        landed (a lost response, a 5xx, a timeout) and looking did not settle it.

        This is the commit point of the table format, so it must be a real put-if-absent:
        on a local disk a hard link from a fully written temporary file (link never replaces),
        on S3 a conditional PUT (If-None-Match), in memory a create under a lock.

        On S3, "already exists" is not proof of a lost race: the client retries a PUT whose
        response was lost (or answered 5xx) and gets 412 for its own object. So there every
        "exists" and every failure whose outcome is open is decided by reading the object back:
        byte-equal content is ours (snapshots carry a uuid, tags a creation time in microseconds,
        schemas one in milliseconds: two writers cannot produce the same bytes, short of two
        identical schema changes in the same millisecond, which then both stand). A local link
        and the memory create are never retried, so there "exists" is a lost race.
        """
        if self.is_local:
            return self._try_create_local(path, data)
        if isinstance(self.fs, MemoryFileSystem):
            with _MEMORY_CREATE_LOCK:
                if self.fs.exists(path):
                    return False
                self.fs.pipe_file(path, data)
                return True
        if self.protocol in ("s3", "s3a"):
            try:
                self.fs.pipe_file(path, data, mode="create")
            except FileExistsError:
                return self._decide(path, data, None)
            except OSError as exc:
                if "PreconditionFailed" in str(exc) or "412" in str(exc):
                    return self._decide(path, data, None)
                return self._decide(path, data, exc)
            except Exception as exc:  # botocore/aiohttp timeouts and disconnects
                return self._decide(path, data, exc)
            return True
        raise UnsupportedFeatureError(
            f"Storage protocol {self.protocol!r} has no put-if-absent known to lake_assets; "
            "concurrent commits could overwrite each other. Use a local path, memory:// or s3://."
        )

    def _try_create_local(self, path: str, data: bytes) -> bool:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        try:
            # A failure while writing the temporary file (ENOSPC) is a proven "not created".
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            except OSError as exc:
                if exc.errno in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                    return self._create_exclusive_local(path, data)
                raise  # link(2) is atomic: it failed, so nothing was created
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        return True

    def _holds(self, path: str, data: bytes) -> bool | None:
        """True if ``path`` holds exactly ``data``, False if other content, None if it is absent."""
        try:
            return self.read_bytes(path) == data
        except FileNotFoundError:
            return None

    def _decide(self, path: str, data: bytes, error: BaseException | None) -> bool:
        """Settle a put-if-absent whose answer was "exists" (``error`` None) or a failure, by looking."""
        try:
            holds = self._holds(path, data)
        except Exception as exc:  # the look itself failed: still unknown
            raise CommitStateUnknownError(
                f"Cannot tell whether {path} was created: {error or 'it already existed'}; "
                f"reading it back failed too: {exc!r}"
            ) from exc
        if holds is not None:
            return holds
        if error is None:
            # "exists" but now absent: deleted meanwhile (e.g. expired); it was not ours to delete.
            return False
        # Absent after a failed request: the request may still be in flight and land later.
        raise CommitStateUnknownError(f"Cannot tell whether {path} was created: {error!r}") from error

    @staticmethod
    def _create_exclusive_local(path: str, data: bytes) -> bool:
        # Filesystems without hard links: O_EXCL create is atomic, but a crash mid-write could leave
        # a torn file; readers treat an unparsable newest snapshot as corrupt, which the caller tests.
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return True

    def delete(self, path: str) -> bool:
        """Delete one file; True if it existed. Missing files are fine (deletes are idempotent)."""
        try:
            if self.is_local:
                os.unlink(path)
            else:
                self.fs.rm_file(path)
            return True
        except FileNotFoundError:
            return False

    def delete_many(self, paths: Iterable[str]) -> int:
        """Delete files in batches (one request per batch on object stores)."""
        paths = list(paths)
        if not paths:
            return 0
        if self.is_local or isinstance(self.fs, MemoryFileSystem):
            return sum(1 for p in paths if self.delete(p))
        try:
            self.fs.rm(paths)
        except FileNotFoundError:
            for p in paths:
                self.delete(p)
        return len(paths)

    def delete_dir_if_empty(self, path: str) -> bool:
        if self.is_local:
            try:
                os.rmdir(path)
                return True
            except OSError:
                return False
        if not self.list_status(path):
            try:
                self.fs.rmdir(path)
            except (OSError, NotImplementedError):
                return False
            return True
        return False

    def delete_tree(self, path: str) -> None:
        if self.exists(path):
            self.fs.rm(path, recursive=True)

    # ------------------------------------------------------------ pyarrow view
    @property
    def arrow_fs(self) -> pafs.FileSystem:
        """A pyarrow filesystem over the same storage, for Parquet reads and writes."""
        if self._arrow_fs is None:
            if self.is_local:
                self._arrow_fs = pafs.LocalFileSystem()
            else:
                self._arrow_fs = pafs.PyFileSystem(pafs.FSSpecHandler(self.fs))
        return self._arrow_fs

    def join(self, *parts: str) -> str:
        return posixpath.join(*parts)


def _to_ms(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        # fsspec local/memory give seconds; heuristically treat huge values as ms already.
        return int(value if value > 1e11 else value * 1000)
    ts = getattr(value, "timestamp", None)
    if ts is not None:
        return int(ts() * 1000)
    return None
