"""pypaimon side of ``bench_core.py``: the same steps, timed inside this process.

Runs under ``.venv-paimon/bin/python`` only (pypaimon pins an old pyarrow); never imports
``lake_assets``. Inputs and the merged read results travel as Arrow IPC stream files, and the
timings are printed as one JSON object on stdout, so pypaimon's import time is not measured.

    pypaimon_worker.py --initial a.arrow --updates b.arrow --repeat 3 --workdir DIR
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from typing import Any

import pyarrow as pa

TABLE = "bench.core"


def read_ipc(path: str) -> pa.Table:
    """Read an Arrow IPC stream file."""
    with pa.ipc.open_stream(path) as reader:
        return reader.read_all()


def write_ipc(table: pa.Table, path: str) -> None:
    """Write ``table`` as an Arrow IPC stream file."""
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def create_table(warehouse: str, schema: pa.Schema, primary_key: str, bucket: int) -> Any:
    """A fresh PK table in a new filesystem-catalog warehouse; returns the catalog."""
    from pypaimon import CatalogFactory, Schema

    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("bench", True)
    paimon_schema = Schema.from_pyarrow_schema(
        schema, primary_keys=[primary_key], options={"bucket": str(bucket)}
    )
    catalog.create_table(TABLE, paimon_schema, False)
    return catalog


def write_commit(table: Any, data: pa.Table) -> float:
    """One batch write + commit; returns the elapsed seconds."""
    start = time.perf_counter()
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    commit = builder.new_commit()
    try:
        writer.write_arrow(data)
        commit.commit(writer.prepare_commit())
    finally:
        writer.close()
        commit.close()
    return time.perf_counter() - start


def merged_read(table: Any) -> tuple[pa.Table, float]:
    """Plan and read every split (merge-on-read); returns the rows and the elapsed seconds."""
    start = time.perf_counter()
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    result = builder.new_read().to_arrow(splits)
    return result, time.perf_counter() - start


def run_once(workdir: str, initial: pa.Table, updates: pa.Table, bucket: int, out: str) -> dict[str, float]:
    """Write, update and read back in a fresh warehouse; the read result goes to ``out``."""
    with tempfile.TemporaryDirectory(prefix="pypaimon-wh-", dir=workdir) as warehouse:
        catalog = create_table(warehouse, initial.schema, initial.schema.names[0], bucket)
        # A fresh table handle per step (outside the timings), as a new job would get.
        write_s = write_commit(catalog.get_table(TABLE), initial)
        update_s = write_commit(catalog.get_table(TABLE), updates)
        result, read_s = merged_read(catalog.get_table(TABLE))
    write_ipc(result, out)
    return {"write_s": write_s, "update_s": update_s, "read_s": read_s, "read_rows": result.num_rows}


def main(argv: list[str] | None = None) -> int:
    """Entry point: prints ``{"runs": [...], "peak_rss_kib": ..., "versions": {...}}``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--initial", required=True, help="IPC stream of the new keys")
    parser.add_argument("--updates", required=True, help="IPC stream of the updated keys")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--bucket", type=int, default=2)
    parser.add_argument("--workdir", required=True, help="scratch dir for warehouses and results")
    args = parser.parse_args(argv)

    import importlib.metadata

    import pypaimon  # noqa: F401  (imported before any timing)

    initial = read_ipc(args.initial)
    updates = read_ipc(args.updates)
    runs = []
    for i in range(args.repeat):
        out = os.path.join(args.workdir, f"pypaimon-result-{i}.arrow")
        run = run_once(args.workdir, initial, updates, args.bucket, out)
        run["result"] = out
        runs.append(run)
    print(json.dumps({
        "runs": runs,
        "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "versions": {
            "python": sys.version.split()[0],
            "pypaimon": importlib.metadata.version("pypaimon"),
            "pyarrow": pa.__version__,
        },
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
