"""A small, real tmpfs for tests of a full disk (ENOSPC), mounted per test.

Mounting needs root. Off CI a non-root run skips; under ``CI=true`` the tests always run, so a
CI runner that cannot mount fails them instead of silently skipping.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _on_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


@contextmanager
def small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    """Mount a tmpfs of ``size`` (e.g. ``"8m"``) at ``where`` for the duration of the block."""
    if os.geteuid() != 0 and not _on_ci():
        pytest.skip("mounting a tmpfs needs root (set CI=true to force these tests)")
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture
def tmpfs_8m(tmp_path: Path) -> Iterator[Path]:
    """An empty 8 MiB tmpfs directory."""
    with small_tmpfs(tmp_path / "tmpfs", "8m") as mnt:
        yield mnt
