"""`LocalFileIO` writes a new file through its descriptor (``os.open``/``os.write``/``os.close``):
every byte lands also when the kernel takes fewer at a time, a missing directory is made, and a
failed write leaves no descriptor open."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from lake_assets.io import local
from lake_assets.io.local import LocalFileIO


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_short_writes_still_write_every_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    calls = []

    def three_at_a_time(fd: int, data: bytes | memoryview) -> int:
        calls.append(len(data))
        return real_write(fd, bytes(data[:3]))

    monkeypatch.setattr(local.os, "write", three_at_a_time)
    data = bytes(range(256)) * 4
    fio = LocalFileIO()
    fio.write_bytes(str(tmp_path / "a" / "f"), data)  # its directory is made on the way
    fio.overwrite_atomic(str(tmp_path / "hint"), data[:10])
    monkeypatch.undo()
    assert (tmp_path / "a" / "f").read_bytes() == data
    assert (tmp_path / "hint").read_bytes() == data[:10]
    assert len(calls) == -(-len(data) // 3) + -(-10 // 3)  # one call per 3 bytes, none after the last


def test_a_failed_write_raises_and_closes_its_descriptor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def disk_full(fd: int, data: bytes | memoryview) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    before = _open_descriptors()
    monkeypatch.setattr(local.os, "write", disk_full)
    with pytest.raises(OSError) as err:
        LocalFileIO().write_bytes(str(tmp_path / "f"), b"data")
    monkeypatch.undo()
    assert err.value.errno == errno.ENOSPC
    assert _open_descriptors() == before


def test_an_existing_file_is_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"a longer earlier content")
    LocalFileIO().write_bytes(str(path), b"short")
    assert path.read_bytes() == b"short"
