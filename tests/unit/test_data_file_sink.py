"""Local data files go through a write buffer (issue 17 §1, round 6): the bytes are those of an
unbuffered sink, the manifest's file size is the file's, and a write the disk refuses at the
last flush (ENOSPC, here ``/dev/full``) fails the file, removes it and leaks no descriptor."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lake_assets.formats.data_file import DataFileWriter
from lake_assets.io.local import LocalFileIO
from lake_assets.io.memory import MemoryFileIO

SCHEMA = pa.schema([("k", pa.int64()), ("name", pa.string()), ("status", pa.string()), ("v", pa.float64())])


def _merged_rows(n: int) -> pa.Table:
    """Rows as a flush hands them to a file writer: sorted, merged, with system columns."""
    rng = np.random.default_rng(11)
    return pa.table({
        "k": np.arange(n), "name": [f"n{x:010d}" for x in rng.permutation(n)],
        "status": rng.choice(["new", "open", "done"], n), "v": rng.standard_normal(n),
        "_SEQUENCE_NUMBER": np.arange(n), "_VALUE_KIND": np.zeros(n, np.int8),
    })


class _FullDisk(LocalFileIO):
    """A local file IO whose new files are ``/dev/full``: every write that reaches it fails."""

    def open_output(self, path: str) -> pa.NativeFile:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).touch()  # the file exists, as a real one would, until the writer removes it
        return pa.OSFile("/dev/full", "wb")


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_buffered_local_files_are_the_bytes_of_an_unbuffered_sink(catalog, tmp_path: Path) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    rows = _merged_rows(50_000)
    local = DataFileWriter(LocalFileIO(), str(tmp_path / "bucket-0"), t.store.schema, t.store.data_file_config())
    memory = DataFileWriter(MemoryFileIO(), "memory://sink-test/bucket-0", t.store.schema,
                            t.store.data_file_config())
    (ours,) = local.write(rows, level=0)
    (plain,) = memory.write(rows, level=0)
    data = (tmp_path / "bucket-0" / ours.file_name).read_bytes()
    assert data == MemoryFileIO().read_bytes(f"memory://sink-test/bucket-0/{plain.file_name}")
    assert ours.file_size == len(data) == plain.file_size
    assert (ours.value_stats, ours.key_stats, ours.row_count) == (plain.value_stats, plain.key_stats, 50_000)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_failed_last_flush_removes_the_file_and_closes_it(catalog, tmp_path: Path) -> None:
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    bucket = tmp_path / "bucket-0"
    writer = DataFileWriter(_FullDisk(), str(bucket), t.store.schema, t.store.data_file_config())
    before = _open_fds()
    # small enough to stay in the buffer until the footer is written: the flush at close fails
    with pytest.raises(OSError, match="No space left on device"):
        writer.write(_merged_rows(1000), level=0)
    assert list(bucket.iterdir()) == []
    assert _open_fds() == before
