"""`MemoryFileIO`: fsspec's process-wide memory store (tests, demos, scratch tables)."""

from __future__ import annotations

import threading

from fsspec.implementations.memory import MemoryFileSystem

from lake_assets.io.fsspec_io import FsspecFileIO

# fsspec's MemoryFileSystem is process-global; this lock makes its create-if-absent atomic
# between threads of this process (the only place a memory filesystem is shared).
_CREATE_LOCK = threading.Lock()


class MemoryFileIO(FsspecFileIO):
    """``memory://`` paths; every instance sees the same process-wide store."""

    protocol = "memory"

    def __init__(self, fs: MemoryFileSystem | None = None) -> None:
        super().__init__(fs if fs is not None else MemoryFileSystem())

    def try_create(self, path: str, data: bytes) -> bool:
        # A create under a lock is never retried, so "exists" here is a lost race.
        with _CREATE_LOCK:
            if self.fs.exists(path):
                return False
            self.fs.pipe_file(path, data)
            return True
