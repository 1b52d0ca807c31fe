"""A `PipesSubprocessClient` that also keeps the job's stdout (its one-line JSON summary).

The stock client either forwards stdout (then it is lost to us) or pipes it without reading, which
blocks a chatty process once the pipe buffer fills. This one sends stdout to a temporary file,
echoes it into the step's captured logs afterwards, and stops a job that outlives its timeout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg


@dataclass(frozen=True)
class CompletedJob:
    """What a finished subprocess left: exit code (None on timeout), stdout, and what it reported
    through Pipes (materializations and check results; custom messages)."""

    returncode: int | None
    stdout: str
    results: Sequence[dg.MaterializeResult | dg.AssetCheckResult]
    timed_out: bool = False
    custom_messages: Sequence[Any] = ()


class CapturingPipesSubprocessClient(dg.PipesSubprocessClient):
    """Runs a command in a Pipes session; stdout is captured, stderr forwarded."""

    def __init__(self, *, timeout_seconds: float, env: Mapping[str, str] | None = None, cwd: str | None = None):
        super().__init__(env=env, cwd=cwd)
        self.timeout_seconds = timeout_seconds

    def run_capturing(
        self,
        *,
        context: dg.AssetExecutionContext | dg.OpExecutionContext,
        command: Sequence[str],
        env: Mapping[str, str] | None = None,
        extras: dict | None = None,
    ) -> CompletedJob:
        """Run to completion (or timeout); never raises for a non-zero exit: callers decide."""
        timed_out = False
        with tempfile.TemporaryFile(mode="w+b") as out, dg.open_pipes_session(
            context=context,
            context_injector=self.context_injector,
            message_reader=self.message_reader,
            extras=extras,
        ) as session:
            process = subprocess.Popen(
                list(command),
                cwd=self.cwd,
                env={**os.environ, **self.env, **(env or {}), **session.get_bootstrap_env_vars()},
                stdout=out,
                stderr=None,
                start_new_session=True,
            )
            try:
                process.wait(timeout=self.timeout_seconds)
            except subprocess.TimeoutExpired:
                timed_out = True
                context.log.error(f"Job exceeded {self.timeout_seconds:.0f}s; stopping it")
                _stop(process, self.termination_timeout_seconds)
            except (dg.DagsterExecutionInterruptedError, KeyboardInterrupt):
                context.log.info("[pipes] execution interrupted, stopping the job")
                _stop(process, self.termination_timeout_seconds)
                raise
            out.seek(0)
            stdout = out.read().decode(errors="replace")
        if stdout:
            sys.stdout.write(stdout)  # into the step's captured stdout, as a forwarded stream would be
            sys.stdout.flush()
        return CompletedJob(
            returncode=None if timed_out else process.returncode,
            stdout=stdout,
            results=list(session.get_results()),
            timed_out=timed_out,
            custom_messages=list(session.get_custom_messages()),
        )


def _stop(process: subprocess.Popen, grace_seconds: float) -> None:
    """SIGINT the job's process group (spark-submit starts a JVM and Python workers), then SIGKILL."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace_seconds)
            return
        except subprocess.TimeoutExpired:
            continue
