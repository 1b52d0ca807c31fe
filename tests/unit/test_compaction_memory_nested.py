"""The printed compaction memory bound of a table with nested columns (`ops.compact.memory`,
``bench/bench_memory.py``): a STRUCT, ARRAY or MAP column is one Parquet column chunk per leaf,
each read through a buffer of its own, so the runs' readers are counted by leaves, and a nested
table's measured Arrow peak stays under the bound."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from lake_assets import Catalog
from lake_assets.formats.file_layout import file_arrow_schema
from lake_assets.ops.compact import memory

LEAVES = 8
SCHEMA = pa.schema([
    ("k", pa.int64()),
    ("s", pa.struct([(f"f{i}", pa.float64()) for i in range(LEAVES)])),
    ("l", pa.list_(pa.int64())),
    ("m", pa.map_(pa.string(), pa.int64())),
])


def _rows(keys: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = len(keys)
    struct = pa.StructArray.from_arrays([pa.array(rng.random(n)) for _ in range(LEAVES)],
                                        names=[f"f{i}" for i in range(LEAVES)])
    lists = pa.ListArray.from_arrays(pa.array(np.arange(0, 3 * n + 1, 3), pa.int32()),
                                     pa.array(rng.integers(0, 1 << 40, 3 * n)))
    maps = pa.MapArray.from_arrays(pa.array(np.arange(0, 2 * n + 1, 2), pa.int32()),
                                   pa.array([f"key{i % 7}" for i in range(2 * n)]),
                                   pa.array(rng.integers(0, 1000, 2 * n)))
    return pa.Table.from_arrays([pa.array(keys, pa.int64()), struct, lists, maps], schema=SCHEMA)


def test_nested_columns_are_counted_by_their_leaves(tmp_path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    # _KEY_k, _SEQUENCE_NUMBER, _VALUE_KIND, k, s (8 leaves), l (1), m (key and value)
    assert memory.run_read_columns(t.store.schema) == 4 + LEAVES + 1 + 2
    assert len(file_arrow_schema(t.store.schema)) == 7
    # the count is the written file's: one column chunk per leaf
    t.write_arrow(_rows(np.arange(100), 0))
    (path,) = (tmp_path / "wh").rglob("data-*.parquet")
    assert pq.ParquetFile(path).metadata.num_columns == memory.run_read_columns(t.store.schema)
    assert memory.leaf_columns([pa.field("x", pa.list_(pa.struct([("a", pa.int8()), ("b", pa.map_(
        pa.int8(), pa.list_(pa.int8())))])))]) == 3


class _ArrowPeak:
    """Samples the bytes Arrow's pool holds, every millisecond, in a background thread."""

    def __init__(self) -> None:
        self.base = pa.total_allocated_bytes()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, pa.total_allocated_bytes())
            self._stop.wait(0.001)

    def __enter__(self) -> _ArrowPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, pa.total_allocated_bytes())


def test_a_nested_tables_compaction_peak_stays_under_the_printed_bound(tmp_path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    runs, rows = 4, 20_000
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "write-only": "true", "compaction.merge-rows": "4000", "read.batch-size": "2000",
        "read.parquet.buffer-size": "64 kb"})
    rng = np.random.default_rng(5)
    sample = None
    keys: set[int] = set()
    for r in range(runs):
        data = _rows(np.sort(rng.choice(2 * rows, rows, replace=False)), r)
        keys.update(data.column("k").to_pylist())
        sample = data if sample is None else sample
        t.write_arrow(data)
    opts = t.store.schema.core_options
    # what bench_memory prints: the merge's rows at the file layout's Arrow bytes per row (values,
    # the key copy, sequence number and row kind) plus the runs' readers, counted by leaves
    assert sample is not None
    row_bytes = sample.nbytes / sample.num_rows + 8 + 9
    columns = memory.run_read_columns(t.store.schema)
    bound = (memory.compaction_rows_bound(opts, runs, units=1) * row_bytes
             + memory.compaction_reader_bytes(opts, runs, units=1, columns=columns))
    with _ArrowPeak() as peak:
        t.compact(full=True)
    held = peak.peak - peak.base
    assert t.to_arrow().num_rows == len(keys)
    assert 0 < held <= bound, (held, bound)
