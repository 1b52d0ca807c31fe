"""What the three system columns of a primary-key data file cost to encode, by encoding (issue 17 §1).

    PYTHONPATH=. .venv/bin/python bench/bench_system_columns.py [--rows 250000] [--rounds 40]

One load file of `bench_write_limit.py`'s table (rows sorted by key: ``_KEY_id``, ``_SEQUENCE_NUMBER``
a consecutive range, ``_VALUE_KIND`` all 0, then the 7 data columns) is encoded into memory with our
Parquet options (`lake_assets.formats.data_file`: zstd level 1, 1 MiB pages, dictionaries on
``_VALUE_KIND``, the partition and the 5-value string), whole and with one change at a time to the
system columns: each left out, or written another way (DELTA_BINARY_PACKED, no dictionary, no
codec). Variants alternate within each round (the order rotates), CPU time of this process per
encode (`time.process_time`), median over the rounds; the bytes each variant's file takes are
printed too. What Paimon Java 0.9 can read of them is not measured here: its vectorized reader
decodes PLAIN and dictionary pages only (`AbstractColumnReader.prepareNewPage`), which
tests/unit/test_data_file_encoding.py pins for our files.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.bench_write_limit import KEY, PART, _file_layout, make_rows  # noqa: E402

SYSTEM = [f"_KEY_{KEY}", "_SEQUENCE_NUMBER", "_VALUE_KIND"]
DICTIONARY = ["_VALUE_KIND", PART, "status"]


def _encode(rows: pa.Table, **changes: object) -> int:
    """Bytes of ``rows`` encoded with our options, ``changes`` applied to pq.ParquetWriter's."""
    kwargs: dict[str, object] = {"compression": "zstd", "compression_level": 1, "data_page_size": 1 << 20,
                                 "use_dictionary": [c for c in DICTIONARY if c in rows.column_names],
                                 "write_statistics": True, "store_decimal_as_integer": True, **changes}
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, rows.schema, **kwargs) as writer:
        writer.write_table(rows, row_group_size=rows.num_rows)
    return len(sink.getvalue())


def variants(rows: pa.Table) -> dict[str, Callable[[], int]]:
    data_only = rows.drop_columns(SYSTEM)
    per_column = {c: "zstd" for c in rows.column_names}
    out: dict[str, Callable[[], int]] = {
        "ours (10 columns)": lambda: _encode(rows),
        "data columns only (7)": lambda: _encode(data_only),
    }
    for c in SYSTEM:
        out[f"without {c}"] = lambda c=c: _encode(rows.drop_columns([c]))
    for c in ("_SEQUENCE_NUMBER", f"_KEY_{KEY}"):
        out[f"{c} DELTA_BINARY_PACKED"] = lambda c=c: _encode(
            rows, use_dictionary=[d for d in DICTIONARY if d != c], column_encoding={c: "DELTA_BINARY_PACKED"})
        out[f"{c} without codec"] = lambda c=c: _encode(rows, compression={**per_column, c: "none"},
                                                        compression_level=None)
    out["_VALUE_KIND PLAIN (no dictionary)"] = lambda: _encode(
        rows, use_dictionary=[d for d in DICTIONARY if d != "_VALUE_KIND"])
    out["_VALUE_KIND without codec"] = lambda: _encode(
        rows, compression={**per_column, "_VALUE_KIND": "none"}, compression_level=None)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=250_000, help="rows of the file (a load's file: 2M / 8)")
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(17)
    ids = np.sort(rng.permutation(args.rows * 8)[: args.rows].astype(np.int64) * 3 + 1_000_001)
    rows = _file_layout(make_rows(rng, ids, 0), None)  # sorted keys, consecutive sequence, all inserts
    rows = rows.set_column(rows.schema.get_field_index(PART), PART, pa.array(["2024-01-01"] * args.rows))
    ways = variants(rows)
    sizes = {name: fn() for name, fn in ways.items()}  # one warm-up each
    times: dict[str, list[float]] = {name: [] for name in ways}
    names = list(ways)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            start = time.process_time()
            ways[name]()
            times[name].append(time.process_time() - start)
    base = statistics.median(times["ours (10 columns)"])
    print(f"{args.rows} rows, {args.rounds} rounds; CPU ms per encode (median), vs ours; file bytes")
    print("| variant | CPU ms | vs ours | bytes |")
    print("|---|---:|---:|---:|")
    for name in names:
        m = statistics.median(times[name])
        print(f"| {name} | {m * 1000:.2f} | {m / base:.3f}x | {sizes[name]:,} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
