"""The storage contract: what the table format needs from a filesystem, and nothing else.

`FileIO` is abstract; each backend (`LocalFileIO`, `MemoryFileIO`, `S3FileIO`) implements it and
runs the one contract test suite (``tests/unit/io``). Code outside ``lake_assets.io`` never asks
which backend it has: it asks the contract (``has_symlinks``, ``publishes_on_close``, ...).

What the contract adds on top of plain bytes: an atomic create-if-absent for snapshot, schema and
tag files (the commit point), an atomic overwrite for hint files, batched deletes and existence
checks, and pyarrow streams for Parquet data files.
"""

from __future__ import annotations

import posixpath
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from lake_assets.errors import CommitStateUnknownError


@dataclass(frozen=True)
class FileStatus:
    """What a directory listing tells about one entry."""

    path: str
    size: int
    is_dir: bool
    modified_ms: int | None


class PreparedCreate:
    """A put-if-absent prepared by `FileIO.prepare_create`: `create` answers as `try_create`
    does (once); `discard` drops it (idempotent; nothing to drop after `create`)."""

    def __init__(self, create: Callable[[], bool], discard: Callable[[], None]) -> None:
        self._create = create
        self._discard = discard
        self._used = False

    def create(self) -> bool:
        """The put-if-absent: True if this call created the file (see `FileIO.try_create`)."""
        if self._used:
            raise RuntimeError("a prepared create is made once")
        self._used = True
        return self._create()

    def discard(self) -> None:
        """Drop the prepared put if it was never made (what it wrote ahead is removed)."""
        if not self._used:
            self._used = True
            self._discard()


class FileIO(ABC):
    """Storage for one warehouse, addressed by paths as the backend spells them (no scheme prefix).

    Errors: reading, sizing or opening a file that does not exist raises `FileNotFoundError`;
    listing a directory that does not exist gives an empty list; deleting a missing file is fine.
    """

    #: the URI scheme of this backend ("file", "memory", "s3", ...)
    protocol: str = ""
    #: paths may pass through symlinked directories: deletes must resolve links before trusting a path
    has_symlinks: bool = False
    #: an empty directory exists on its own (else a marker file keeps it listable)
    keeps_empty_directories: bool = False
    #: a file written through `open_output` appears only when the stream is closed (object stores
    #: publish on close), so a reader never sees a partial file and no temporary name is needed
    publishes_on_close: bool = False
    #: each request pays a network round trip: reading many small files in parallel pays off
    parallel_reads_pay_off: bool = False
    #: the fewest bytes a batched Parquet read asks of a column chunk at once (`chunked_read_bytes`):
    #: on an object store each ask is one ranged GET, whose round trip small asks pay again and again
    min_chunked_read: int = 0

    @classmethod
    def for_url(cls, url: str, **storage_options: Any) -> tuple[FileIO, str]:
        """Return the FileIO for ``url`` and the root path inside it (no protocol prefix)."""
        from lake_assets.io.factory import file_io_for_url

        return file_io_for_url(url, **storage_options)

    # ------------------------------------------------------------------ reads
    @abstractmethod
    def read_bytes(self, path: str) -> bytes:
        """Read a whole file; raises FileNotFoundError when it does not exist."""

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    @abstractmethod
    def exists(self, path: str) -> bool:
        """True if a file or directory is at ``path``."""

    def is_file(self, path: str) -> bool:
        """True if a file is at ``path``; for callers that ask about files (snapshots, manifests),
        which an object store answers with one request where `exists` also looks for a directory."""
        return self.exists(path)

    def missing(self, paths: Iterable[str]) -> list[str]:
        """The given files that do not exist (each at most once, in the given order); only files
        that are really gone are reported."""
        return [p for p in dict.fromkeys(paths) if not self.is_file(p)]

    @abstractmethod
    def size(self, path: str) -> int:
        """The size of a file in bytes; raises FileNotFoundError when it does not exist."""

    @abstractmethod
    def list_status(self, path: str) -> list[FileStatus]:
        """Entries directly under ``path``; an absent directory lists as empty."""

    def list_names(self, path: str) -> list[str]:
        return [posixpath.basename(s.path) for s in self.list_status(path)]

    def walk_files(self, path: str) -> list[FileStatus]:
        """Every file below ``path`` (recursive). A walk never follows a symlink (see
        `_list_for_walk`): it never leaves ``path``, and never offers a link (perhaps a
        deliberately relocated directory) to a caller that deletes what it walks."""
        out: list[FileStatus] = []
        stack = [path]
        while stack:
            for st in self._list_for_walk(stack.pop()):
                if st.is_dir:
                    stack.append(st.path)
                else:
                    out.append(st)
        return out

    def _list_for_walk(self, path: str) -> list[FileStatus]:
        """The listing `walk_files` descends by; backends with symlinks leave them out."""
        return self.list_status(path)

    def list_without_links(self, path: str) -> list[FileStatus]:
        """Entries directly under ``path`` as `walk_files` sees them: symlinks left out, never
        followed (for callers that delete what they list, one directory level at a time)."""
        return self._list_for_walk(path)

    @abstractmethod
    def open_input(self, path: str) -> pa.NativeFile:
        """A random-access stream over a file (for Parquet); FileNotFoundError when absent."""

    def open_input_chunked(self, path: str, buffer_bytes: int) -> pa.NativeFile:
        """`open_input` for a reader that asks for ``buffer_bytes`` at a time (a batched Parquet
        read, `formats.parquet_read.iter_parquet`; 0: whole column chunks): a backend that reads
        ahead of what is asked (s3fs's cache) reads and holds no more than what is asked here."""
        return self.open_input(path)

    def open_data_file(self, path: str, file_size: int | None, buffer_bytes: int | None = None) -> pa.NativeFile:
        """`open_input` (with ``buffer_bytes``: `open_input_chunked`) of a data file whose size its
        manifest gives (``file_size``; None: not known). A backend that saves a request with the
        size checks it against the file: a reader never sees the file at a size it does not have
        (its footer looked for at the wrong offset); a size that differs raises
        `CorruptMetadataError`."""
        return self.open_input(path) if buffer_bytes is None else self.open_input_chunked(path, buffer_bytes)

    def chunked_read_bytes(self, buffer_bytes: int) -> int:
        """The bytes of a column chunk a batched Parquet read with ``read.parquet.buffer-size`` =
        ``buffer_bytes`` asks for and holds at a time on this store: the option, at least
        `min_chunked_read`; 0 (whole column chunks) stays 0."""
        return max(buffer_bytes, self.min_chunked_read) if buffer_bytes > 0 else 0

    # ----------------------------------------------------------------- writes
    def confine_to_table(self, root: str) -> None:
        """Write, rename and delete what is below ``root`` (a table's directory) never through a
        symbolic link that leaves it (`UnsafePathError` instead); ``root`` itself may be a link.
        A no-op where storage has no links; called once per table opened (idempotent)."""
        return None  # object stores: a key is no path through directories, nothing to follow

    @abstractmethod
    def mkdirs(self, path: str) -> None:
        """Create a directory and its parents (a no-op where directories are implicit)."""

    @abstractmethod
    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a file under a fresh, unique name (data files, manifests): no atomicity needed."""

    @abstractmethod
    def overwrite_atomic(self, path: str, data: bytes) -> None:
        """Replace a small file so that readers see the old or the new content, never a torn one."""

    @abstractmethod
    def try_create(self, path: str, data: bytes) -> bool:
        """Create ``path`` with ``data`` only if it does not exist.

        True: ``path`` now holds exactly ``data`` (this call created it). False: another writer's
        file is there. Raises `CommitStateUnknownError` when it cannot tell: the request may have
        landed (a lost response, a 5xx, a timeout) and looking did not settle it.

        This is the commit point of the table format, so it must be a real put-if-absent: two
        concurrent calls for one path never both return True. Backends whose client retries
        (object stores) settle "already exists" and every open outcome with `_decide`.
        """

    def prepare_create(self, path: str, data: bytes) -> PreparedCreate:
        """A `try_create` of ``path`` made ready ahead of time: its `PreparedCreate.create` is
        the put-if-absent, `PreparedCreate.discard` drops it unmade. Here it only defers the call;
        a backend may do the slow part of the put now (`LocalFileIO`: the fsync'd temporary file),
        so that a committer can prepare its next snapshot while it puts this one."""
        return PreparedCreate(lambda: self.try_create(path, data), lambda: None)

    @abstractmethod
    def open_output(self, path: str) -> Any:
        """A writable binary stream for a new file (for Parquet), creating parent directories.
        With `publishes_on_close` the file appears only when the stream is closed."""

    @abstractmethod
    def rename(self, src: str, dst: str) -> None:
        """Move a file to ``dst``, replacing what is there; FileNotFoundError when ``src`` is absent."""

    # ---------------------------------------------------------------- deletes
    @abstractmethod
    def delete(self, path: str) -> bool:
        """Delete one file; True if it existed. Missing files are fine (deletes are idempotent)."""

    def discard(self, path: str) -> None:
        """Delete one file, missing or not, for callers that need not know whether it was there
        (an object store's `delete` looks first to tell them: one request more)."""
        self.delete(path)

    def delete_many(self, paths: Iterable[str]) -> int:
        """Delete files (in batches where the backend has batch deletes); missing files are fine.
        Returns how many files were deleted, or on batching backends how many were asked for."""
        return sum(1 for p in paths if self.delete(p))

    @abstractmethod
    def delete_dir_if_empty(self, path: str) -> bool:
        """Remove the directory ``path`` if it holds nothing; True if it was removed."""

    @abstractmethod
    def delete_tree(self, path: str) -> None:
        """Delete ``path`` and everything below it (no-op when absent)."""

    # ------------------------------------------------------------ pyarrow view
    @property
    @abstractmethod
    def arrow_fs(self) -> pafs.FileSystem:
        """A pyarrow filesystem over the same storage, addressed by the same paths."""

    def uri(self, path: str) -> str:
        """``path`` as a URI another process can open (a local path stays a plain path)."""
        return f"{self.protocol}://{path}"

    def join(self, *parts: str) -> str:
        return posixpath.join(*parts)

    # ------------------------------------------------ settling unknown outcomes
    def _holds(self, path: str, data: bytes) -> bool | None:
        """True if ``path`` holds exactly ``data``, False if other content, None if it is absent."""
        try:
            return self.read_bytes(path) == data
        except FileNotFoundError:
            return None

    def _decide(self, path: str, data: bytes, error: BaseException | None) -> bool:
        """Settle a put-if-absent whose answer was "exists" (``error`` None) or a failure, by looking.

        A client that retries a PUT whose response was lost gets "exists" for its own object, so
        "exists" is not proof of a lost race: byte-equal content is ours (snapshots carry a uuid,
        tags a creation time in microseconds, schemas one in milliseconds: two writers cannot
        produce the same bytes, short of two identical schema changes in the same millisecond,
        which then both stand).
        """
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
