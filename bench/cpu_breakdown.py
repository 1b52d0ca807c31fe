"""CPU per part of a write, measured without a profiler (for `bench_write_limit.py --breakdown`).

cProfile inflates Python-heavy code several times over against C kernels (a 7 µs BinaryRow row
shows as ~40 µs), which made round 3 of issue 17 §1 put "2.5 ms of Python per data file" where
~0.5 ms is. Here each listed function is wrapped to add the calling thread's CPU time
(`time.thread_time`) to its total, with the write path's thread pools run inline on the calling
thread so that every part's CPU is seen. Nested parts count in their callers too.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from typing import Any

# (module, attribute path) of the parts; a function imported by name is wrapped where it is used
WRITE_PARTS: list[tuple[str, str]] = [
    ("lake_assets.table", "Table.write_arrow"),
    ("lake_assets.ops.write", "conform"),
    ("lake_assets.ops.bucket_router", "route"),
    ("lake_assets.ops.route", "partition_groups"),
    ("lake_assets.ops.route", "_fixed_buckets"),
    ("lake_assets.ops.route", "_merge_order"),
    ("lake_assets.ops.route", "_gather"),
    ("lake_assets.ops.level0_flush", "sort_and_merge"),
    ("lake_assets.formats.rolling_writer", "RollingFileWriter.write"),
    ("lake_assets.formats.parquet_format", "_ParquetWriter.write"),
    ("lake_assets.formats.rolling_writer", "_OpenFile.__init__"),
    ("lake_assets.formats.data_file", "dictionary_pays"),
    ("lake_assets.io.local", "LocalFileIO.open_output"),
    ("lake_assets.formats.parquet_format", "_ParquetWriter.__init__"),
    ("lake_assets.formats.rolling_writer", "RollingFileWriter._account"),
    ("lake_assets.formats.rolling_writer", "RollingFileWriter._finish"),
    ("lake_assets.formats.parquet_format", "_ParquetWriter.close"),
    ("lake_assets.ops.bucket_router", "BucketRouter.restore"),
    ("lake_assets.ops.commit", "TableCommitter.commit"),
    ("lake_assets.store.manifest_io", "encode_manifest_entries"),
    ("lake_assets.store.manifest_io", "encode_manifest_list"),
]
# (module, executor class) that run the write path's parallel parts
POOL_MODULES = (("lake_assets.ops.write", "KeptThreadPool"), ("lake_assets.ops.route", "KeptThreadPool"),
                ("lake_assets.store.manifest_io", "KeptThreadPool"))


class InlineExecutor(Executor):
    """An executor that runs each task at once on the calling thread."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the caller through the future, as a pool would
            future.set_exception(exc)
        return future


@contextlib.contextmanager
def _patched(owner: Any, name: str, value: Any) -> Iterator[None]:
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


@contextlib.contextmanager
def cpu_by_part(parts: list[tuple[str, str]] = WRITE_PARTS) -> Iterator[dict[str, float]]:
    """Within the block, the pools run inline and the counter adds up each part's CPU seconds."""
    totals = {path: 0.0 for _, path in parts}  # in the parts' order
    with contextlib.ExitStack() as stack:
        for module, executor in POOL_MODULES:
            stack.enter_context(_patched(importlib.import_module(module), executor, InlineExecutor))
        for module, path in parts:
            owner: Any = importlib.import_module(module)
            *outer, name = path.split(".")
            for attr in outer:
                owner = getattr(owner, attr)
            stack.enter_context(_patched(owner, name, _timed(getattr(owner, name), path, totals)))
        yield totals


def _timed(fn: Callable[..., Any], label: str, totals: dict[str, float]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            totals[label] += time.thread_time() - start
    return wrapper
