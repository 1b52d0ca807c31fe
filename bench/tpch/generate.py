"""TPC-H ``lineitem`` from ``tpchgen-cli`` (PyPI), conformed to the benchmark's input schema.

``tpchgen-cli parquet --tables lineitem -s SF`` writes string_view columns with Parquet field ids;
the input every system gets has plain strings, the key columns NOT NULL and two derived columns:
``ship_month`` (YYYY-MM of ``l_shipdate``, the partition key) and ``op`` (the row kind, ``+I``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

KEYS = ("l_orderkey", "l_linenumber")
PARTITION = "ship_month"
OP = "op"


class GeneratorError(RuntimeError):
    """tpchgen-cli is missing or failed."""


def tpchgen_binary() -> str:
    """The ``tpchgen-cli`` next to this interpreter (the venv's), else the one on PATH."""
    local = Path(sys.executable).with_name("tpchgen-cli")
    if local.is_file():
        return str(local)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise GeneratorError("tpchgen-cli not found: `.venv/bin/pip install tpchgen-cli`")
    return found


def tpchgen_version() -> str:
    proc = subprocess.run([tpchgen_binary(), "--version"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() or proc.stderr.strip()


def generate_lineitem(sf: float, cache: Path) -> tuple[Path, float]:
    """``lineitem.parquet`` at scale factor ``sf`` under ``cache`` (reused when present); (path, seconds)."""
    out_dir = cache / f"tpchgen-sf{sf:g}"
    path = out_dir / "lineitem.parquet"
    if path.is_file():
        return path, 0.0
    out_dir.mkdir(parents=True, exist_ok=True)
    cmd = [tpchgen_binary(), "parquet", "-s", f"{sf:g}", "--tables", "lineitem", "--output-dir", str(out_dir)]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0 or not path.is_file():
        raise GeneratorError(f"{' '.join(cmd)} failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return path, time.perf_counter() - started


def input_schema(raw: pa.Schema) -> pa.Schema:
    """The raw schema with plain strings, no field metadata, NOT NULL keys, plus ship_month and op."""
    fields = []
    for f in raw:
        typ = pa.string() if pa.types.is_string_view(f.type) or pa.types.is_large_string(f.type) else f.type
        fields.append(pa.field(f.name, typ, nullable=f.name not in KEYS))
    fields += [pa.field(PARTITION, pa.string(), nullable=False), pa.field(OP, pa.string(), nullable=False)]
    return pa.schema(fields)


def conform(raw: pa.Table) -> pa.Table:
    """``raw`` in the `input_schema`: strings cast, ``ship_month`` derived, ``op`` = ``+I``."""
    schema = input_schema(raw.schema)
    months = ship_months(raw.column("l_shipdate"))
    ops = pa.repeat(pa.scalar("+I", pa.string()), raw.num_rows)
    columns = [raw.column(f.name).cast(f.type) for f in schema if f.name not in (PARTITION, OP)]
    return pa.Table.from_arrays([*columns, months, ops], schema=schema)


def ship_months(dates: pa.ChunkedArray | pa.Array) -> pa.Array:
    """YYYY-MM of each date32 value (numpy month arithmetic; ``pc.strftime`` is ~50x slower)."""
    days = pc.cast(dates, pa.int32()).to_numpy().astype("datetime64[D]")
    months = days.astype("datetime64[M]")
    distinct, index = np.unique(months, return_inverse=True)
    names = pa.array([str(m) for m in distinct], pa.string())  # numpy prints datetime64[M] as YYYY-MM
    return names.take(pa.array(index.astype(np.int32)))


def read_conformed(path: Path) -> pa.Table:
    """The generated file, conformed."""
    return conform(pq.read_table(path))
