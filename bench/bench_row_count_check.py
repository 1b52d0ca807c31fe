"""What checking each data file's ``_ROW_COUNT`` against the file costs a read (session 18).

A read that sizes something before it decodes - a deletion vector's keep mask, a partition-only
projection - now takes the file's own count first (`lake_assets.ops.file_rows.checked_row_count`:
Parquet's footer, which the read then takes from the footer cache). This bench reads a
deletion-vector append table of many small files (every file has a vector) two ways in
interleaved rounds in one process: as the code is ("checked"), and with that check replaced by
the manifest's count, what the reader did before ("trusted"); it reports the CPU-time ratio
checked/trusted of a whole read (``to_arrow()``) and of a partition-only read.

    .venv/bin/python bench/bench_row_count_check.py --files 200 --rows 2000 --rounds 15
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa

import lake_assets.ops.read as read_module
from lake_assets import Catalog

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string()), ("dt", pa.string())])


def _build(root: str, files: int, rows: int) -> Any:
    catalog = Catalog(root)
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["dt"],
                             options={"bucket": "-1", "deletion-vectors.enabled": "true",
                                      "snapshot.num-retained.max": "1000"})
    for i in range(files):
        ks = list(range(i * rows, (i + 1) * rows))
        t.write_arrow(pa.table({"k": ks, "v": [f"v{k % 97}" for k in ks], "dt": ["d"] * rows}, schema=SCHEMA))
    t.delete_where([("v", "=", "v3")])  # about 1% of every file's rows: a vector per file
    return t.refresh()


def _cpu(call: Callable[[], object]) -> float:
    start = time.process_time()
    call()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    checked = read_module.checked_row_count
    trusted = lambda store, path, meta, **_: meta.row_count  # noqa: E731 - the reader before session 18
    with tempfile.TemporaryDirectory() as root:
        t = _build(root, args.files, args.rows)
        reads = {"whole": lambda: t.to_arrow(), "partition-only": lambda: t.to_arrow(columns=["dt"])}
        expected = {name: read().num_rows for name, read in reads.items()}
        times: dict[str, dict[str, list[float]]] = {n: {"checked": [], "trusted": []} for n in reads}
        for r in range(args.rounds):
            order = ("checked", "trusted") if r % 2 == 0 else ("trusted", "checked")
            for name, read in reads.items():
                for way in order:
                    read_module.checked_row_count = checked if way == "checked" else trusted  # type: ignore[assignment]
                    times[name][way].append(_cpu(read))
        read_module.checked_row_count = checked  # type: ignore[assignment]
        assert {name: read().num_rows for name, read in reads.items()} == expected
    out: dict[str, Any] = {"files": args.files, "rows_per_file": args.rows, "rounds": args.rounds}
    for name, ways in times.items():
        c, u = statistics.median(ways["checked"]), statistics.median(ways["trusted"])
        out[name] = {"checked_cpu_ms": round(c * 1000, 2), "trusted_cpu_ms": round(u * 1000, 2),
                     "cpu_ratio": round(c / u, 3),
                     "per_file_us": round((c - u) / args.files * 1e6, 1)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
