"""From a warehouse URI and storage options to the `FileIO` backend of its scheme.

Only schemes with a real put-if-absent are served: without one, two concurrent commits could both
"create" snapshot N and one would silently overwrite the other. A scheme fsspec knows but no
backend serves (``gs://``, ``abfs://``, ``hdfs://``, ...) is refused with `UnsupportedFeatureError`
when the warehouse is opened, not at its first commit.

Adding a backend (e.g. GCS or Azure): subclass `FsspecFileIO` (``lake_assets/io/gcs.py``) and
implement `try_create` with the store's own conditional create - on GCS an upload with
``ifGenerationMatch=0`` (HTTP 412 when the object exists), on Azure Blob a put with
``If-None-Match: *`` (HTTP 409 BlobAlreadyExists). Detect "exists" from the client's error
code, never from message text, and settle "exists" and every open outcome by reading the object
back with `FileIO._decide` (the clients retry, and a retried create meets its own object). Then
register its schemes in `_BACKENDS` below and add a subclass of the contract suite in
``tests/unit/io`` (an emulator on loopback: fake-gcs-server, Azurite).

fsspec and the backends built on it are imported by the backends that use them: a local warehouse
needs none of them, and fsspec is ~50 ms of CPU and ~80 modules of every process's start (a Spark
Python worker's among them; issue 17 §3).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from lake_assets.errors import UnsupportedFeatureError
from lake_assets.io.file_io import FileIO
from lake_assets.io.local import LocalFileIO

# fsspec's local filesystem option that LocalFileIO always honours: it creates parent directories.
_LOCAL_OPTIONS = {"auto_mkdir"}


def _local(protocol: str, root: str, options: dict[str, Any]) -> tuple[FileIO, str]:
    unknown = sorted(set(options) - _LOCAL_OPTIONS)
    if unknown:
        raise TypeError(f"a local warehouse takes no storage options {unknown} (only {sorted(_LOCAL_OPTIONS)})")
    return LocalFileIO(), os.path.abspath(root).rstrip("/") or "/"


def _memory(protocol: str, root: str, options: dict[str, Any]) -> tuple[FileIO, str]:
    import fsspec

    from lake_assets.io.memory import MemoryFileIO

    fs, path = fsspec.core.url_to_fs(f"memory://{root}", **options)
    return MemoryFileIO(fs), path.rstrip("/") or "/"


def _s3(protocol: str, root: str, options: dict[str, Any]) -> tuple[FileIO, str]:
    from lake_assets.io.s3 import S3FileIO

    # s3a:// (Hadoop's spelling) is the same store; paths are handed on as s3://
    fio = S3FileIO.from_options("s3", options, bucket=root.lstrip("/").split("/", 1)[0] or None)
    return fio, fio.fs._strip_protocol(f"s3://{root}").rstrip("/") or "/"


#: scheme -> (scheme, path without scheme, storage options) -> (FileIO, root path)
_BACKENDS: dict[str, Callable[[str, str, dict[str, Any]], tuple[FileIO, str]]] = {
    "file": _local,
    "local": _local,
    "memory": _memory,
    "s3": _s3,
    "s3a": _s3,
}


def file_io_for_url(url: str, **storage_options: Any) -> tuple[FileIO, str]:
    """The FileIO for warehouse ``url`` and the root path inside it (no scheme prefix).

    Raises `UnsupportedFeatureError` for a scheme without a backend, ValueError for a scheme
    nobody knows, TypeError for storage options the backend does not take.
    """
    protocol, path = _split_protocol(url)
    scheme = (protocol or "file").lower()
    backend = _BACKENDS.get(scheme)
    if backend is not None:
        return backend(scheme, path, dict(storage_options))
    import fsspec

    if scheme in fsspec.available_protocols():
        raise UnsupportedFeatureError(
            f"Storage scheme {scheme!r} ({url}) has no put-if-absent known to lake_assets: concurrent "
            f"commits could overwrite each other. Supported: {', '.join(sorted(_BACKENDS))}."
        )
    raise ValueError(f"Protocol not known: {scheme}")


def _split_protocol(url: str) -> tuple[str | None, str]:
    """fsspec's ``split_protocol``: (scheme or None, the rest). A plain path, which has neither
    ``://`` nor fsspec's ``data:`` prefix, is (None, path) there too, without importing fsspec."""
    if "://" not in url and not url.startswith("data:"):
        return None, url
    import fsspec

    protocol, path = fsspec.core.split_protocol(url)
    return protocol, path
