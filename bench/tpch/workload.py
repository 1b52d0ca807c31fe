"""The workload: base rows, upsert/delete rounds, small commits and the reference content.

Every system reads the same Parquet inputs written here. Round ``r`` upserts ``upsert_share`` of
the base row count (distinct live keys, new ``l_quantity`` and the matching ``l_extendedprice``,
``op = +U``) and deletes ``delete_share`` more (``op = -D``). The small commits insert new orders
(keys above the generated ones, shipped in ``SMALL_MONTH``), so an append is also a correct upsert
for them. The reference content is computed with numpy by position in the base table.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.tpch.generate import KEYS, OP, PARTITION, ship_months

SEED = 20240608
INPUT_ROW_GROUP = 131_072  # rows per row group of the input files = the batch size systems stream
SMALL_MONTH = "1999-01"
SELECT_MONTH = "1995-03"
SELECT_KEY_SHARE = (0.45, 0.55)  # the selective read's l_orderkey range, as shares of the key space


@dataclass(frozen=True)
class Plan:
    """What a worker needs: the input files, the step sizes and the selective filter (JSON-able)."""

    sf: float
    base_rows: int
    rounds: list[str]
    round_rows: list[int]
    small: str
    small_commits: int
    small_rows: int
    base: str
    ref_upserted: str
    ref_final: str
    upserted_rows: int
    final_rows: int
    select_month: str
    select_lo: int
    select_hi: int
    select_rows_upserted: int
    select_rows_final: int
    bucket: int
    commits_before_expire: int

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, path: Path) -> Plan:
        return cls(**json.loads(Path(path).read_text()))

    @property
    def select_filter(self) -> list[tuple[str, str, object]]:
        """The selective read as (column, op, value) terms."""
        return [(PARTITION, "=", self.select_month), (KEYS[0], ">=", self.select_lo), (KEYS[0], "<", self.select_hi)]

    def small_rows_of(self, commit: int) -> slice:
        """Rows of ``small`` that small commit ``commit`` (0-based) writes."""
        return slice(commit * self.small_rows, (commit + 1) * self.small_rows)


def unscaled(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """The int64 unscaled values of a decimal128 column whose values fit in 64 bits."""
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64)
    return words[2 * arr.offset: 2 * (arr.offset + len(arr)): 2].copy()  # little-endian low words


def decimal_of(values: np.ndarray, typ: pa.DataType) -> pa.Array:
    """A decimal128 array from int64 unscaled values."""
    words = np.zeros((len(values), 2), dtype=np.int64)
    words[:, 0] = values
    words[:, 1] = np.where(values < 0, -1, 0)
    return pa.Array.from_buffers(typ, len(values), [None, pa.py_buffer(words.tobytes())])


def with_values(rows: pa.Table, qty: np.ndarray, price: np.ndarray, op: str) -> pa.Table:
    """``rows`` with new l_quantity / l_extendedprice (unscaled) and row kind ``op``."""
    schema = rows.schema
    rows = rows.set_column(schema.get_field_index("l_quantity"), schema.field("l_quantity"),
                           decimal_of(qty, schema.field("l_quantity").type))
    rows = rows.set_column(schema.get_field_index("l_extendedprice"), schema.field("l_extendedprice"),
                           decimal_of(price, schema.field("l_extendedprice").type))
    return rows.set_column(schema.get_field_index(OP), schema.field(OP), pa.repeat(pa.scalar(op), rows.num_rows))


def write_input(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path, row_group_size=INPUT_ROW_GROUP)


def write_reference(table: pa.Table, path: Path) -> None:
    """Sorted by key, without ``op``, zstd level 1: also the "single compacted Parquet copy"."""
    table = table.drop_columns([OP]).sort_by([(k, "ascending") for k in KEYS])
    pq.write_table(table, path, compression="zstd", compression_level=1)


def build(base: pa.Table, sf: float, workdir: Path, *, rounds: int = 5, upsert_share: float = 0.10,
          delete_share: float = 0.01, commits: int = 100, bucket: int = 4, seed: int = SEED) -> Plan:
    """Write every input and reference file under ``workdir``; the plan describing them.

    ``commits`` is the number of commits before expiry: the load, the rounds, one compaction and
    as many small commits as make up the rest.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    n = base.num_rows
    qty0 = unscaled(base.column("l_quantity"))
    price0 = unscaled(base.column("l_extendedprice"))
    unit_price = price0 // (qty0 // 100)  # TPC-H: l_extendedprice = l_quantity * p_retailprice
    qty, price = qty0.copy(), price0.copy()
    alive = np.ones(n, dtype=bool)
    write_input(base, workdir / "base.parquet")

    n_up, n_del = int(n * upsert_share), int(n * delete_share)
    round_paths, round_rows = [], []
    for r in range(1, rounds + 1):
        picked = rng.choice(np.flatnonzero(alive), size=n_up + n_del, replace=False)
        up, gone = picked[:n_up], picked[n_up:]
        qty[up] = rng.integers(1, 51, size=n_up) * 100
        price[up] = unit_price[up] * (qty[up] // 100)
        alive[gone] = False
        upserts = with_values(base.take(up), qty[up], price[up], "+U")
        deletes = with_values(base.take(gone), qty[gone], price[gone], "-D")
        path = workdir / f"round_{r}.parquet"
        write_input(pa.concat_tables([upserts, deletes]), path)
        round_paths.append(str(path))
        round_rows.append(n_up + n_del)

    keep = np.flatnonzero(alive)
    upserted = with_values(base.take(keep), qty[keep], price[keep], "+I")
    write_reference(upserted, workdir / "ref_upserted.parquet")

    small_commits = max(1, commits - rounds - 2)
    small_rows = max(50, n // 10_000)
    small = new_orders(base, rng, small_commits * small_rows, first_key=int(pc.max(base.column(KEYS[0])).as_py()) + 1)
    write_input(small, workdir / "small.parquet")
    final = pa.concat_tables([upserted, small])
    write_reference(final, workdir / "ref_final.parquet")

    max_key = int(pc.max(base.column(KEYS[0])).as_py())
    lo, hi = (int(max_key * s) for s in SELECT_KEY_SHARE)
    plan = Plan(
        sf=sf, base_rows=n, rounds=round_paths, round_rows=round_rows, small=str(workdir / "small.parquet"),
        small_commits=small_commits, small_rows=small_rows, base=str(workdir / "base.parquet"),
        ref_upserted=str(workdir / "ref_upserted.parquet"), ref_final=str(workdir / "ref_final.parquet"),
        upserted_rows=upserted.num_rows, final_rows=final.num_rows, select_month=SELECT_MONTH,
        select_lo=lo, select_hi=hi, select_rows_upserted=selected_rows(upserted, SELECT_MONTH, lo, hi),
        select_rows_final=selected_rows(final, SELECT_MONTH, lo, hi), bucket=bucket,
        commits_before_expire=1 + rounds + 1 + small_commits,
    )
    plan.save(workdir / "plan.json")
    return plan


def new_orders(base: pa.Table, rng: np.random.Generator, rows: int, first_key: int) -> pa.Table:
    """``rows`` copies of random base rows as new single-line orders shipped in `SMALL_MONTH`."""
    rows_ = base.take(rng.integers(0, base.num_rows, size=rows))
    schema = rows_.schema
    keys = np.arange(first_key, first_key + rows, dtype=np.int64)
    start = np.datetime64(f"{SMALL_MONTH}-01").astype(np.int64)
    shipdate = pa.array((start + np.arange(rows) % 28).astype(np.int32)).cast(pa.int32()).view(pa.date32())
    replace = {
        KEYS[0]: pa.array(keys),
        KEYS[1]: pa.array(np.ones(rows, dtype=np.int32)),
        "l_shipdate": shipdate,
        PARTITION: ship_months(shipdate),
        OP: pa.repeat(pa.scalar("+I"), rows),
    }
    for name, values in replace.items():
        i = schema.get_field_index(name)
        rows_ = rows_.set_column(i, schema.field(i), values.cast(schema.field(i).type))
    return rows_


def selected_rows(table: pa.Table, month: str, lo: int, hi: int) -> int:
    mask = pc.and_(pc.equal(table.column(PARTITION), month),
                   pc.and_(pc.greater_equal(table.column(KEYS[0]), lo), pc.less(table.column(KEYS[0]), hi)))
    return int(pc.sum(mask).as_py() or 0)
