"""Decoded rows a lookup compaction keeps between rounds (`ops.dv_row_cache`): what a round reads
from storage, the rows it merges (the same as with nothing kept), and the memory bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lake_assets.ops.compact.rewrite as rewrite
import lake_assets.ops.read as read_module
from lake_assets import Catalog
from lake_assets.ops.dv_row_cache import LOOKUP_CACHE, LookedUpRows, _LookupCache
from lake_assets.ops.read import SplitReader
from lake_assets.ops.scan import Split

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()), ("qty", pa.int32())])


def _batch(ids: np.ndarray, round_: int, rng: np.random.Generator) -> pa.Table:
    nulls = rng.random(ids.size) < 0.3  # partial-update keeps the old value where a new one is null
    return pa.table({
        "id": ids,
        "name": pa.array([None if n else f"r{round_}-{i}" for i, n in zip(ids.tolist(), nulls, strict=True)]),
        "amount": pa.array(ids * 0.5 + round_, mask=rng.random(ids.size) < 0.2),
        "qty": pa.array(rng.integers(0, 50, ids.size).astype(np.int32)),
    }, schema=SCHEMA)


def _table(root: Path, options: dict[str, str]):  # type: ignore[no-untyped-def]
    cat = Catalog(str(root))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2", **options})


class _StorageReads:
    """Reads from storage during rounds: the old rows a unit takes from files above it (file name,
    whether the whole file was decoded) and the level-0 files read back for a rewrite."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.old_rows: list[tuple[str, bool]] = []
        self.level0: list[str] = []
        selected, read_file = rewrite._selected_rows, SplitReader.read_file

        def spy_selected(unit, split, meta, rows):  # type: ignore[no-untyped-def]
            self.old_rows.append((meta.file_name, rows is None))
            return selected(unit, split, meta, rows)

        def spy_read(reader: SplitReader, split: Split, meta, with_system, columns=None, **kw):  # type: ignore[no-untyped-def]
            if meta.level == 0 and columns is None:
                self.level0.append(meta.file_name)
            return read_file(reader, split, meta, with_system, columns, **kw)

        monkeypatch.setattr(rewrite, "_selected_rows", spy_selected)
        monkeypatch.setattr(read_module.SplitReader, "read_file", spy_read)

    def clear(self) -> None:
        self.old_rows.clear()
        self.level0.clear()


def _rounds(table, rounds: int, seed: int) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    for r in range(rounds):
        table.write_arrow(_batch(np.sort(rng.choice(4000, 900, replace=False)).astype(np.int64), r, rng))


@pytest.mark.parametrize("engine, extra", [
    ("partial-update", {}),
    ("aggregation", {"fields.amount.aggregate-function": "sum", "fields.qty.aggregate-function": "max"}),
])
def test_a_round_after_the_first_reads_no_row_back_and_merges_what_a_cold_round_merges(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str, extra: dict[str, str]
) -> None:
    LOOKUP_CACHE.clear()
    options = {"merge-engine": engine, "deletion-vectors.enabled": "true", **extra}
    warm = _table(tmp_path / "warm", options)
    cold = _table(tmp_path / "cold", {**options, "lookup.cache-max-memory-size": "0"})
    for t in (warm, cold):
        _rounds(t, 3, seed=1)
    reads = _StorageReads(monkeypatch)
    _rounds(warm, 3, seed=2)
    # kept: no level-0 file is read back (the flush's rows), and a file above is decoded at most
    # once (whole, then taken from; a unit's own output is kept as written)
    assert reads.level0 == []
    assert reads.old_rows and all(whole for _, whole in reads.old_rows)
    assert len({name for name, _ in reads.old_rows}) == len(reads.old_rows)
    reads.clear()
    _rounds(cold, 3, seed=2)
    # nothing kept: every level-0 file is read back, old rows are decoded by mask each round
    assert len(reads.level0) == 6
    assert reads.old_rows and not any(whole for _, whole in reads.old_rows)
    assert warm.to_arrow().sort_by("id").equals(cold.to_arrow().sort_by("id"))
    assert LOOKUP_CACHE.nbytes > 0


def test_the_cache_stays_within_the_tables_budget(tmp_path: Path) -> None:
    LOOKUP_CACHE.clear()
    table = _table(tmp_path, {"merge-engine": "partial-update", "deletion-vectors.enabled": "true",
                              "lookup.cache-max-memory-size": "128 kb"})
    _rounds(table, 4, seed=3)
    assert 0 < LOOKUP_CACHE.nbytes <= 128 * 1024
    plain = _table(tmp_path / "plain", {"merge-engine": "partial-update", "deletion-vectors.enabled": "true"})
    _rounds(plain, 4, seed=3)
    assert plain.to_arrow().sort_by("id").equals(table.to_arrow().sort_by("id"))


def test_least_recently_used_rows_go_first_and_a_level_change_misses() -> None:
    cache = _LookupCache()
    rows = pa.table({"x": np.arange(1000, dtype=np.int64)})  # 8000 bytes
    cache.put(("a", 1, 1, 0), rows, 20_000)
    cache.put(("b", 1, 1, 0), rows, 20_000)
    assert cache.get(("a", 1, 1, 0)) is not None  # now the most recently used
    cache.put(("c", 1, 1, 0), rows, 20_000)
    assert cache.get(("b", 1, 1, 0)) is None and cache.get(("a", 1, 1, 0)) is not None
    assert cache.nbytes == 16_000
    assert cache.get(("a", 1, 2, 0)) is None  # the same file relabelled to another level
    assert cache.pop(("a", 1, 1, 0)) is not None and cache.nbytes == 8_000


def test_looked_up_rows_take_positions_and_read_a_file_too_large_by_mask() -> None:
    from lake_assets.spec.manifest import DataFileMeta

    whole = pa.table({"id": np.arange(10, dtype=np.int64) * 3})
    calls: list[str] = []

    def read_whole(meta: DataFileMeta) -> pa.Table:
        calls.append("whole")
        return whole

    def read_selected(meta: DataFileMeta, positions: np.ndarray) -> pa.Table:
        calls.append("mask")
        return whole.take(pa.array(positions))

    meta = DataFileMeta.__new__(DataFileMeta)
    object.__setattr__(meta, "row_count", 10)
    object.__setattr__(meta, "file_size", 100)
    LOOKUP_CACHE.clear()
    rows = LookedUpRows(read_whole, read_selected, lambda m: ("f", 100, 1, 0), 4000)
    positions = np.array([1, 4, 9])
    assert rows.rows(meta, positions).column("id").to_pylist() == [3, 12, 27]
    assert rows.rows(meta, positions).column("id").to_pylist() == [3, 12, 27]
    assert calls == ["whole"]  # the second from the kept rows
    small = LookedUpRows(read_whole, read_selected, lambda m: ("g", 100, 1, 0), 200)  # a quarter: 50 < 100
    assert small.rows(meta, positions).column("id").to_pylist() == [3, 12, 27]
    assert calls == ["whole", "mask"]


def test_rows_as_written_equal_the_file_read_back(tmp_path: Path) -> None:
    table = _table(tmp_path, {"merge-engine": "partial-update", "deletion-vectors.enabled": "true"})
    table.write_arrow(_batch(np.arange(100, dtype=np.int64), 0, np.random.default_rng(4)))
    store = table.store
    reader = SplitReader(store, store.schema)
    split = next(s for s in table.plan() if s.files)
    meta = split.files[0]
    back = reader.read_file(Split(split.partition, split.partition_values, split.bucket, split.total_buckets,
                                  [meta]), meta, True)
    # the columns in the writer's order and nullability, as a flush holds them
    written = back.drop_columns(["_LEVEL"]).select(["id", "name", "amount", "qty", "_VALUE_KIND",
                                                     "_SEQUENCE_NUMBER"])
    written = written.cast(pa.schema([f.with_nullable(True) if f.name.startswith("_") else f
                                      for f in written.schema]))
    assert reader.as_read(written, meta).equals(back, check_metadata=True)
    assert reader.as_read(written.drop_columns(["qty"]), meta) is None
    assert reader.as_read(written.set_column(3, "qty", written.column("qty").cast(pa.int64())), meta) is None


def test_each_table_keeps_its_own_budget_within_the_largest(tmp_path: Path) -> None:
    """Two tables of different ``lookup.cache-max-memory-size`` in one process (session 15
    finding 2: the cache took the budget of the table that stored last, so the small table's round
    emptied the large table's entries down to the small budget)."""
    LOOKUP_CACHE.clear()
    dv = {"merge-engine": "partial-update", "deletion-vectors.enabled": "true"}
    large = _table(tmp_path / "large", {**dv, "lookup.cache-max-memory-size": "4 mb"})
    small = _table(tmp_path / "small", {**dv, "lookup.cache-max-memory-size": "64 kb"})
    large_root, small_root = large.store.paths.root, small.store.paths.root
    _rounds(large, 3, seed=5)
    held = LOOKUP_CACHE.owner_nbytes(large_root)
    assert 64 * 1024 < held <= 4 * 1024 * 1024  # more than the small table may ever hold
    _rounds(small, 3, seed=6)
    assert 0 < LOOKUP_CACHE.owner_nbytes(small_root) <= 64 * 1024
    assert LOOKUP_CACHE.owner_nbytes(large_root) == held  # the small table's rounds left them alone
    assert LOOKUP_CACHE.nbytes > held
    _rounds(large, 1, seed=7)
    assert 0 < LOOKUP_CACHE.owner_nbytes(small_root) <= 64 * 1024
    assert LOOKUP_CACHE.nbytes <= 4 * 1024 * 1024


def test_the_cache_stays_within_the_largest_budget_of_the_tables_holding_entries() -> None:
    cache = _LookupCache()
    rows = pa.table({"x": np.arange(1000, dtype=np.int64)})  # 8000 bytes
    for i in range(3):
        cache.put(("a", i), rows, 30_000, "A")
    assert cache.owner_nbytes("A") == 24_000
    cache.put(("b", 0), rows, 10_000, "B")  # 32000 > 30000, the largest budget: the oldest of all goes
    assert cache.get(("a", 0)) is None and (cache.owner_nbytes("A"), cache.owner_nbytes("B")) == (16_000, 8_000)
    cache.put(("b", 1), rows, 10_000, "B")  # above B's own budget: B's oldest goes, A's stay
    assert cache.get(("b", 0)) is None and cache.get(("b", 1)) is not None
    assert (cache.owner_nbytes("A"), cache.owner_nbytes("B"), cache.nbytes) == (16_000, 8_000, 24_000)
    cache.put(("a", 3), rows, 30_000, "A")  # 32000 > 30000: the least recently used of all (a1) goes
    cache.put(("a", 4), rows, 30_000, "A")  # ... then a2
    assert cache.get(("a", 1)) is None and cache.get(("a", 2)) is None
    assert (cache.owner_nbytes("A"), cache.owner_nbytes("B"), cache.nbytes) == (16_000, 8_000, 24_000)
    assert cache.pop(("b", 1)) is not None and cache.owner_nbytes("B") == 0 and cache.nbytes == 16_000
    cache.put(("c", 0), rows, 5_000, "C")  # alone above its table's budget: not kept
    assert cache.owner_nbytes("C") == 0 and cache.nbytes == 16_000
