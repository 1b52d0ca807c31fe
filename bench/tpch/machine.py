"""The machine and software versions a run reports."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def _proc_field(path: str, key: str) -> str:
    try:
        with open(path) as fh:
            return next((line.split(":", 1)[1].strip() for line in fh if line.startswith(key)), "?")
    except OSError:
        return "?"


def host() -> dict[str, str]:
    """CPU count, RAM, CPU model (Linux /proc) and the kernel, as separate fields."""
    mem = _proc_field("/proc/meminfo", "MemTotal").split()
    ram = f"{int(mem[0]) / 1024**2:.1f} GiB" if mem and mem[0].isdigit() else "?"
    return {"nproc": str(os.cpu_count()), "ram": ram, "cpu": _proc_field("/proc/cpuinfo", "model name"),
            "os": f"{platform.system()} {platform.release()}"}


def describe() -> str:
    """``2 CPUs (model), 23.5 GiB RAM, Linux 6.x``."""
    h = host()
    return f"{h['nproc']} CPUs ({h['cpu']}), {h['ram']} RAM, {h['os']}"


def git_state() -> str:
    """Short commit, plus a digest of any uncommitted change to lake_assets/ (read-only git commands),
    so that two states compare equal only when the code is the same."""
    try:
        head = subprocess.run(["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        diff = subprocess.run(["git", "-C", str(REPO_ROOT), "diff", "HEAD", "--", "lake_assets"],
                              capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return f"{head} + uncommitted changes {hashlib.sha1(diff).hexdigest()[:8]}" if diff else head


def versions(extra: dict[str, str] | None = None) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("lake_assets", "pyarrow", "numpy", "deltalake", "duckdb", "polars", "pyspark", "tpchgen-cli"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    out["lake_assets"] = f"{out.get('lake_assets', '?')} ({git_state()})"
    out.update(extra or {})
    return out
