"""File-index kinds Paimon 1.x writes that Java 0.9 has not, against pypaimon-rust 0.4 (issue 14).

Java 0.9's jar holds two index kinds, ``bloom-filter`` and ``bitmap`` version 1; pypaimon 2.1
writes and reads none (it carries ``_EMBEDDED_FILE_INDEX`` through, nothing more); pypaimon-rust
0.4 writes and reads bitmap versions 1 and 2 (2 by default, as Java 1.x), ``bsi`` and
``range-bitmap``. So it is the only writer here of a table such as Java 1.x leaves: we prune by
its version-2 bitmaps, its bsi and its range-bitmap indexes exactly (every row still read), and it
reads the version-1 bitmaps we write (bsi and range-bitmap both ways: tests/interop/test_bsi_interop.py,
tests/interop/test_range_bitmap_interop.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.formats.file_index import read_container
from lake_assets.ops.file_index_prune import index_may_match
from lake_assets.predicate import Predicate

from .paimon import PypaimonRust

ROWS_PER_FILE = 40


def _value(i: int, column: str) -> str:
    """Row ``i``'s SQL literal in ``column``: ``s`` a string per 10 rows, null every 7th row;
    ``b`` 3 i; ``n`` i // 5."""
    if column == "s":
        return "NULL" if i % 7 == 0 else f"'s{i // 10}'"
    return str(3 * i if column == "b" else i // 5)


def _verdicts(t: Any, flt: list[tuple[str, str, Any]]) -> list[bool]:
    """Per live file (in the order written), whether our index pruning keeps it for ``flt``."""
    pred = Predicate.of(flt)
    assert pred is not None
    entries = sorted(t.store.file_store_scan().live_entries(t.latest_snapshot()),
                     key=lambda e: e.file.min_sequence_number)
    return [index_may_match(t.store, e, pred, t.schema) for e in entries]


@pytest.mark.parametrize("threshold", ["1 mb", "1 b"], ids=["embedded", "index-file"])
def test_we_prune_by_rust_bitmap_v2_bsi_and_range_bitmap(
        rust: PypaimonRust, tmp_path: Path, threshold: str) -> None:
    wh = str(tmp_path / "wh")
    rust.sql(wh, "CREATE SCHEMA paimon.db",
             "CREATE TABLE paimon.db.t (id INT, s STRING, b BIGINT, n INT) WITH ("
             "'file-index.bitmap.columns'='s', 'file-index.bsi.columns'='b', "
             f"'file-index.range-bitmap.columns'='n', 'file-index.in-manifest-threshold'='{threshold}')")
    for k in range(4):  # four files: s 's{4k}'..'s{4k+3}', b and n growing
        ids = range(k * ROWS_PER_FILE, (k + 1) * ROWS_PER_FILE)
        rust.sql(wh, "INSERT INTO paimon.db.t VALUES " + ",".join(
            f"({i}, {_value(i, 's')}, {_value(i, 'b')}, {_value(i, 'n')})" for i in ids))
    t = Catalog(wh).get_table("db.t")
    # what rust wrote: bitmap version 2 (Java 1.x's default), bsi and range-bitmap
    entries = t.store.file_store_scan().live_entries(t.latest_snapshot())
    assert len(entries) == 4
    kinds = set()
    for e in entries:
        if e.file.embedded_file_index is not None:
            data = e.file.embedded_file_index
        else:
            (index_file,) = e.file.extra_files
            (data_path,) = Path(wh).rglob(e.file.file_name)
            data = (data_path.parent / index_file).read_bytes()
        container = read_container(data)
        assert container["s"]["bitmap"][0] == 2
        kinds |= {k for types in container.values() for k in types}
    assert kinds == {"bitmap", "bsi", "range-bitmap"}
    assert (threshold == "1 mb") == all(e.file.embedded_file_index is not None for e in entries)

    full = t.to_arrow()
    assert sorted(r["id"] for r in rust.read_rows(wh, "db.t")) == sorted(full.column("id").to_pylist())
    pruned: list[tuple[list[tuple[str, str, Any]], list[bool]]] = [  # filter, the files (of 4) kept
        ([("s", "=", "s5")], [False, True, False, False]),
        ([("s", "in", ["s0", "s15"])], [True, False, False, True]),
        ([("s", "=", "nope")], [False] * 4),
        ([("s", "!=", "s5")], [True] * 4),
        # SQL's nulls (Paimon's In / NotIn): a null row never matches NOT IN, so the first file,
        # holding only s0..s3 and nulls, goes (Java's flip would keep it for its null rows)
        ([("s", "not in", [f"s{i}" for i in range(4)])], [False, True, True, True]),
        ([("s", "in", ["s5", None])], [False, True, False, False]),  # an in list's null: no rows
        ([("s", "=", "s5"), ("id", "=", 3)], [False, True, False, False]),
        # bsi (b = 3 i): the files holding a match only
        ([("b", "=", 3)], [True, False, False, False]),
        ([("b", "=", -1)], [False] * 4),
        ([("b", ">=", 3 * 150)], [False, False, False, True]),
        ([("b", "=", 3), ("s", "=", "s9")], [False] * 4),  # s9 lies in the third file, b = 3 in the first
        # range-bitmap (n = i // 5: 8 k .. 8 k + 7 in file k)
        ([("n", "in", [1, 30])], [True, False, False, True]),
        ([("n", "=", 10_000)], [False] * 4),
        ([("n", ">", 15), ("n", "<=", 16)], [False, False, True, False]),
        ([("n", "is null")], [False] * 4),
    ]
    for flt, kept in pruned:
        assert _verdicts(t, flt) == kept, flt
        pred = Predicate.of(flt)
        assert pred is not None
        got = t.to_arrow(filter=flt).sort_by("id")
        assert got.equals(pred.filter_table(full).sort_by("id")), flt


def _sql_expected(data: pa.Table, column: str, op: str, literal: Any) -> list[int]:
    """The ids SQL's ``column op literal`` selects (a null row matches no comparison)."""
    values = literal if isinstance(literal, list) else [literal]
    out = []
    for row in data.to_pylist():
        v = row[column]
        if v is not None and (v in values) == (op in ("=", "in")):
            out.append(row["id"])
    return sorted(out)


@pytest.mark.parametrize(("threshold", "version"), [("1 mb", "1"), ("0", "1"), ("1 mb", "2")],
                         ids=["embedded", "index-file", "version-2"])
def test_rust_reads_our_bitmap_indexed_tables_with_filters(rust: PypaimonRust, tmp_path: Path,
                                                           threshold: str, version: str) -> None:
    """Version 2 is ours too (``file-index.bitmap.<column>.version = 2``, small index blocks): rust
    prunes by it and returns every row, and our own pruning keeps exactly the files with a match."""
    wh = str(tmp_path / "wh")
    schema = pa.schema([("id", pa.int32()), ("s", pa.string()), ("n", pa.int64())])
    lake = Catalog(wh)
    lake.create_database("db")
    per_column = {f"file-index.bitmap.{c}.{k}": v for c in ("s", "n")
                  for k, v in (("version", version), ("index-block-size", "64 b"))} if version == "2" else {}
    t = lake.create_table("db.t", schema, options={
        "bucket": "-1", "file-index.bitmap.columns": "s,n", "file-index.in-manifest-threshold": threshold,
        **per_column})
    for k in range(3):
        ids = list(range(k * ROWS_PER_FILE, (k + 1) * ROWS_PER_FILE))
        t.write_arrow(pa.table({"id": ids, "s": [None if i % 7 == 0 else f"s{i // 10}" for i in ids],
                                "n": [i // 5 for i in ids]}, schema=schema))
    data = t.to_arrow()
    for column, op, literal, sql in [
        ("s", "=", "s5", "s = 's5'"), ("s", "=", "nope", "s = 'nope'"),
        ("s", "in", ["s0", "s11"], "s IN ('s0', 's11')"), ("s", "!=", "s3", "s <> 's3'"),
        ("s", "not in", ["s1", "s2"], "s NOT IN ('s1', 's2')"),
        ("n", "=", 9, "n = 9"), ("n", "in", [0, 23], "n IN (0, 23)"), ("n", "not in", [1, 2], "n NOT IN (1, 2)"),
    ]:
        rows = rust.query(wh, f"SELECT id FROM paimon.db.t WHERE {sql}")
        assert sorted(r["id"] for r in rows) == _sql_expected(data, column, op, literal), sql
    if version == "2":
        for payload in _payloads(t):
            assert payload[0] == 2
        # file k holds ids 40k..40k+39: s = 's5' only in file 1, n = 3 only in file 0, none holds 'nope'
        assert _verdicts(t, [("s", "=", "s5")]) == [False, True, False]
        assert _verdicts(t, [("n", "=", 3)]) == [True, False, False]
        assert _verdicts(t, [("s", "=", "nope")]) == [False, False, False]
        assert _verdicts(t, [("s", "is null", None)]) == [True, True, True]


def _payloads(t: Any) -> list[bytes]:
    """Every bitmap payload of the table's live files (embedded indexes)."""
    out = []
    for e in t.store.file_store_scan().live_entries(t.latest_snapshot()):
        out += [kinds["bitmap"] for kinds in read_container(e.file.embedded_file_index).values()]
    return out


def test_stored_v2_vectors_are_rusts(rust: PypaimonRust, tmp_path: Path) -> None:
    """tests/data/bitmap_index_v2_rust_vectors.json (tests/unit/test_bitmap_index_v2.py's peer-free
    check) holds what pypaimon-rust writes: a version-2 bitmap of a string and of a bigint column,
    index blocks of 64 and 100 bytes, so several of them."""
    import base64
    import json

    wh = str(tmp_path / "wh")
    rows = []
    for i in range(300):
        s = "NULL" if i % 11 == 0 else f"'v{(i * 7) % 97}'"
        n = "NULL" if i == 5 else str(((i * 13) % 150) - 75)
        rows.append(f"({i}, {s}, {n})")
    rust.sql(wh, "CREATE SCHEMA paimon.db",
             "CREATE TABLE paimon.db.v (id INT, s STRING, n BIGINT) WITH ('file-index.bitmap.columns'='s,n', "
             "'file-index.bitmap.s.index-block-size'='64 b', 'file-index.bitmap.n.index-block-size'='100 b', "
             "'file-index.in-manifest-threshold'='1 b')",
             "INSERT INTO paimon.db.v VALUES " + ",".join(rows))
    (index_path,) = Path(wh).rglob("*.index")
    container = read_container(index_path.read_bytes())
    stored = json.loads((Path(__file__).parents[1] / "data" / "bitmap_index_v2_rust_vectors.json").read_text())
    for case in stored["bitmaps"]:
        assert container[case["column"]]["bitmap"] == base64.b64decode(case["payload"]), case["column"]
    data = Catalog(wh).get_table("db.v").to_arrow().sort_by("id")
    for case in stored["bitmaps"]:
        assert data.column(case["column"]).to_pylist() == case["values"]
