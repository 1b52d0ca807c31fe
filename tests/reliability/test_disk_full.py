"""A disk that fills during the parallel level-0 flush: a clean error, never a crash (real tmpfs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.reliability.tmpfs import tmpfs_8m  # noqa: F401 - the fixture

WORKER = Path(__file__).with_name("enospc_worker.py")
REPO = Path(__file__).resolve().parents[2]


def test_enospc_in_parallel_flush_is_an_error_and_changes_nothing(tmpfs_8m: Path) -> None:  # noqa: F811
    # Before the fix about half of the failing flushes killed the interpreter with SIGSEGV; twelve
    # attempts in one process made the crash all but certain.
    proc = subprocess.run(
        [sys.executable, str(WORKER), str(tmpfs_8m / "wh"), "12"],
        capture_output=True, text=True, timeout=600, cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, f"worker died with {proc.returncode}: {proc.stderr[-3000:]}"
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(report["errors"]) == 12
    for err in report["errors"]:
        assert err is not None and err["enospc"], err  # the real cause, not a generic failure
    assert report["snapshot"] == 2 and report["rows"] == 300_100  # nothing committed, still readable
    # every file a failed flush started was removed again
    assert report["files_after"] == report["files_before"]
