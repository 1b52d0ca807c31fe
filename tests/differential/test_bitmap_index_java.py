"""Bitmap file indexes (``file-index.bitmap.*``, docs/format.md §7.6) against Paimon Java 0.9.

For the same rows and options our index bytes equal the bytes Java writes (every type Java 0.9's
bitmap keys, nulls, values alone and repeated, bitmaps with array, bitmap and run containers,
HashMaps that grew and doubled instead of treeifying); Java's ``FileIndexPredicate`` keeps and
drops our files exactly as our own pruning does for = / in / is null / is not null, and for
!= / not in and null literals keeps every file ours keeps (ours leaves null rows out, which never
match) and every file holding a match; Java's filtered reads of our tables and our filtered reads of Java's tables
return every row; our compaction of Java's bitmap-indexed table writes indexes Java uses; what we
do not write (BOOLEAN keys, map values) stays refused by name; version 2, which Java 0.9 cannot
write, is checked in test_bitmap_index_v2_java.py.
"""

from __future__ import annotations

import base64
import datetime as dt
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import UnsupportedFeatureError
from lake_assets.formats.bitmap_index import BitmapIndex, index_keys, write_bitmap_index
from lake_assets.formats.file_index import FileIndexBuilder, index_plan, read_container
from lake_assets.ops.file_index_prune import index_may_match
from lake_assets.predicate import Predicate
from lake_assets.spec.types import from_arrow, parse_type, to_arrow
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows, assert_same_table


def _index_bytes(wh: str, f: dict[str, Any]) -> bytes:
    """The container of one file Java lists: embedded, or its ``.index`` file."""
    if "embedded" in f:
        return base64.b64decode(f["embedded"])
    (name,) = [x for x in f["extra_files"] if x.endswith(".index")]
    (path,) = Path(wh).rglob(name)
    return path.read_bytes()


def _column(rng: random.Random, n: int, pool: list[Any], null_share: float) -> list[Any]:
    return [None if rng.random() < null_share else rng.choice(pool) for _ in range(n)]


_T0 = 1_700_000_000_000
CASES: list[tuple[str, pa.DataType, list[Any]]] = [
    ("int", pa.int32(), [0, 1, -1, 7, 2**31 - 1, -(2**31), 16, 32, 48, 1000]),
    ("bigint", pa.int64(), [0, -1, 2**63 - 1, -(2**63), 2**32, 5, 123456789012]),
    ("tinyint", pa.int8(), [0, -128, 127, 3, -3]),
    ("smallint", pa.int16(), [0, -32768, 32767, 300]),
    ("float", pa.float32(), [0.0, -0.0, 1.5, float("nan"), float("inf"), -2.25]),
    ("double", pa.float64(), [0.0, -0.0, 1.5, float("nan"), -1e300, 5e-324]),
    ("string", pa.string(), ["", "a", "ab", "abc", "abcd", "abcde", "héllo", "日本語" * 3, "x" * 40]),
    ("date", pa.date32(), [0, 19000, -5, 20000]),
    ("time", pa.time32("ms"), [0, 86_399_999, 1234]),
    ("ts3", pa.timestamp("ms"), [_T0, _T0 + 1, -1, 0]),
    ("ts6", pa.timestamp("us"), [_T0 * 1000 + 7, -1, 0, _T0 * 1000]),
    ("ts9", pa.timestamp("ns"), [_T0 * 10**6 + 999, _T0 * 10**6 + 1999, -1_500, 0]),
    ("ltz6", pa.timestamp("us", tz="UTC"), [_T0 * 1000 + 7, -1, 0]),
]


def _check_same_bytes(java: PaimonJava, wh: str, lake: Catalog, name: str, data: pa.Table,
                      options: dict[str, str] | None = None) -> bytes:
    opts = {"file-index.bitmap.columns": ",".join(data.column_names), "bucket": "-1", **(options or {})}
    java.create_table(wh, f"db.{name}", data.schema, options=opts)
    java.write(wh, f"db.{name}", data)
    (f,) = java.file_index_test(wh, f"db.{name}", None)
    theirs = _index_bytes(wh, f)
    builder = FileIndexBuilder(index_plan(lake.get_table(f"db.{name}").schema))
    builder.add(data)
    ours, to_file = builder.finish()
    assert ours == theirs
    assert to_file == ("embedded" not in f)
    return theirs


@pytest.mark.parametrize(("name", "typ", "pool"), CASES, ids=[c[0] for c in CASES])
def test_our_bitmap_bytes_are_javas(java: PaimonJava, wh: str, lake: Catalog, name: str, typ: pa.DataType,
                                    pool: list[Any]) -> None:
    rng = random.Random(name)
    # repeats and nulls; every value alone (and many nulls); a single null among repeats
    data = pa.table({
        "rep": pa.array(_column(rng, 300, pool, 0.2), typ),
        "solo": pa.array(pool + [None] * (300 - len(pool)), typ),
        "one_null": pa.array([None] + [pool[i % len(pool)] for i in range(299)], typ),
    })
    theirs = _check_same_bytes(java, wh, lake, name, data)
    # our reader takes Java's bytes: every value's rows are the rows holding it
    for column in data.column_names:
        payload = read_container(theirs)[column]["bitmap"]
        assert payload is not None
        index = BitmapIndex.parse(payload, from_arrow(typ))
        keys = index_keys(data.column(column), from_arrow(typ)).to_pylist()
        for v in set(keys):
            literal = data.column(column).take([keys.index(v)])
            assert list(index.rows_in(literal)) == [i for i, k in enumerate(keys) if k == v]


def test_bitmaps_of_every_container_kind_are_javas(java: PaimonJava, wh: str, lake: Catalog) -> None:
    # runs (sorted blocks), a dense value (> 4096 rows of 65536: a bitmap container), sparse arrays
    # spanning several 65536-row containers
    n = 140_000
    rng = random.Random(7)
    dense = [i % 3 for i in range(n)]
    runs = [i // 5000 for i in range(n)]
    sparse = [rng.randrange(2000) if i % 11 else None for i in range(n)]
    data = pa.table({"dense": pa.array(dense, pa.int32()), "runs": pa.array(runs, pa.int64()),
                     "sparse": pa.array(sparse, pa.int32())})
    _check_same_bytes(java, wh, lake, "big", data)


@pytest.mark.parametrize("step", [16, 64, 1 << 20], ids=["doubles-not-treeifies", "treeified", "one-bucket"])
def test_hash_map_collisions(java: PaimonJava, wh: str, lake: Catalog, step: int) -> None:
    """Values colliding in one HashMap bucket: 9 in a table of 16 doubles it (exactly Java's
    bytes); 9 in a table of 64 makes a tree, whose order we do not model: Java still reads ours."""
    values = [i * step for i in range(12)]
    data = pa.table({"v": pa.array(values * 2, pa.int32())})
    _, exact = write_bitmap_index(index_keys(data.column("v"), from_arrow(pa.int32())), from_arrow(pa.int32()))
    if exact:
        _check_same_bytes(java, wh, lake, f"c{step}", data)
        return
    t = lake.create_table(f"db.c{step}", data.schema, options={"file-index.bitmap.columns": "v", "bucket": "-1"})
    t.write_arrow(data)
    for v in (0, step * 11, 5, -step):
        (f,) = java.file_index_test(wh, f"db.c{step}", [("v", "=", v)])
        assert f["remain"] is (v in values)


SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("grp", pa.int32()), ("v", pa.float64())])


def _rows(ids: range, null_every: int = 0) -> pa.Table:
    return pa.table({"id": list(ids),
                     "name": [None if null_every and i % null_every == 0 else f"name-{i % 7}" for i in ids],
                     "grp": [i // 10 for i in ids], "v": [i / 2 for i in ids]}, schema=SCHEMA)


FILTERS: list[list[tuple[str, str, Any]] | list[list[tuple[str, str, Any]]]] = [
    [("grp", "=", 3)], [("grp", "=", 99)], [("grp", "in", [0, 5])], [("grp", "in", [40, 41])],
    [("grp", "!=", 0)], [("grp", "!=", 7)], [("grp", "not in", [0, 1, 2])], [("grp", "not in", [4, 5])],
    [("name", "=", "name-3")], [("name", "=", "nope")], [("name", "in", ["name-1", None])],
    [("name", "not in", ["name-1", "name-2"])], [("name", "!=", "name-0")],
    [("grp", "=", 2), ("name", "=", "name-5")],  # rows 20..29 hold name-5 only at id 26
    [("grp", "=", 2), ("id", "=", 33)],  # no row has both: only the bitmaps' AND shows it
    [[("grp", "=", 0)], [("grp", "=", 9)]],
    [("v", "=", 0.0)], [("v", "=", -0.0)],
    [("name", "is null")], [("name", "is not null")], [("grp", "=", 3), ("name", "is null")],
    [("name", "not in", ["name-1", None])], [("name", "in", [None])], [("name", "!=", None)],
]


def _check_verdicts(ours: dict[str, bool], theirs: dict[str, bool], flt: Any) -> None:
    """Our index keeps no file Java's prunes. It may prune more: ``!=`` / ``not in`` leave null
    rows out (Java's flip keeps them; they never match) and a null literal looks nothing up (Java
    looks up the null rows) - each such file is then shown to hold no match by the reads."""
    assert set(ours) == set(theirs)
    assert all(theirs[f] for f, kept in ours.items() if kept), flt
    if not any(op in ("!=", "not in") or (op == "in" and None in lit) for c in _clauses(flt) for _, op, lit in c):
        assert ours == theirs, flt


def _clauses(flt: Any) -> list[list[tuple[str, str, Any]]]:
    return [[(*t, None)[:3] for t in c] for c in (flt if isinstance(flt[0], list) else [flt])]


def _our_verdicts(t: Any, flt: Any) -> dict[str, bool]:
    """Per live file, whether our index pruning keeps it for ``flt`` (no stats pruning)."""
    pred = Predicate.of(flt)
    assert pred is not None
    entries = t.store.file_store_scan().live_entries(t.latest_snapshot())
    return {e.file.file_name: index_may_match(t.store, e, pred, t.schema) for e in entries}


@pytest.mark.parametrize("embedded", [True, False], ids=["embedded", "index-file"])
def test_java_prunes_our_files_as_we_do(java: PaimonJava, wh: str, lake: Catalog, embedded: bool) -> None:
    t = lake.create_table("db.t", SCHEMA, options={
        "file-index.bitmap.columns": "grp,name,id,v", "bucket": "-1",
        "file-index.in-manifest-threshold": "1 mb" if embedded else "0"})
    for k in range(4):  # four files of 30 rows: grp 3k..3k+2, some names null
        t.write_arrow(_rows(range(k * 30, k * 30 + 30), null_every=9 if k == 1 else 0))
    files = java.file_index_test(wh, "db.t", None)
    assert len(files) == 4 and all(("embedded" in f) == embedded for f in files)
    expected = java.read(wh, "db.t")
    for flt in FILTERS:
        theirs = {f["name"]: f["remain"] for f in java.file_index_test(wh, "db.t", flt)}
        _check_verdicts(_our_verdicts(t.refresh(), flt), theirs, flt)
        pred = Predicate.of(flt)
        assert pred is not None
        matching = pred.filter_table(expected)
        # pruning never changes what a read returns, ours or Java's: both filter as SQL does
        assert_same_table(t.to_arrow(filter=flt), matching)
        assert_same_table(java.read(wh, "db.t", filter=flt), matching)
    # a skipping index: most filters pinning one grp drop three files of four
    assert sum(not v for v in _our_verdicts(t, [("grp", "=", 3)]).values()) == 3


def test_java_is_null_tests_use_our_null_bitmaps(java: PaimonJava, wh: str, lake: Catalog) -> None:
    t = lake.create_table("db.n", SCHEMA, options={"file-index.bitmap.columns": "name", "bucket": "-1"})
    t.write_arrow(_rows(range(0, 20)))  # no null
    t.write_arrow(_rows(range(20, 40), null_every=20))  # one null (row 0: a lone position)
    t.write_arrow(_rows(range(40, 60), null_every=2))  # many nulls (a bitmap)
    t.write_arrow(pa.table({"id": [1, 2], "name": [None, None], "grp": [0, 0], "v": [0.0, 0.0]}, schema=SCHEMA))
    is_null = sorted(f["remain"] for f in java.file_index_test(wh, "db.n", [("name", "is null", None)]))
    assert is_null == [False, True, True, True]
    not_null = sorted(f["remain"] for f in java.file_index_test(wh, "db.n", [("name", "is not null", None)]))
    assert not_null == [False, True, True, True]


def test_we_prune_by_javas_bitmaps(java: PaimonJava, wh: str, lake: Catalog) -> None:
    java.create_table(wh, "db.j", SCHEMA, options={"file-index.bitmap.columns": "grp,name", "bucket": "-1"})
    for k in range(3):
        java.write(wh, "db.j", _rows(range(k * 30, k * 30 + 30), null_every=4))
    t = lake.get_table("db.j")
    for flt in FILTERS:
        theirs = {f["name"]: f["remain"] for f in java.file_index_test(wh, "db.j", flt)}
        _check_verdicts(_our_verdicts(t, flt), theirs, flt)
        assert_same_rows(t.to_arrow(filter=flt), java.read(wh, "db.j", filter=flt))
    planned = [f.file_name for sp in t.plan(filter=[("grp", "=", 4)]) for f in sp.files]
    assert len(planned) == 1
    assert t.to_arrow(filter=[("grp", "=", 4)]).column("id").to_pylist() == list(range(40, 50))


def test_our_compaction_of_javas_bitmap_table_indexes_outputs(java: PaimonJava, wh: str, lake: Catalog) -> None:
    java.create_table(wh, "db.c", SCHEMA, options={"file-index.bitmap.columns": "grp,name", "bucket": "-1"})
    for k in range(3):
        java.write(wh, "db.c", _rows(range(k, 90, 3)))
    t = lake.get_table("db.c")
    t.compact(full=True)
    (out,) = java.file_index_test(wh, "db.c", [("grp", "=", 4)])
    assert out["remain"] is True
    assert java.file_index_test(wh, "db.c", [("grp", "in", [100, 101])])[0]["remain"] is False
    assert java.file_index_test(wh, "db.c", [("name", "not in", [f"name-{i}" for i in range(7)])])[0]["remain"] \
        is False
    # the output's index is the one Java builds for the output's rows
    import pyarrow.parquet as pq

    (path,) = Path(wh).rglob(out["name"])
    rows = pq.read_table(path).select(["id", "name", "grp", "v"])
    java.create_table(wh, "db.again", SCHEMA, options={"file-index.bitmap.columns": "grp,name", "bucket": "-1"})
    java.write(wh, "db.again", rows)
    (again,) = java.file_index_test(wh, "db.again", None)
    assert _index_bytes(wh, out) == _index_bytes(wh, again)
    t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    assert_same_table(java.read(wh, "db.c", filter=[("grp", "in", [0, 8])]),
                      _rows(range(90)).filter(pa.compute.is_in(_rows(range(90)).column("grp"), pa.array([0, 8]))))


@pytest.mark.parametrize(("options", "match"), [
    ({"file-index.bitmap.columns": "flag"}, "BOOLEAN"),
    ({"file-index.range-bitmap.columns": "name", "file-index.range-bitmap.name.chunk-size": "3 gb"},
     "chunk-size"),
])
def test_what_we_do_not_write_stays_refused(java: PaimonJava, wh: str, lake: Catalog, options: dict[str, str],
                                            match: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("flag", pa.bool_())])
    java.create_table(wh, "db.r", schema, options={**options, "bucket": "-1"})
    t = lake.get_table("db.r")
    with pytest.raises(UnsupportedFeatureError, match=match):
        t.write_arrow(pa.table({"id": [1], "name": ["a"], "flag": [True]}, schema=schema))
    with pytest.raises(UnsupportedFeatureError, match=match):
        t.compact(full=True)
    assert t.to_arrow().num_rows == 0


def test_stored_vectors_are_javas_payloads(java: PaimonJava, wh: str) -> None:
    """tests/data/bitmap_index_java_vectors.json (the unit tests' Java-free check) holds what Java writes."""
    import json

    from tests.java.oracle_values import decode_values

    vectors = json.loads((Path(__file__).parents[1] / "data" / "bitmap_index_java_vectors.json").read_text())
    for k, case in enumerate(vectors["bitmaps"]):
        typ = to_arrow(parse_type(case["paimon_type"]))
        java.create_table(wh, f"db.v{k}", pa.schema([("c", typ)]), options={
            "file-index.bitmap.columns": "c", "bucket": "-1", "file-index.in-manifest-threshold": "10 mb"})
        java.write(wh, f"db.v{k}", pa.table({"c": decode_values(case["values"], typ)}))
        (f,) = java.file_index_test(wh, f"db.v{k}", None)
        assert read_container(_index_bytes(wh, f))["c"]["bitmap"] == base64.b64decode(case["payload"])
