"""Keeping the job's stderr apart from its stdout under spark-submit, so stdout is only the summary."""

from __future__ import annotations

import os
import stat
import sys


def separate_stderr() -> None:
    """Under spark-submit, send this process's stderr to spark-submit's stderr.

    spark-submit runs the Python driver with stderr merged into stdout, which would put every log
    line and warning next to the JSON summary. When fd 1 and fd 2 are the same pipe, fd 2 is pointed
    at the launching JVM's own stderr (Linux ``/proc``); anything else is left alone.
    """
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return
    try:
        out, err = os.fstat(1), os.fstat(2)
        if (out.st_dev, out.st_ino) != (err.st_dev, err.st_ino):
            return
        parent_err = f"/proc/{os.getppid()}/fd/2"
        target = os.stat(parent_err)
        if (target.st_dev, target.st_ino) == (out.st_dev, out.st_ino):
            return
        if stat.S_ISREG(target.st_mode) and not _opened_for_append(os.getppid(), 2):
            # `2> file`: the JVM writes at its own offset of that file, which our writes (through
            # another open file description) do not advance, so it would overwrite our lines. Keep
            # them in the merged stream instead: nothing is lost, the summary stays the last line.
            return
        fd = os.open(parent_err, os.O_WRONLY | os.O_APPEND)
    except OSError:
        return
    sys.stderr.flush()
    os.dup2(fd, 2)
    os.close(fd)


def _opened_for_append(pid: int, fd: int) -> bool:
    """Whether ``pid``'s descriptor ``fd`` was opened with O_APPEND (``2>>``), from /proc fdinfo."""
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}") as info:
            for line in info:
                if line.startswith("flags:"):
                    return bool(int(line.split()[1], 8) & os.O_APPEND)
    except (OSError, ValueError, IndexError):
        pass
    return False
