"""Stats-based pruning: every filter gives the same rows in both engines, on tables either wrote.

Java's reads here filter exactly (its pruning only skips files), so any file we skip wrongly, or
any file Java skips on our stats, shows up as a row difference.
"""

from __future__ import annotations

import datetime
import decimal

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import assert_same_table

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("dt", pa.string(), nullable=False),
    ("amount", pa.float64()),
    ("name", pa.string()),
    ("day", pa.date32()),
    ("price", pa.decimal128(12, 2)),
    ("ts", pa.timestamp("us")),
    ("flag", pa.bool_()),
    ("long", pa.string()),  # longer than Paimon's truncate(16) stats: min/max are cut and bumped
])


MAX_CHARS = "\U0010ffff" * 3  # the highest code point: a truncated max cannot be bumped past it


def chunk(k: int) -> pa.Table:
    # Each commit covers its own key and value ranges, so min/max stats can prune files.
    ids = list(range(k * 20, k * 20 + 20))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "dt": [f"2024-01-0{1 + i % 3}" for i in ids],
        "amount": [None if i % 11 == 0 else i * 0.5 for i in ids],
        "name": [None if i % 13 == 0 else f"n{i:04d}" for i in ids],
        "day": [datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in ids],
        "price": [decimal.Decimal(i) / 4 for i in ids],
        "ts": [datetime.datetime(2024, 1, 1) + datetime.timedelta(hours=i) for i in ids],
        "flag": [i % 2 == 0 for i in ids],
        "long": [f"a-shared-prefix-{MAX_CHARS if i % 7 == 0 else 'z'}-{i:05d}" for i in ids],
    }, schema=SCHEMA)


FILTERS = [
    [("id", "=", 45)],
    [("id", ">=", 30), ("id", "<", 70)],
    [("id", "in", [1, 41, 81, 999])],
    [("id", "not in", [1, 2, 3])],
    [("id", "!=", 10)],
    [("amount", ">", 30.0)],
    [("amount", "<=", 2.5)],
    [("name", "=", "n0042")],
    [("name", ">", "n0070")],
    [("day", "<", datetime.date(2024, 1, 10))],
    [("price", ">=", decimal.Decimal("20.25"))],
    [("ts", ">", datetime.datetime(2024, 1, 4, 12))],
    [("flag", "=", True), ("id", "<", 30)],
    [("dt", "=", "2024-01-02"), ("id", ">", 50)],
    [[("id", "<", 5)], [("id", ">", 95)]],
    [[("dt", "=", "2024-01-03"), ("amount", "<", 10.0)], [("name", "=", "n0077")]],
    [("long", "=", "a-shared-prefix-z-00045")],
    [("long", "=", "a-shared-prefix-\U0010ffff\U0010ffff\U0010ffff-00042")],
    [("long", ">", "a-shared-prefix-z-00080")],
    [("long", "<", "a-shared-prefix-z-00003")],
]


@pytest.mark.parametrize("layout", ["pk", "pk-partitioned", "append"])
@pytest.mark.parametrize("writer", ["java", "lake"])
def test_filters_give_the_same_rows(java: PaimonJava, wh: str, lake: Catalog, layout: str, writer: str) -> None:
    pk = layout.startswith("pk")
    keys = ["id", "dt"] if pk else []
    parts = ["dt"] if layout == "pk-partitioned" else []
    opts = {"bucket": "2"} if pk else {"bucket": "-1"}
    if writer == "java":
        java.create_table(wh, "db.f", SCHEMA, primary_keys=keys, partition_keys=parts, options=opts)
        for k in range(5):
            java.write(wh, "db.f", chunk(k))
        t = lake.get_table("db.f")
    else:
        t = lake.create_table("db.f", SCHEMA, primary_keys=keys, partition_keys=parts, options=opts)
        for k in range(5):
            t.write_arrow(chunk(k))
    full = t.to_arrow()
    assert full.num_rows == 100
    cols = ["name", "id", "price"]
    assert_same_table(t.to_arrow(columns=cols, filter=FILTERS[1]), java.read(wh, "db.f", projection=cols,
                                                                             filter=FILTERS[1]))
    for flt in FILTERS:
        ours = t.to_arrow(filter=flt)
        theirs = java.read(wh, "db.f", filter=flt)
        assert_same_table(ours, theirs)
        assert ours.num_rows < 100 or flt in ([("id", "!=", 10)],)
