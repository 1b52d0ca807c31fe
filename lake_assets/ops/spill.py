"""Local spill files of the table writer (Paimon's ``write-buffer-spillable``).

When the write buffer is full, each bucket's rows are sorted (not merged) and written here as
one *run*: a compressed Arrow IPC file on local disk, outside the table. At `prepare_commit` the
writer merges a bucket's runs and its in-memory rows into level-0 files with a bounded-memory
k-way merge, so one commit writes one sorted level-0 file per bucket instead of one per buffer
fill. Runs keep every raw record (as Paimon's sort buffer does) because some merge engines are
not associative - partial-update with ``remove-record-on-delete`` forgets a -D once it is merged
with a later insert - so the result is exactly one merge over all of the commit's records, as
if the buffer had never filled.

Every batch of a run (and every in-memory slice fed to the merge) ends at a key boundary: the
k-way merge (`lsm.merge_reader.merge_sorted`) takes all rows up to the smallest buffered last
key, which is only complete when no key continues into an input's next batch.

Runs never reach the table directory: they live in a private `tempfile` directory that is
removed when the writer cleans up, is garbage collected, or the interpreter exits.

Where that directory is made (`spill_root`): under the ``spill_dir`` an operation is given (the
keyword of `Table.write_arrow`, `Table.new_writer`, `Table.compact`, `TableWriter`, the compaction
runners), else under ``LAKE_ASSETS_SPILL_DIR`` (one setting for the process), else - in a Spark
Python worker - under one of Spark's local directories (``SPARK_LOCAL_DIRS``, which Spark sets
for its Python workers to the executor's block-manager directories, the ones Paimon's Spark
writers spill into through their ``IOManager``), else under the system temp directory. A
directory given (keyword or variable) must exist and be a directory: an operation checks it as it
starts, before it writes anything, and raises `InvalidArgumentError` naming it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import uuid
import weakref
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from lake_assets.errors import InvalidArgumentError
from lake_assets.lsm.merge import key_change_mask
from lake_assets.lsm.sorted_sets import sorted_unique

# The process-wide spill directory (see the module docstring), and Spark's for its Python workers.
SPILL_DIR_ENV = "LAKE_ASSETS_SPILL_DIR"
SPARK_LOCAL_DIRS_ENV = "SPARK_LOCAL_DIRS"

# Uncompressed bytes per record batch in a run file, at most. A merge holds one batch per run (plus
# its output chunk), so the batch size times the fan-in bounds the merge's extra memory per bucket:
# `spill_batch_bytes` sizes batches from the options so that this is about one write buffer.
SPILL_BATCH_BYTES = 2 * 1024 * 1024
MIN_SPILL_BATCH_BYTES = 64 * 1024  # Paimon's default page size: the batch floor
MIN_BATCH_ROWS = 1024
MAX_BATCH_ROWS = 64 * 1024

# Paimon's spill codecs are zstd and lzo; Arrow IPC has zstd and lz4. Runs are private to this
# process, so the codec never affects what the table holds: lzo maps to the other fast codec.
_IPC_CODECS = {"zstd": "zstd", "lz4": "lz4", "lzo": "lz4", "none": None}


def spill_root(spill_dir: str | os.PathLike[str] | None = None) -> str | None:
    """The directory spill directories are made under: ``spill_dir``, else ``LAKE_ASSETS_SPILL_DIR``,
    else one of ``SPARK_LOCAL_DIRS`` (a Spark Python worker), else None (the system temp directory).

    Raises `InvalidArgumentError` when ``spill_dir`` or ``LAKE_ASSETS_SPILL_DIR`` is not an
    existing, writable directory: operations that may spill call it as they start, so a bad
    setting fails them before anything is written, not at the first spill mid-way."""
    if spill_dir is not None:
        if isinstance(spill_dir, bool) or not isinstance(spill_dir, (str, os.PathLike)):
            raise InvalidArgumentError(f"spill_dir must be a path, got {spill_dir!r}")
        return _checked_dir(os.fspath(spill_dir), "spill_dir")
    configured = os.environ.get(SPILL_DIR_ENV, "").strip()
    if configured:
        return _checked_dir(configured, SPILL_DIR_ENV)
    # Spark's local dirs are Spark's to create (and to delete with the executor): one of them that
    # exists, picked per process so that workers spread over several disks, as PySpark's own spill
    spark_dirs = [d for d in os.environ.get(SPARK_LOCAL_DIRS_ENV, "").split(",") if d.strip() and os.path.isdir(d)]
    if spark_dirs:
        return spark_dirs[os.getpid() % len(spark_dirs)]
    return None


def _checked_dir(path: str, source: str) -> str:
    if not path:
        raise InvalidArgumentError(f"Cannot spill: {source} is empty")
    if not os.path.exists(path):
        raise InvalidArgumentError(f"Cannot spill to {path!r} ({source}): it does not exist")
    if not os.path.isdir(path):
        raise InvalidArgumentError(f"Cannot spill to {path!r} ({source}): it is not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise InvalidArgumentError(f"Cannot spill to {path!r} ({source}): it is not writable")
    return path


def ipc_codec(name: str) -> str | None:
    """The Arrow IPC codec for a ``spill-compression`` value (None: uncompressed)."""
    return _IPC_CODECS[name.lower()]


def spill_batch_bytes(write_buffer_size: int, max_num_file_handles: int) -> int:
    """Bytes per run batch so that a merge of ``local-sort.max-num-file-handles`` runs holds about
    one ``write-buffer-size`` of batches, whatever the number of runs: the commit-time merge's
    memory is set by those two options (between `MIN_SPILL_BATCH_BYTES` and `SPILL_BATCH_BYTES`
    per batch), times the buckets merged at once (`write_spill.spill_merge_bound_bytes`).

    Batches are not made smaller to divide that among the buckets merging at once: halving them
    cost the commit-time merge of a 6.4M-row upsert about 12% more CPU (more merge steps per row),
    for memory that only the largest fan-ins (a 128M-row load: 123 runs per bucket) come near."""
    return int(min(SPILL_BATCH_BYTES, max(MIN_SPILL_BATCH_BYTES, write_buffer_size // max(1, max_num_file_handles))))


def batch_rows(table: pa.Table, batch_bytes: int = SPILL_BATCH_BYTES) -> int:
    """Rows per run batch so that a batch holds about ``batch_bytes``."""
    n = table.num_rows
    per_row = max(1, table.nbytes // max(1, n))
    return int(min(MAX_BATCH_ROWS, max(MIN_BATCH_ROWS, batch_bytes // per_row)))


def key_batches(table: pa.Table, key_names: Sequence[str], rows: int | None = None) -> Iterator[pa.Table]:
    """Zero-copy slices of a key-sorted table, about `rows` each, never splitting a key's rows."""
    n = table.num_rows
    step = rows or batch_rows(table)
    if n <= step:
        if n:
            yield table
        return
    starts = np.flatnonzero(key_change_mask(table, key_names))
    # cut at the first key start at or after every multiple of `step` (duplicates collapse)
    at = np.searchsorted(starts, np.arange(step, n, step))
    # already sorted: a sort-based unique (plain np.unique takes numpy 2.x's slow hash path)
    cuts = sorted_unique(np.append(np.where(at < len(starts), starts[np.minimum(at, len(starts) - 1)], n), n))
    prev = 0
    for cut in cuts.tolist():
        if cut > prev:
            yield table.slice(prev, cut - prev)
            prev = cut


@dataclass
class SpillStats:
    """What one writer spilled over its lifetime: counted, so the memory bound of its commit-time
    merges (one batch per merged run, `SpillDirectory.batch_bytes` each) can be checked against
    the runs actually merged, and the share of rows that took the disk round trip is known."""

    runs: int = 0  # run files written (folds included)
    rows: int = 0  # rows written to run files (a fold writes its rows again)
    file_bytes: int = 0  # compressed bytes written
    merges: int = 0  # merges of runs (commit-time merges and folds)
    max_fan_in: int = 0  # most inputs of one merge (its runs, plus the in-memory rows)

    def merged(self, fan_in: int) -> None:
        """Count one merge of ``fan_in`` inputs."""
        self.merges += 1
        self.max_fan_in = max(self.max_fan_in, fan_in)


@dataclass
class SpillRun:
    """One spilled, key-sorted and merged run of a bucket."""

    path: str
    rows: int
    file_bytes: int

    def batches(self) -> Iterator[pa.Table]:
        """The run's rows batch by batch; only the current batch is in memory (no memory map,
        so the run's pages never count towards this process's resident memory)."""
        with pa.OSFile(self.path, "rb") as f:
            reader = ipc.open_file(f)
            for i in range(reader.num_record_batches):
                yield pa.Table.from_batches([reader.get_batch(i)])


class SpillDiskFull(Exception):
    """A run would not fit ``write-buffer-spill.max-disk-size`` (`SpillDirectory.write_run` with
    ``within_budget``); its partial file is already removed. Internal: callers that spill to save
    memory catch it and go on without that run (compaction then merges more runs at once)."""


def _remove_tree(path: str) -> None:
    shutil.rmtree(path, ignore_errors=True)


class SpillDirectory:
    """The private local directory of one writer's spill runs, with its disk budget.

    The directory is created on the first spill, under ``parent`` (a `spill_root`; None: the
    system temp directory). ``weakref.finalize`` removes it if the writer is dropped without
    `cleanup` (an exception the caller did not handle, interpreter exit); only a killed process
    can leave it behind, and then only under ``parent`` (Spark removes its local directories with
    the executor).
    """

    def __init__(
        self,
        *,
        compression: str = "zstd",
        zstd_level: int = 1,
        max_disk_bytes: int | None = None,
        batch_bytes: int = SPILL_BATCH_BYTES,
        parent: str | None = None,
    ) -> None:
        self.parent = parent
        self.batch_bytes = batch_bytes  # per record batch of a run (see `spill_batch_bytes`)
        codec: pa.Codec | str | None = ipc_codec(compression)
        if codec == "zstd":
            codec = pa.Codec("zstd", compression_level=zstd_level)
        self._options = ipc.IpcWriteOptions(compression=codec)
        self.max_disk_bytes = max_disk_bytes
        self.disk_bytes = 0
        self._path: str | None = None
        self._finalizer: weakref.finalize[[str], SpillDirectory] | None = None
        self._lock = threading.Lock()  # buckets spill from a thread pool
        self.stats = SpillStats()  # cumulative over cleanups: the writer's lifetime

    @property
    def path(self) -> str | None:
        """The directory, or None before the first spill / after `cleanup`."""
        return self._path

    def _directory(self) -> str:
        with self._lock:
            if self._path is None:
                self._path = tempfile.mkdtemp(prefix="lake-assets-spill-", dir=self.parent)
                self._finalizer = weakref.finalize(self, _remove_tree, self._path)
            return self._path

    def has_room(self, nbytes: int) -> bool:
        """Whether ``nbytes`` more (an uncompressed estimate, so an upper bound) fit the budget."""
        return self.max_disk_bytes is None or self.disk_bytes + nbytes <= self.max_disk_bytes

    def write_run(
        self,
        chunks: Iterable[pa.Table],
        schema: pa.Schema,
        key_names: Sequence[str],
        *,
        rows_per_batch: int | None = None,
        within_budget: bool = False,
    ) -> SpillRun:
        """Write key-sorted chunks (whole keys each) as one run file, batch by batch, each batch
        ending at a key boundary; memory holds one batch beyond the input, not a run copy.

        Batches hold about `batch_bytes` (`batch_rows`), or about ``rows_per_batch`` rows when
        given. With ``within_budget`` the file's bytes are checked against ``max_disk_bytes`` as
        they are written and `SpillDiskFull` is raised (the partial file removed) before the
        directory exceeds it; without, the caller checks `has_room` beforehand."""
        path = os.path.join(self._directory(), f"run-{uuid.uuid4().hex}.arrow")
        rows = 0
        try:
            with pa.OSFile(path, "wb") as sink, ipc.new_file(sink, schema, options=self._options) as writer:
                for chunk in chunks:
                    if chunk.num_rows == 0:
                        continue
                    if chunk.schema != schema:
                        chunk = chunk.cast(schema)
                    step = rows_per_batch or batch_rows(chunk, self.batch_bytes)
                    for part in key_batches(chunk, key_names, step):
                        # one record batch per part: a batch must not end inside a key
                        writer.write_batch(part.combine_chunks().to_batches()[0])
                        if within_budget and not self.has_room(sink.tell()):
                            raise SpillDiskFull(f"spill run {path} exceeds write-buffer-spill.max-disk-size")
                    rows += chunk.num_rows
                    # written: the loop variables would hold this chunk while the next is made
                    del chunk, part
        except BaseException:
            _unlink(path)
            raise
        size = os.path.getsize(path)
        if within_budget and not self.has_room(size):  # the footer written at close tipped it
            _unlink(path)
            raise SpillDiskFull(f"spill run {path} exceeds write-buffer-spill.max-disk-size")
        with self._lock:
            self.disk_bytes += size
            self.stats.runs += 1
            self.stats.rows += rows
            self.stats.file_bytes += size
        return SpillRun(path, rows, size)

    def count_merge(self, fan_in: int) -> None:
        """Count a merge of ``fan_in`` inputs into `stats` (merges run in a thread pool)."""
        with self._lock:
            self.stats.merged(fan_in)

    def delete(self, runs: Iterable[SpillRun]) -> None:
        """Remove runs that were merged into files (or are being dropped)."""
        freed = 0
        for run in runs:
            _unlink(run.path)
            freed += run.file_bytes
        with self._lock:
            self.disk_bytes -= freed

    def cleanup(self) -> None:
        """Remove the directory and every run in it."""
        with self._lock:
            path, finalizer = self._path, self._finalizer
            self._path = None
            self._finalizer = None
            self.disk_bytes = 0
        if finalizer is not None:
            finalizer()  # runs _remove_tree once and disarms the exit hook
        elif path is not None:
            _remove_tree(path)


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
