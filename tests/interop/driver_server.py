"""The test side of ``driver_forkserver.py``: one fork server per python and preload, per test session.

:meth:`DriverForkServer.call` runs a driver script in a child the server forks, with this
process's environment and working directory at the time of the call, and returns what
``subprocess.run`` would have: the exit code, stdout and stderr. A call that outlives its timeout
kills the server and its child (the next call starts a new server) and raises ``TimeoutError``
with the child's stderr so far.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, ClassVar

SERVER = Path(__file__).with_name("driver_forkserver.py")
# What the drivers import: the server imports these once, before it forks (about a second of CPU
# per call otherwise). None of them starts a worker pool on import.
PRELOAD = (
    "pyarrow",
    "pyarrow.dataset",
    "pandas",
    "polars",
    "pypaimon",
    "pypaimon.catalog.catalog",
    "pypaimon.read.read_builder",
    "pypaimon.schema.data_types",
    "pypaimon_rust.datafusion",
)


class DriverForkServer:
    """A ``driver_forkserver.py`` process under one python: isolated (``-I``: no PYTHONPATH, no user
    site, the pypaimon drivers) unless ``isolated=False`` (the environment of the first call then
    decides ``sys.path``, e.g. a ``PYTHONPATH`` to the repository)."""

    _servers: ClassVar[dict[tuple[Path, tuple[str, ...], bool], DriverForkServer]] = {}
    _servers_lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def for_python(cls, python: Path, preload: Sequence[str] = PRELOAD, *, isolated: bool = True
                   ) -> DriverForkServer:
        """The session's server for ``python`` and ``preload`` (started on its first call)."""
        key = (python, tuple(preload), isolated)
        with cls._servers_lock:
            if not cls._servers:
                atexit.register(cls.close_all)
            server = cls._servers.get(key)
            if server is None:
                server = cls._servers[key] = cls(python, preload, isolated=isolated)
            return server

    @classmethod
    def close_all(cls) -> None:
        with cls._servers_lock:
            for server in cls._servers.values():
                server.close()
            cls._servers.clear()

    def __init__(self, python: Path, preload: Sequence[str] = PRELOAD, *, isolated: bool = True) -> None:
        self.python = python
        self.preload = tuple(preload)
        self.isolated = isolated
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: str | None = None

    def _start(self, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
        cmd = [str(self.python), *(["-I"] if self.isolated else []), str(SERVER)]
        for name in self.preload:
            cmd += ["--preload", name]
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(env),
                                start_new_session=True)
        hello = self._stdout(proc).readline()
        if not hello:
            code = proc.wait()
            raise AssertionError(f"fork server {cmd} exited (rc {code}) before it was ready")
        self._workdir = json.loads(hello)["workdir"]
        return proc

    @staticmethod
    def _stdout(proc: subprocess.Popen[bytes]) -> IO[bytes]:
        assert proc.stdout is not None
        return proc.stdout

    def call(self, script: Path, argv: Sequence[str], env: Mapping[str, str], *, timeout: float,
             cwd: str | None = None) -> tuple[int, str, str]:
        """Run ``script argv`` as its own process in ``cwd`` (default: ours); ``(exit code, stdout, stderr)``."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start(env)
            proc = self._proc
            assert proc.stdin is not None
            request = {"script": str(script), "argv": list(argv), "env": dict(env), "cwd": cwd or os.getcwd()}
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            out = self._stdout(proc)
            ready, _, _ = select.select([out], [], [], timeout)
            line = out.readline() if ready else b""
            if not line:
                stderr = self._child_stderr()
                self._kill()
                if not ready:
                    raise TimeoutError(f"stderr:\n{stderr}")
                return -1, "", f"fork server {self.python} exited during the call\n{stderr}"
            reply = json.loads(line)
            return int(reply["rc"]), reply["stdout"], reply["stderr"]

    def _child_stderr(self) -> str:
        if self._workdir is None:
            return ""
        try:
            return Path(self._workdir, "stderr").read_text(errors="replace")
        except OSError:
            return ""

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the server and the child it forked
            proc.wait()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def close(self) -> None:
        """Let the server finish (it exits when its stdin closes); kill it if it does not."""
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            assert proc.stdin is not None
            proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            self._kill()
