"""Storage access: a FileIO over fsspec with a real put-if-absent."""

from lake_assets.io.file_io import FileIO

__all__ = ["FileIO"]
