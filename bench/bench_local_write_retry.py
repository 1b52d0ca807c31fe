"""CPU cost of `LocalFileIO`'s directory retry (`in_directory`) against an older `local.py`.

Usage: ``python bench/bench_local_write_retry.py <old local.py>`` (e.g. from
``git show 457313d:lake_assets/io/local.py > /tmp/local_base.py``). Alternates the two, six runs
each of 3000 × (``write_bytes`` of 64 bytes into one of 8 directories + ``overwrite_atomic`` of a
hint), and prints the median CPU seconds (``time.process_time``) of each.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
import time
from types import ModuleType

import lake_assets.io.local as new


def _load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("local_base", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(module: ModuleType, n: int = 3000) -> float:
    directory = tempfile.mkdtemp()
    fio = module.LocalFileIO()
    start = time.process_time()
    for i in range(n):
        fio.write_bytes(f"{directory}/b{i % 8}/f{i}", b"x" * 64)
        fio.overwrite_atomic(f"{directory}/h{i % 8}/LATEST", b"1")
    spent = time.process_time() - start
    shutil.rmtree(directory)
    return spent


def main() -> None:
    base = _load(sys.argv[1])
    runs: dict[str, list[float]] = {"base": [], "new": []}
    for r in range(6):
        order = [("base", base), ("new", new)] if r % 2 == 0 else [("new", new), ("base", base)]
        for name, module in order:
            runs[name].append(_run(module))
    for name, values in runs.items():
        values.sort()
        print(name, "median CPU s:", round(values[len(values) // 2], 4), [round(v, 4) for v in values])


if __name__ == "__main__":
    main()
