"""Fills a small disk with parallel level-0 flushes and reports what happened, as JSON.

Usage: python enospc_worker.py WAREHOUSE ATTEMPTS

Runs in its own process so that a crash (the interpreter dying on SIGSEGV) is seen by the test
as a return code instead of taking pytest down with it.
"""

from __future__ import annotations

import errno
import json
import os
import sys

import numpy as np
import pyarrow as pa

from lake_assets import Catalog
from lake_assets.errors import LakeError


def _files(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


def main() -> None:
    warehouse, attempts = sys.argv[1], int(sys.argv[2])
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    # An append table with four partitions: every flush writes four files on four threads.
    table = catalog.create_table(
        "db.t", pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.string())]), partition_keys=["p"]
    )
    n = 300_000
    rng = np.random.default_rng(7)
    small = pa.table({"k": np.arange(100, dtype=np.int64), "p": [str(i % 4) for i in range(100)],
                      "v": ["x"] * 100})
    table.write_arrow(small)
    big = pa.table({"k": np.arange(n, dtype=np.int64), "p": [str(i % 4) for i in range(n)],
                    "v": [rng.bytes(16).hex() for _ in range(n)]})
    table.write_arrow(big)  # fits: about 5 of the 8 MiB
    before = _files(warehouse)
    errors = []
    for _ in range(attempts):
        try:
            table.write_arrow(big)
            errors.append(None)
        except (OSError, LakeError) as exc:
            errors.append({"type": type(exc).__name__, "enospc": getattr(exc, "errno", None) == errno.ENOSPC,
                           "message": str(exc)})
    reread = Catalog(warehouse).get_table("db.t")
    print(json.dumps({"errors": errors, "rows": reread.to_arrow().num_rows,
                      "snapshot": reread.latest_snapshot().id, "files_before": before,
                      "files_after": _files(warehouse)}))


if __name__ == "__main__":
    main()
