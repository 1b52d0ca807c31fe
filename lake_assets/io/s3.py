"""`S3FileIO`: S3 (and S3-compatible stores) through s3fs, with a conditional PUT as put-if-absent.

Metadata (snapshots, manifests, listings) goes through s3fs. Parquet data files go through
pyarrow's native `S3FileSystem` when the storage options translate to it (see
`native_arrow_s3`): ``bench/bench_s3_read.py`` measured it faster than pyarrow over s3fs.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.fs as pafs

from lake_assets.errors import CorruptMetadataError
from lake_assets.io.file_io import FileStatus
from lake_assets.io.fsspec_io import FsspecFileIO, to_ms

# S3 answers a conditional PUT that lost to an existing object with 412 PreconditionFailed, and
# one that raced another conditional PUT still in flight with 409 ConditionalRequestConflict
# (rejected: nothing written, a retry is safe).
_PRECONDITION_FAILED = ("PreconditionFailed", "412")
_CONDITIONAL_CONFLICT = ("ConditionalRequestConflict", "409")
_CONFLICT_RETRIES = 5


class S3FileIO(FsspecFileIO):
    """``s3://`` and ``s3a://`` paths (``bucket/key``) over s3fs."""

    protocol = "s3"
    publishes_on_close = True
    parallel_reads_pay_off = True
    # bench/RESULTS.md, "Batched Parquet reads on object stores": 1 MiB asks took 3x the time of
    # 8 MiB ones for the same bytes, each ask a GET
    min_chunked_read = 8 * 1024 * 1024

    def __init__(self, fs: fsspec.AbstractFileSystem, storage_options: dict[str, Any] | None = None,
                 *, protocol: str = "s3", bucket: str | None = None) -> None:
        super().__init__(fs)
        self.protocol = protocol
        self._options = dict(storage_options or {})
        self._bucket = bucket
        self._native_built = False
        self._native_fs: pafs.S3FileSystem | None = None
        self._native_lock = threading.Lock()
        # s3fs since 2025 reads a whole object in concurrent parts (asking its size first) unless
        # told ``max_concurrency=1``; the older versions pyproject admits take no such argument
        cat = getattr(fs, "_cat_file", None)
        self._cat_splits = cat is not None and "max_concurrency" in inspect.signature(cat).parameters

    @classmethod
    def from_options(cls, protocol: str, storage_options: dict[str, Any], bucket: str | None = None) -> S3FileIO:
        """``bucket``: the warehouse's bucket, whose region the native client needs when the
        options name none (s3fs follows region redirects by itself; pyarrow does not)."""
        options = dict(storage_options)
        # Listings drive snapshot and schema discovery: a cached listing would hide new commits.
        options.setdefault("use_listings_cache", False)
        return cls(fsspec.filesystem("s3", **options), storage_options, protocol=protocol, bucket=bucket)

    def try_create(self, path: str, data: bytes) -> bool:
        """A conditional PUT (``If-None-Match: *``). The client retries a PUT whose response was
        lost (or answered 5xx) and then gets 412 for its own object, so every "exists" and every
        failure whose outcome is open is settled by reading the object back (`_decide`)."""
        for _ in range(_CONFLICT_RETRIES):
            try:
                self.fs.pipe_file(path, data, mode="create")
            except FileExistsError:  # s3fs's translation of a 412 on If-None-Match
                return self._decide(path, data, None)
            except Exception as exc:  # 5xx, botocore/aiohttp timeouts and disconnects
                code = s3_error_code(exc)
                if code in _PRECONDITION_FAILED:
                    return self._decide(path, data, None)
                if code in _CONDITIONAL_CONFLICT:
                    continue  # rejected before anything was written: try again
                return self._decide(path, data, exc)
            return True
        return self._decide(path, data, None)

    # ------------------------------------------------------------------ reads
    # Each of these is one request: S3 bills per request, and s3fs's generic calls send more
    # (bench/RESULTS.md, "S3 requests per operation").
    def read_bytes(self, path: str) -> bytes:
        """One GET: s3fs's ``cat_file`` first asks the size (a HEAD) to split big files into
        concurrent ranged GETs, which the metadata files read here never need."""
        if self._cat_splits:
            return bytes(self.fs.cat_file(path, max_concurrency=1))
        return bytes(self.fs.cat_file(path))  # an s3fs before concurrent reads: one GET anyway

    def is_file(self, path: str) -> bool:
        """One HEAD: s3fs's ``exists`` follows a 404 with a LIST, in case ``path`` is a directory."""
        bucket, key, _ = self.fs.split_path(path)
        if not key:
            return False
        try:
            self.fs.call_s3("head_object", Bucket=bucket, Key=key, **self.fs.req_kw)
        except FileNotFoundError:
            return False
        return True

    def list_status(self, path: str) -> list[FileStatus]:
        """One LIST per 1000 entries: s3fs's ``ls`` of an empty or absent directory lists its
        parent too (to tell a file named ``path`` from nothing), which a listing of a directory
        does not need. The directory's own marker (``path/``) is not an entry of it."""
        bucket, key, _ = self.fs.split_path(path)
        prefix = key.rstrip("/") + "/" if key.strip("/") else ""
        out: list[FileStatus] = []
        token: dict[str, str] = {}
        while True:
            try:
                page = self.fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=prefix, Delimiter="/",
                                       **token, **self.fs.req_kw)
            except FileNotFoundError:  # no such bucket: as an absent directory
                return []
            for d in page.get("CommonPrefixes", []):
                out.append(FileStatus(f"{bucket}/{d['Prefix'].rstrip('/')}", 0, True, None))
            for c in page.get("Contents", []):
                if c["Key"] != prefix:
                    out.append(FileStatus(f"{bucket}/{c['Key']}", int(c.get("Size") or 0), False,
                                          to_ms(c.get("LastModified"))))
            if not page.get("IsTruncated"):
                break
            token = {"ContinuationToken": page["NextContinuationToken"]}
        return sorted(out, key=lambda st: st.path)

    def delete(self, path: str) -> bool:
        # S3 answers a DELETE of an absent key with 204 as well: only a look first tells whether it
        # existed (deleting a tag that is not there must say so, not succeed silently).
        if not self.is_file(path):
            return False
        return super().delete(path)

    def discard(self, path: str) -> None:
        """One DELETE, no look first (`delete`'s HEAD only tells whether the file was there)."""
        super().delete(path)

    def delete_dir_if_empty(self, path: str) -> bool:
        """An object store has no directories, only keys: a "directory" is gone when no key starts
        with its prefix. One LIST of at most two keys decides it (the generic listing pages through
        every key of a full directory, and s3fs's ``rmdir`` of a key then asks HEAD and LIST again
        only to fail); only a directory marker (the empty object ``<path>/`` that Hadoop's S3A and
        consoles create) costs a DELETE more. True when nothing is left under ``path``."""
        bucket, key, _ = self.fs.split_path(path)
        if not key:
            return False  # a bucket is never a table's directory to remove
        prefix = key.rstrip("/") + "/"
        listed = self.fs.call_s3("list_objects_v2", Bucket=bucket, Prefix=prefix, MaxKeys=2, **self.fs.req_kw)
        keys = [c["Key"] for c in listed.get("Contents", [])]
        # keys come in order, and the marker sorts before every key below it
        if any(k != prefix for k in keys):
            return False
        if keys:
            self.fs.call_s3("delete_object", Bucket=bucket, Key=prefix, **self.fs.req_kw)
        self.fs.invalidate_cache(path)
        return True

    def delete_many(self, paths: Any) -> int:
        """One DeleteObjects request per 1000 paths (s3fs batches)."""
        paths = list(paths)
        if not paths:
            return 0
        try:
            self.fs.rm(paths)
        except FileNotFoundError:
            for p in paths:
                self.delete(p)
        return len(paths)

    def __getstate__(self) -> dict[str, Any]:
        # Picklable (Spark ships tables to executors): the lock and the native client are rebuilt there.
        state = dict(self.__dict__)
        state.update(_native_lock=None, _native_fs=None, _native_built=False)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._native_lock = threading.Lock()

    @property
    def _native(self) -> pafs.S3FileSystem | None:
        # Built on first use: a catalog that never reads a data file (an executor deleting a
        # batch of files) never pays for a second S3 client.
        if not self._native_built:
            with self._native_lock:
                if not self._native_built:
                    self._native_fs = native_arrow_s3(self._options, self._bucket)
                    self._native_built = True
        return self._native_fs

    def open_input(self, path: str) -> pa.NativeFile:
        native = self._native
        return super().open_input(path) if native is None else native.open_input_file(path)

    def open_input_chunked(self, path: str, buffer_bytes: int) -> pa.NativeFile:
        # The native file is a RandomAccessFile with no cache of its own: each read is one ranged
        # GET of what the reader asked for
        native = self._native
        return super().open_input_chunked(path, buffer_bytes) if native is None else native.open_input_file(path)

    def open_data_file(self, path: str, file_size: int | None, buffer_bytes: int | None = None) -> pa.NativeFile:
        """A data file of at most `min_chunked_read` bytes (as the manifest says) is fetched whole
        by one GET: pyarrow's native client asks each file's size (a HEAD) when it opens it, and
        its Python binding takes no size (its C++ `OpenInputFile(FileInfo)` does, which is what
        Java's reader does with the manifest's size); a Parquet reader then asks the footer and the
        column chunks, each a GET. A file that small is one ask of a batched read anyway
        (`chunked_read_bytes`), so holding it whole keeps within what a reader holds. The bytes
        fetched must be ``file_size``: a manifest that says otherwise is damaged metadata (Java
        would look for the footer at the wrong offset and fail), `CorruptMetadataError`. Larger
        files, or no size: opened by the native client (a HEAD, then ranged GETs), and the size
        its HEAD found checked the same way."""
        if file_size is None or not 0 <= file_size <= self.min_chunked_read:
            source = super().open_data_file(path, file_size, buffer_bytes)
            if file_size is not None and source.size() != file_size:
                size = source.size()
                source.close()
                raise CorruptMetadataError(f"it is {size} bytes, its manifest says {file_size}")
            return source
        data = self.read_bytes(path)
        if len(data) != file_size:
            raise CorruptMetadataError(f"it is {len(data)} bytes, its manifest says {file_size}")
        return pa.BufferReader(data)

    def open_output(self, path: str) -> Any:
        # Writes stay on s3fs: bench/bench_s3_read.py measured the native output stream no faster
        # for big files and slower for small ones (bench/RESULTS.md).
        return super().open_output(path)

    @property
    def arrow_fs(self) -> pafs.FileSystem:
        native = self._native
        return super().arrow_fs if native is None else native


def s3_error_code(exc: BaseException) -> str | None:
    """The S3 error code (``PreconditionFailed``) or HTTP status (``412``) behind an exception:
    s3fs translates botocore's ClientError and keeps it as the cause; None when there is none."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        response = getattr(cur, "response", None)
        if isinstance(response, dict):
            code = (response.get("Error") or {}).get("Code")
            if code:
                return str(code)
            status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
            if status:
                return str(status)
        cur = cur.__cause__ or cur.__context__
    return None


# s3fs options that only tune s3fs itself: they say nothing the native filesystem needs.
_S3FS_ONLY = {"use_listings_cache", "listings_expiry_time", "max_paths", "skip_instance_cache",
              "default_block_size", "default_fill_cache", "default_cache_type", "asynchronous", "loop"}


def native_arrow_s3(options: dict[str, Any], bucket: str | None = None) -> pafs.S3FileSystem | None:
    """pyarrow's own S3 client configured from the same s3fs storage options (credentials,
    endpoint, region, retries, timeouts), or None when an option has no native equivalent: then
    data files go through s3fs like everything else, rather than through a client configured
    differently from the one the options describe. On AWS without a region in the options, the
    region is ``bucket``'s (asked once); None when that cannot be found out."""
    kwargs: dict[str, Any] = {}
    client = dict(options.get("client_kwargs") or {})
    config = dict(options.get("config_kwargs") or {})
    for name, value in options.items():
        if name in ("key", "aws_access_key_id"):
            kwargs["access_key"] = value
        elif name in ("secret", "aws_secret_access_key"):
            kwargs["secret_key"] = value
        elif name in ("token", "aws_session_token"):
            kwargs["session_token"] = value
        elif name == "anon":
            kwargs["anonymous"] = bool(value)
        elif name == "endpoint_url":
            client.setdefault("endpoint_url", value)
        elif name in ("client_kwargs", "config_kwargs") or name in _S3FS_ONLY:
            continue
        else:
            return None
    for name, value in client.items():
        if name == "endpoint_url":
            scheme, sep, rest = str(value).partition("://")
            kwargs["endpoint_override"] = rest if sep else scheme
            if sep:
                kwargs["scheme"] = scheme
        elif name == "region_name":
            kwargs["region"] = value
        else:
            return None
    for name, value in config.items():
        if name == "retries" and set(value) <= {"max_attempts", "mode"}:
            if "max_attempts" in value:
                kwargs["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=int(value["max_attempts"]))
        elif name == "connect_timeout":
            kwargs["connect_timeout"] = float(value)
        elif name == "read_timeout":
            kwargs["request_timeout"] = float(value)
        else:
            return None
    if ("access_key" in kwargs) != ("secret_key" in kwargs):
        return None  # s3fs would complete the pair from the environment; pyarrow refuses half a pair
    if "region" not in kwargs and "endpoint_override" not in kwargs:
        # pyarrow would assume the environment's region (else us-east-1) and fail on a bucket
        # elsewhere, where s3fs follows the redirect
        if not bucket:
            return None
        try:
            kwargs["region"] = pafs.resolve_s3_region(bucket)
        except (OSError, ValueError):
            return None
    return pafs.S3FileSystem(**kwargs)
