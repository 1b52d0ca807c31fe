"""Storage access: one `FileIO` contract, one backend per storage scheme (see `factory`)."""

from lake_assets.io.factory import file_io_for_url
from lake_assets.io.file_io import FileIO, FileStatus
from lake_assets.io.local import LocalFileIO
from lake_assets.io.memory import MemoryFileIO
from lake_assets.io.s3 import S3FileIO

__all__ = ["FileIO", "FileStatus", "LocalFileIO", "MemoryFileIO", "S3FileIO", "file_io_for_url"]
