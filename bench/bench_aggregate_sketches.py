"""Sketch / bitmap aggregate functions: CPU per merged key group.

For each of rbm32, rbm64, hll_sketch and theta_sketch, ``--groups`` keys with ``--per-key``
records each (one serialized bitmap / sketch per record, built here) are merged by the
aggregation engine (`Aggregation.merge`, the code every write, read, compaction and changelog
merge runs). Peers measured in the same run, on the same records:

- ``sum``: the same shape with a BIGINT column and ``sum`` (the vectorized functions' cost);
- pypaimon 2.1's aggregators (``FieldRoaringBitmap32Agg`` etc., one ``agg`` call per record
  after the first, as its merge does), under ``.venv-paimon`` in a subprocess; it has no rbm64, and
  its hll/theta need the optional ``datasketches`` (``PYPAIMON_DATASKETCHES``: a directory holding
  it, e.g. ``pip install --target DIR datasketches``, appended to that process's path).

CPU seconds (``time.process_time``), best of ``--repeat``, sides alternating. Example::

    PYTHONPATH=. .venv/bin/python bench/bench_aggregate_sketches.py --groups 2000 --per-key 3 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import datasketches
import numpy as np
import pyarrow as pa
from pyroaring import BitMap

from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.lsm.merge_engine.roaring64_bitmap import Container, Roaring64, art_insert
from lake_assets.options import CoreOptions

ROOT = Path(__file__).resolve().parent.parent
PAIMON_PYTHON = os.environ.get("PYPAIMON_PYTHON", str(ROOT / ".venv-paimon/bin/python"))

_PYPAIMON = r"""
import os, pickle, sys, time
sys.path.append(os.environ.get("PYPAIMON_DATASKETCHES", ""))  # after site-packages: pypaimon's own numpy wins
from pypaimon.read.reader.aggregate import aggregators as a
from pypaimon.schema.data_types import AtomicType
groups, repeat = pickle.load(open(sys.argv[1], "rb"))
cls = {"rbm32": a.FieldRoaringBitmap32Agg, "hll_sketch": a.FieldHllSketchAgg, "theta_sketch": a.FieldThetaSketchAgg}
out = {}
for name, values in groups.items():
    if name not in cls:
        continue
    agg = cls[name](name, AtomicType("BYTES"))
    best = None
    for _ in range(repeat):
        t = time.process_time()
        for g in values:
            acc = None
            for v in g:
                acc = agg.agg(acc, v)
        best = min(best or 1e9, time.process_time() - t)
    out[name] = best
print(__import__("json").dumps(out))
"""


def _rbm64(values: np.ndarray) -> bytes:
    """A Roaring64Bitmap image as Java writes it for ``values`` added in order (via our replay)."""
    bitmap = Roaring64()
    for high in np.unique(values >> np.uint64(16)).tolist():
        low = np.unique(values[(values >> np.uint64(16)) == high] & np.uint64(0xFFFF)).astype(np.int64)
        c = Container(2 if len(low) <= 4096 else 1, len(low), None, low)
        bitmap.root = art_insert(bitmap.root, int(high).to_bytes(8, "big")[2:], 0, bitmap.add_container(c))
        bitmap.key_count += 1
    bitmap.run_optimize()
    return bitmap.serialize()


def build(function: str, groups: int, per_key: int, distinct: int, rng: np.random.Generator) -> list[list[bytes]]:
    out = []
    for _ in range(groups):
        row = []
        for _ in range(per_key):
            ids = rng.integers(0, 1 << 32, distinct, dtype=np.uint64)
            if function == "rbm32":
                b = BitMap((ids >> np.uint64(1)).astype(np.uint32))
                b.run_optimize()
                row.append(b.serialize())
            elif function == "rbm64":
                row.append(_rbm64(ids * np.uint64(2654435761)))  # 64-bit ids, spread out
            elif function == "hll_sketch":
                s = datasketches.hll_sketch(12)
                for v in ids.astype(np.int64).tolist():
                    s.update(v)
                row.append(s.serialize_compact())
            else:
                s = datasketches.update_theta_sketch(12)
                for v in ids.astype(np.int64).tolist():
                    s.update(v)
                row.append(s.compact().serialize())
        out.append(row)
    return out


def merge_cpu(function: str, groups: list[list[bytes]], repeat: int) -> float:
    keys = np.repeat(np.arange(len(groups)), len(groups[0]))
    n = len(keys)
    if function == "sum":
        col, dtype = pa.array(np.ones(n, dtype=np.int64)), pa.int64()
    else:
        col, dtype = pa.array([v for g in groups for v in g], type=pa.binary()), pa.binary()
    table = pa.table({"k": keys, "v": col, "_SEQUENCE_NUMBER": np.arange(n), "_VALUE_KIND": np.zeros(n, np.int8)})
    engine = Aggregation([("k", pa.int64()), ("v", dtype)], ["k"],
                         CoreOptions({"merge-engine": "aggregation", "fields.v.aggregate-function": function}))
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        engine.merge(table, ["k"])
        best = min(best, time.process_time() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, default=2000)
    ap.add_argument("--per-key", type=int, default=3)
    ap.add_argument("--distinct", type=int, default=200, help="values per record's bitmap / sketch")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    data = {f: build(f, args.groups, args.per_key, args.distinct, rng)
            for f in ("rbm32", "rbm64", "hll_sketch", "theta_sketch")}
    with tempfile.NamedTemporaryFile(suffix=".pkl", delete=False) as fh:
        pickle.dump((data, args.repeat), fh)
    peer = json.loads(subprocess.run([PAIMON_PYTHON, "-c", _PYPAIMON, fh.name], check=True,
                                     capture_output=True, text=True).stdout)
    os.unlink(fh.name)
    print(f"load average {os.getloadavg()}; {args.groups} groups x {args.per_key} records, "
          f"{args.distinct} values per record")
    sum_cpu = merge_cpu("sum", data["rbm32"], args.repeat)
    print("| function | lake_assets CPU | per merged group | pypaimon 2.1 CPU | per group |")
    print("|---|---|---|---|---|")
    print(f"| sum (BIGINT, peer) | {sum_cpu:.3f} s | {sum_cpu / args.groups * 1e6:.1f} µs | — | — |")
    for f, groups in data.items():
        ours = merge_cpu(f, groups, args.repeat)
        theirs = peer.get(f)
        their = f"{theirs:.3f} s | {theirs / args.groups * 1e6:.0f} µs" if theirs is not None else "no rbm64 | —"
        print(f"| {f} | {ours:.3f} s | {ours / args.groups * 1e6:.0f} µs | {their} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
