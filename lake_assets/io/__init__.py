"""Storage access: one `FileIO` contract, one backend per storage scheme (see `factory`).

The names are imported on first use (`lake_assets.lazy_exports`): a module that needs the
contract only (`lake_assets.io.file_io`) imports this package first, and must not import every
backend and fsspec with it (issue 17 §3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from lake_assets.io.factory import file_io_for_url
    from lake_assets.io.file_io import FileIO, FileStatus
    from lake_assets.io.local import LocalFileIO
    from lake_assets.io.memory import MemoryFileIO
    from lake_assets.io.s3 import S3FileIO

# public name -> the module that defines it
_EXPORTS = {
    "FileIO": "lake_assets.io.file_io",
    "FileStatus": "lake_assets.io.file_io",
    "LocalFileIO": "lake_assets.io.local",
    "MemoryFileIO": "lake_assets.io.memory",
    "S3FileIO": "lake_assets.io.s3",
    "file_io_for_url": "lake_assets.io.factory",
}

__all__ = ["FileIO", "FileStatus", "LocalFileIO", "MemoryFileIO", "S3FileIO", "file_io_for_url"]

if not TYPE_CHECKING:  # checkers see the imports above, and a name not among them stays an error
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
