"""CPU of one merge step of a deletion-vector lookup compaction, the general merge against the pair merge.

The shape of one bucket's unit in ``bench_dv.py --rows 1000000 --upsert-rows 100000``: 25,000 records
(one level-0 file) of which 90% find their key's old row in a 250,000-row kept file. *general*: the old
rows and the records gathered whole into merge order by one take, then the engine's ``merge``;
*pair*: the columns the engine reads taken from the old rows, then ``merge_pairs``
(`lake_assets.lsm.merge_engine.pair_merge`). Both results are checked equal first; the two are timed
alternately (``time.process_time``) and the median and best of each printed.

    PYTHONPATH=. .venv/bin/python bench/bench_pair_merge.py --repeat 30
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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.lsm.merge_engine.pair_merge import PairInput
from lake_assets.lsm.merge_engine.partial_update import PartialUpdate
from lake_assets.options import CoreOptions

Engine = Aggregation | PartialUpdate


def rows(keys: np.ndarray, round_: int, seq: int) -> pa.Table:
    """Rows as bench_dv.py writes them, with the system columns a compaction reads."""
    return pa.table({
        "id": keys, "name": pa.array([f"n{round_}-{i % 1000}" for i in keys.tolist()]),
        "amount": keys.astype(np.float64) * 0.5 + round_, "qty": (keys % 100).astype(np.int32),
        "_SEQUENCE_NUMBER": np.full(keys.size, seq, np.int64), "_VALUE_KIND": np.zeros(keys.size, np.int8),
    })


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    ids = np.arange(0, 1_000_000, 4, dtype=np.int64)
    kept = rows(ids, 0, 1)
    record_keys = np.sort(rng.choice(ids, 25_000, replace=False))
    records = rows(record_keys, 99, 5)
    old_positions = np.searchsorted(ids, record_keys[rng.random(record_keys.size) < 0.9])
    at = np.searchsorted(record_keys, ids[old_positions])
    fields = [(f.name, f.type) for f in kept.schema][:4]
    engines: dict[str, Engine] = {
        "aggregation": Aggregation(fields, ["id"], CoreOptions({"fields.amount.aggregate-function": "sum",
                                                                "fields.qty.aggregate-function": "max"})),
        "partial-update": PartialUpdate(fields, ["id"], CoreOptions({})),
    }

    def general(fn: Engine) -> pa.Table:
        first = np.zeros(records.num_rows, np.int64)
        first[at] = 1
        before = np.cumsum(first)
        order = np.empty(at.size + records.num_rows, np.int64)
        order[at + before[at] - 1] = old_positions
        order[np.arange(records.num_rows) + before] = kept.num_rows + np.arange(records.num_rows)
        return fn.merge(pa.concat_tables([kept, records]).take(pa.array(order)), ["id"])

    def pair(fn: Engine) -> pa.Table:
        needed = fn.pair_columns(records)
        assert needed is not None
        index = pa.array(old_positions)
        old = {name: kept.column(name).take(index).combine_chunks() for name in needed}
        return fn.merge_pairs(PairInput(records, at, old))

    for name, fn in engines.items():
        fn.merges_singles = True  # as the lookup compaction's function
        assert pair(fn).equals(general(fn)), name
        cpu: dict[str, list[float]] = {"general": [], "pair": []}
        ways: dict[str, Callable[[Engine], pa.Table]] = {"general": general, "pair": pair}
        for i in range(args.repeat):
            for way in ("general", "pair") if i % 2 else ("pair", "general"):
                start = time.process_time()
                ways[way](fn)
                cpu[way].append(time.process_time() - start)
        print(name, ", ".join(f"{way} median {statistics.median(v) * 1e3:.2f} ms (best {min(v) * 1e3:.2f})"
                              for way, v in cpu.items()))


if __name__ == "__main__":
    main()
