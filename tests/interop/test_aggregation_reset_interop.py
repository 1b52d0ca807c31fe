"""``aggregation.remove-record-on-delete`` both ways with pypaimon-rust 0.4, which resets a key to
the -D's whole image as Paimon 1.4.1+/2.0 do (#7645, docs/format.md §10.1): later records
aggregate onto that image, across commits (a stored -D row is met again by the read merge) and in
one commit. ``sum`` keeps Java's -0.0; ``first_value`` keeps its initialized flag across the reset."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa

from lake_assets import Catalog

from .paimon import PypaimonRust

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.float64()), ("f", pa.int32()),
                    ("op", pa.string())])
OPTIONS = {"bucket": "1", "merge-engine": "aggregation", "rowkind.field": "op",
           "fields.v.aggregate-function": "sum", "fields.f.aggregate-function": "first_value",
           "aggregation.remove-record-on-delete": "true"}
CREATE = ("CREATE TABLE paimon.db.t (k INT NOT NULL, v DOUBLE, f INT, op STRING, PRIMARY KEY (k)) WITH ("
          + ", ".join(f"'{k}' = '{v}'" for k, v in OPTIONS.items()) + ")")


def _t(*rows: tuple[int, float | None, int | None, str]) -> pa.Table:
    return pa.Table.from_pylist([{"k": k, "v": v, "f": f, "op": op} for k, v, f, op in rows], schema=SCHEMA)


# k1: a lone -D stored, then an insert onto its image; k2: +I, -D in one commit (a -D row with the
# image), then an insert (first_value took a value before the -D: the image); k3: -D then +I in one
# commit (first_value had none: the +I's); k4: -0.0 + -0.0 across commits; k5: gone
COMMITS = [
    _t((1, 1.0, 1, "+I"), (2, 1.0, 1, "+I"), (4, -0.0, 1, "+I"), (5, 1.0, 1, "+I")),
    _t((1, 4.0, 4, "-D"), (2, 1.0, 1, "+I"), (2, 6.0, 6, "-D"), (3, 2.0, 2, "-D"), (3, 5.0, 5, "+I"),
       (4, -0.0, 2, "+I"), (5, 9.0, 9, "-D")),
    _t((1, 3.0, 3, "+I"), (2, 2.0, 2, "+I")),
]
EXPECTED = [(1, 7.0, 1.0, 4, "+I"), (2, 8.0, 1.0, 6, "+I"), (3, 7.0, 1.0, 5, "+I"), (4, -0.0, -1.0, 1, "+I")]


def _rows(rows: list[dict[str, Any]]) -> list[tuple]:
    return sorted((r["k"], r["v"], math.copysign(1.0, r["v"]), r["f"], r["op"]) for r in rows)


def test_a_delete_resets_to_its_image_both_ways(rust: PypaimonRust, tmp_path: Path) -> None:
    theirs, ours = str(tmp_path / "rust"), str(tmp_path / "lake")
    rust.sql(theirs, "CREATE SCHEMA paimon.db", CREATE)
    catalog = Catalog(ours)
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={**OPTIONS, "write-only": "true"})
    for data in COMMITS:
        rust.write_batch(theirs, "db.t", data)
        table.write_arrow(data)
    assert _rows(rust.read_rows(theirs, "db.t")) == EXPECTED
    assert _rows(Catalog(theirs).get_table("db.t").to_arrow().to_pylist()) == EXPECTED
    assert _rows(table.to_arrow().to_pylist()) == EXPECTED
    assert _rows(rust.read_rows(ours, "db.t")) == EXPECTED
    table.compact(full=True)
    assert _rows(table.to_arrow().to_pylist()) == EXPECTED
    assert _rows(rust.read_rows(ours, "db.t")) == EXPECTED
