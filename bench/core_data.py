"""The rows ``bench_core.py`` writes (new keys, then updates of some), the state they leave, the
check of a system's result against it, and the Arrow IPC files that hand them to the pypaimon worker."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench.maintenance_common import random_strings

SEED = 20240602
KEY = "id"


def make_data(rows: int, updates: int, seed: int = SEED) -> tuple[pa.Table, pa.Table]:
    """``rows`` new keys in random order, and ``updates`` distinct existing keys with new values."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(rows).astype(np.int64) * 7 + 1_000_003
    initial = _rows(rng, ids, version=0)
    upd_ids = rng.choice(ids, size=updates, replace=False)
    return initial, _rows(rng, upd_ids, version=1)


def _rows(rng: np.random.Generator, ids: np.ndarray, version: int) -> pa.Table:
    """Five columns: id (key), int64, float64, a ~16-char string, timestamp[us]."""
    n = len(ids)
    names = random_strings(rng, n)  # ~16 chars on average
    base_us = 1_700_000_000_000_000
    return pa.table({
        KEY: pa.array(ids, pa.int64()),
        "version": pa.array(np.full(n, version, dtype=np.int64) * 1_000_000 + rng.integers(0, 1_000_000, n)),
        "score": pa.array(rng.standard_normal(n)),
        "name": names,
        "event_time": pa.array(base_us + rng.integers(0, 86_400_000_000 * 365, n), pa.timestamp("us")),
    }).replace_schema_metadata(None)


def expected_state(initial: pa.Table, updates: pa.Table) -> pa.Table:
    """The table after both writes (last write wins), sorted by key."""
    stale = pc.is_in(initial.column(KEY), value_set=updates.column(KEY))
    kept = initial.filter(pc.invert(stale))
    return pa.concat_tables([kept, updates]).sort_by(KEY)


def same_rows(result: pa.Table, expected: pa.Table) -> str | None:
    """None when ``result`` holds exactly the expected rows (any order), else what differs."""
    if result.num_rows != expected.num_rows:
        return f"{result.num_rows} rows, expected {expected.num_rows}"
    if result.column_names != expected.column_names:
        return f"columns {result.column_names}, expected {expected.column_names}"
    try:
        got = result.cast(expected.schema).sort_by(KEY)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        return f"schema {result.schema} does not cast to {expected.schema}: {exc}"
    for name in expected.column_names:
        if not got.column(name).equals(expected.column(name)):
            diff = pc.not_equal(got.column(name), expected.column(name)).to_numpy(zero_copy_only=False)
            return f"column {name!r} differs in {int(np.count_nonzero(diff))} rows"
    return None


def write_ipc(table: pa.Table, path: Path) -> None:
    """Write ``table`` as an Arrow IPC stream file (readable by the worker's pyarrow 19)."""
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def read_ipc(path: str | Path) -> pa.Table:
    """Read an Arrow IPC stream file."""
    with pa.ipc.open_stream(str(path)) as reader:
        return reader.read_all()
