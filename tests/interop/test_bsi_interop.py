"""The bsi file index (Paimon 1.x) against pypaimon-rust 0.4, its only writer here (Java 0.9 has none).

Java HEAD's source (``BitSliceIndexBitmapFileIndex``, ``BitSliceIndexRoaringBitmap``) defines the
bytes. pypaimon-rust writes the same layout with one difference: it serializes its roaring bitmaps
without ``runOptimize``, which Java's ``RoaringBitmap32.serialize`` calls. We follow Java's source,
so our payload is byte-identical to rust's where no bitmap has a run worth encoding (scattered
values and nulls), and otherwise the same index (every bitmap, min, max and row count) in fewer
bytes. Both read both.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.formats.bsi_index import BsiIndex, BsiIndexBuilder
from lake_assets.formats.file_index import read_container
from lake_assets.ops.file_index_prune import index_may_match
from lake_assets.predicate import Predicate

from .paimon import PypaimonRust

COLUMNS = ("a TINYINT", "i INT", "b BIGINT", "d DATE", "e DECIMAL(10,2)", "t3 TIMESTAMP(3)", "t6 TIMESTAMP(6)")


def _scrambled(i: int) -> int:
    return (i * 2654435761) % 1_000_003


def _sql_row(i: int, null_every: int | None) -> str:
    """Row ``i`` as SQL: one pseudo-random v in [-100, 100) in every column's terms, null when
    ``null_every`` says (None: ~2 rows in 3, scattered, so that no bitmap holds a run)."""
    h = _scrambled(i)
    null = (h % 3 != 0) if null_every is None else i % null_every == 0
    if null:
        return f"({i}, " + ", ".join(["NULL"] * len(COLUMNS)) + ")"
    v = h % 200 - 100
    return (f"({i}, {v}, {v * 1000}, {v * 10**12}, CAST('2000-01-01' AS DATE) + INTERVAL '{v} days', "
            f"CAST({v / 4} AS DECIMAL(10,2)), TIMESTAMP '2000-01-01 00:00:00' + INTERVAL '{v * 7} milliseconds', "
            f"TIMESTAMP '2000-01-01 00:00:00' + INTERVAL '{v * 7} microseconds')")


def _rust_table(rust: PypaimonRust, wh: str, name: str, batches: list[list[int]], null_every: int | None,
                threshold: str = "1 b") -> None:
    rust.sql(wh, "CREATE SCHEMA IF NOT EXISTS paimon.db",
             f"CREATE TABLE paimon.db.{name} (id INT, {', '.join(COLUMNS)}) WITH ("
             f"'file-index.bsi.columns'='id,{','.join(c.split()[0] for c in COLUMNS)}', "
             f"'file-index.in-manifest-threshold'='{threshold}')")
    for ids in batches:
        rust.sql(wh, f"INSERT INTO paimon.db.{name} VALUES " + ",".join(_sql_row(i, null_every) for i in ids))


def _payloads(wh: str, t: Any) -> list[dict[str, bytes]]:
    """Each live file's bsi payloads by column, in the order written."""
    out = []
    for e in sorted(t.store.file_store_scan().live_entries(t.latest_snapshot()),
                    key=lambda e: e.file.min_sequence_number):
        if e.file.embedded_file_index is not None:
            data = e.file.embedded_file_index
        else:
            (index_file,) = e.file.extra_files
            (data_path,) = Path(wh).rglob(e.file.file_name)
            data = (data_path.parent / index_file).read_bytes()
        out.append({c: types["bsi"] for c, types in read_container(data).items() if types.get("bsi") is not None})
    return out


def _ours(t: Any, column: str) -> bytes:
    """Our payload for the column's rows (one file's table, in file order)."""
    data = t.to_arrow()
    b = BsiIndexBuilder(t.schema.field(column).type, column)
    for chunk in data.column(column).chunks:
        b.add(chunk)
    return b.finish()


def test_our_payloads_are_rusts_for_every_type(rust: PypaimonRust, tmp_path: Path) -> None:
    wh = str(tmp_path / "wh")
    _rust_table(rust, wh, "scattered", [list(range(400))], None)
    _rust_table(rust, wh, "dense", [list(range(300))], 9)
    lake = Catalog(wh)
    for name in ("scattered", "dense"):
        t = lake.get_table(f"db.{name}")
        (theirs,) = _payloads(wh, t)
        assert set(theirs) == {"id", *(c.split()[0] for c in COLUMNS)}
        for column, payload in theirs.items():
            ours = _ours(t, column)
            assert BsiIndex.parse(ours) == BsiIndex.parse(payload), (name, column)
            # id 0..n-1 is one run; dense: nulls every 9th row leave runs of 8 in the ebm
            if name == "scattered" and column != "id":
                assert ours == payload, column
            else:
                # Java's source run-optimizes before serializing; rust does not
                assert len(ours) < len(payload), (name, column)


def _verdicts(t: Any, flt: list[tuple[str, str, Any]]) -> list[bool]:
    pred = Predicate.of(flt)
    assert pred is not None
    entries = sorted(t.store.file_store_scan().live_entries(t.latest_snapshot()),
                     key=lambda e: e.file.min_sequence_number)
    return [index_may_match(t.store, e, pred, t.schema) for e in entries]


@pytest.mark.parametrize("threshold", ["1 mb", "1 b"], ids=["embedded", "index-file"])
def test_we_prune_by_rusts_bsi_exactly(rust: PypaimonRust, tmp_path: Path, threshold: str) -> None:
    wh = str(tmp_path / "wh")
    # four files of ids k*50 .. k*50+49, so id ranges prune by file
    _rust_table(rust, wh, "p", [list(range(k * 50, k * 50 + 50)) for k in range(4)], 5, threshold)
    t = Catalog(wh).get_table("db.p")
    full = t.to_arrow()
    cases: list[tuple[list[tuple[str, str, Any]], list[bool] | None]] = [
        ([("id", "<", 50)], [True, False, False, False]),
        ([("id", ">=", 150)], [False, False, False, True]),
        ([("id", "in", [0, 199])], [True, False, False, True]),
        ([("id", "=", 1000)], [False] * 4),
        ([("id", ">", 60), ("id", "<=", 70)], [False, True, False, False]),
        ([("id", "not in", [1, 2])], [True] * 4),
        ([("b", "<", -99 * 10**12)], None), ([("b", ">=", 0)], None), ([("a", "=", -7)], None),
        ([("d", "<=", dt.date(1999, 10, 1))], None), ([("e", ">", Decimal("24.50"))], None),
        ([("t3", "<", dt.datetime(1999, 12, 31, 23, 59, 59, 500_000))], None),
        ([("t6", ">=", dt.datetime(2000, 1, 1, 0, 0, 0, 600))], None), ([("i", "!=", 5000)], None),
    ]
    for flt, kept in cases:
        verdicts = _verdicts(t, flt)
        if kept is not None:
            assert verdicts == kept, flt
        pred = Predicate.of(flt)
        assert pred is not None
        expected = pred.filter_table(full)
        # a file is skipped only when none of its rows match
        assert t.to_arrow(filter=flt).sort_by("id").equals(expected.sort_by("id")), flt
    # the value columns: some filter above skips a file (the index is used, not only parsed)
    assert not all(all(_verdicts(t, flt)) for flt, kept in cases if kept is None)


def _sql_ids(data: pa.Table, column: str, test: Any) -> list[int]:
    return sorted(r["id"] for r in data.to_pylist() if test(r[column]))


@pytest.mark.parametrize("threshold", ["1 mb", "0"], ids=["embedded", "index-file"])
def test_rust_reads_our_bsi_tables_with_filters(rust: PypaimonRust, tmp_path: Path, threshold: str) -> None:
    wh = str(tmp_path / "wh")
    schema = pa.schema([("id", pa.int32()), ("b", pa.int64()), ("d", pa.date32()),
                        ("e", pa.decimal128(10, 2)), ("t", pa.timestamp("us"))])
    lake = Catalog(wh)
    lake.create_database("db")
    t = lake.create_table("db.t", schema, options={
        "bucket": "-1", "file-index.bsi.columns": "b,d,e,t", "file-index.in-manifest-threshold": threshold})
    for k in range(3):
        ids = list(range(k * 40, k * 40 + 40))
        vals = [None if i % 6 == 0 else (_scrambled(i) % 60 - 30) + 20 * k for i in ids]
        t.write_arrow(pa.table({
            "id": ids, "b": vals,
            "d": [None if v is None else dt.date(2000, 1, 1) + dt.timedelta(days=v) for v in vals],
            "e": [None if v is None else Decimal(v) / 4 for v in vals],
            "t": [None if v is None else dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=v) for v in vals]},
            schema=schema))
    data = t.to_arrow()
    epoch = dt.datetime(2000, 1, 1)
    for column, sql, test in [
        ("b", "b = 7", lambda v: v == 7), ("b", "b < -20", lambda v: v is not None and v < -20),
        ("b", "b <= 0", lambda v: v is not None and v <= 0), ("b", "b > 40", lambda v: v is not None and v > 40),
        ("b", "b >= 49", lambda v: v is not None and v >= 49), ("b", "b IN (-30, 3, 1000)", lambda v: v in (-30, 3)),
        ("b", "b NOT IN (1, 2)", lambda v: v is not None and v not in (1, 2)),
        ("b", "b <> 5", lambda v: v is not None and v != 5), ("b", "b IS NULL", lambda v: v is None),
        ("b", "b IS NOT NULL", lambda v: v is not None),
        ("b", "b BETWEEN -5 AND 5", lambda v: v is not None and -5 <= v <= 5),
        ("d", "d < CAST('1999-12-15' AS DATE)", lambda v: v is not None and v < dt.date(1999, 12, 15)),
        ("e", "e >= CAST(10.25 AS DECIMAL(10,2))", lambda v: v is not None and v >= Decimal("10.25")),
        ("t", "t > TIMESTAMP '2000-01-01 00:00:00.000030'",
         lambda v: v is not None and v > epoch + dt.timedelta(microseconds=30)),
    ]:
        rows = rust.query(wh, f"SELECT id FROM paimon.db.t WHERE {sql}")
        assert sorted(r["id"] for r in rows) == _sql_ids(data, column, test), sql
