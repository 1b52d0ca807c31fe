"""The tables and rows ``bench_memory.py`` (and ``profile_memory_steps.py``) write: a load of every
key, then upserts of a tenth of them, in batches of `GEN_ROWS` generated rows."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("a", pa.int64()), ("b", pa.float64()),
                    ("c", pa.string()), ("d", pa.int32()), ("e", pa.timestamp("us")), ("f", pa.bool_())])
GEN_ROWS = 256 * 1024  # rows generated per write call
OPTIONS = {"bucket": "4", "write-only": "true", "write-buffer-spillable": "true",
           "write-buffer-size": "64 mb", "local-sort.max-num-file-handles": "128"}
UPSERT_FRACTION = 0.1
# the tables --table picks: extra options over OPTIONS
TABLES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "first-row": {"merge-engine": "first-row"},
    "lookup-changelog": {"changelog-producer": "lookup"},
}


def batch(rng: np.random.Generator, keys: np.ndarray, round_: int) -> pa.Table:
    """Rows of ``keys`` with random values (``round_`` shifts column ``b``)."""
    n = len(keys)
    words = np.array([f"value-{i:04d}-{'x' * (i % 9)}" for i in range(512)], dtype=object)
    return pa.table({
        "id": keys.astype(np.int64),
        "part": np.where(keys % 2 == 0, "p0", "p1"),
        "a": rng.integers(0, 1 << 40, n),
        "b": rng.random(n) + round_,
        "c": words[rng.integers(0, len(words), n)],
        "d": rng.integers(0, 1 << 30, n).astype(np.int32),
        "e": pa.array(rng.integers(1_600_000_000_000_000, 1_700_000_000_000_000, n), pa.timestamp("us")),
        "f": rng.random(n) < 0.5,
    }, schema=SCHEMA)


def load_batches(rows: int, seed: int) -> Iterator[pa.Table]:
    """Every key in [0, rows) once, shuffled within each generated batch."""
    rng = np.random.default_rng(seed)
    for start in range(0, rows, GEN_ROWS):
        n = min(GEN_ROWS, rows - start)
        yield batch(rng, start + rng.permutation(n), 0)


def upsert_batches(rows: int, seed: int) -> Iterator[pa.Table]:
    """``UPSERT_FRACTION`` of the keys, drawn at random, new values."""
    rng = np.random.default_rng(seed)
    total = int(rows * UPSERT_FRACTION)
    for start in range(0, total, GEN_ROWS):
        n = min(GEN_ROWS, total - start)
        yield batch(rng, rng.integers(0, rows, n), 1)


def write_batches(table, batches: Iterator[pa.Table], user: str, extra: dict[str, object] | None = None) -> int:
    """Write and commit ``batches``; ``extra`` gets the writer's spill counts (runs, spilled rows,
    the largest merge fan-in) when it spills."""
    writer = table.new_writer(user)
    written = 0
    try:
        for b in batches:
            writer.write_arrow(b)
            written += b.num_rows
        table.new_committer(user).commit(writer.prepare_commit(), commit_identifier=1)
        stats = getattr(writer, "spill_stats", None)  # absent before round 4's counters
        if extra is not None and stats is not None:
            extra.update(spill_runs=stats.runs, spilled_rows=stats.rows, spill_merges=stats.merges,
                         spill_max_fan_in=stats.max_fan_in)
    finally:
        writer.close()
    return written
