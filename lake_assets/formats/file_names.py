"""The names Paimon gives new data and changelog files: ``<prefix><uuid>-<n><extension>``.

The extension is ``.<format>``; with ``file.suffix.include.compression = true`` (Paimon 1.x) the
codec goes before it, as Java HEAD's ``DataFilePathFactory.makeExtension`` (1.3 and later) names
it: the table's ``file.compression`` as written, mapped to its Hadoop file extension where it is
one of ``HadoopCompressionType`` (matched ignoring case: ``zstd`` -> ``zst``, ``gzip`` -> ``gz``,
``snappy``, ``lz4``, ``bzip2`` -> ``bz2``, ``deflate``; ``none`` -> no suffix), else the value
itself (``lz4_raw``, ``uncompressed``, ``brotli``). E.g. ``data-<uuid>-0.zst.parquet``. The codec
is the table's, also for files of a level ``file.compression.per.level`` compresses otherwise and
for changelog files (Java builds one path factory per format from the table's options). Paimon
1.0 to 1.2 put ``file.compression`` itself there (``.zstd.parquet``); readers of every version
take the format from the last extension (`lake_assets.formats.file_format.format_of_file`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lake_assets.options import CoreOptions

# HadoopCompressionType's values and their file extensions (None: no extension)
_HADOOP_EXTENSIONS: dict[str, str | None] = {
    "none": None, "gzip": "gz", "bzip2": "bz2", "deflate": "deflate", "snappy": "snappy", "lz4": "lz4",
    "zstd": "zst",
}
# the extensions Java's formatIdentifier skips to find the format before them
COMPRESSION_EXTENSIONS = frozenset(e for e in _HADOOP_EXTENSIONS.values() if e is not None)


def compression_extension(codec: str) -> str | None:
    """The part a codec adds to file names (``DataFilePathFactory.compressFileExtension``)."""
    if not codec:
        return None
    lowered = codec.lower()
    return _HADOOP_EXTENSIONS.get(lowered, codec)


def name_compression(options: CoreOptions) -> str | None:
    """What new files of a table with these options carry before their format extension: None
    unless ``file.suffix.include.compression`` is true; else `compression_extension` of
    ``file.compression`` as the table carries it (Java reads the string, not a parsed codec)."""
    if not options.file_suffix_include_compression:
        return None
    key = options.carried_key("file.compression")
    return compression_extension(options.raw[key] if key is not None else options.file_compression)


def file_extension(format_name: str, compression: str | None) -> str:
    """``.<format>``, or ``.<compression>.<format>`` (``makeExtension``; lake_assets writes no text formats,
    whose codec Java puts last)."""
    return f".{compression}.{format_name}" if compression else f".{format_name}"


__all__ = ["COMPRESSION_EXTENSIONS", "compression_extension", "file_extension", "name_compression"]
