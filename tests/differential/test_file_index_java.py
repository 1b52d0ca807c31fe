"""File indexes (``file-index.bloom-filter.*``, docs/format.md §7.6) against Paimon Java 0.9.

Our hash of every type Paimon hashes equals Java's ``FastHash``; Java's own ``FileIndexPredicate``
evaluates the indexes we write (embedded and ``.index`` files) and keeps every file holding a
value asked for while skipping most files that do not; Java's scan with a filter, which prunes by
those indexes, returns every row; and we read Java's indexed tables, whose index bytes equal the
bytes we build from the same rows.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import UnsupportedFeatureError
from lake_assets.formats.fast_hash import fast_hash
from lake_assets.formats.file_index import FileIndexBuilder, bloom_filters, index_plan, read_container
from lake_assets.spec.types import from_arrow, parse_type
from tests.java.oracle import PaimonJava
from tests.java.oracle_values import encode_values

from .helpers import assert_same_table

HASHED = [
    pa.array(["", "a", "héllo", "x" * 7, "y" * 8, "z" * 31, "w" * 32, "v" * 33, "u" * 100, "日本語" * 13, None]),
    pa.array([b"", b"\x00\xff", bytes(range(70)), None], pa.binary()),
    pa.array([0, -1, 127, -128], pa.int8()),
    pa.array([0, -1, 32767, -32768], pa.int16()),
    pa.array([0, 1, -1, 2**31 - 1, -(2**31), None], pa.int32()),
    pa.array([0, 1, -1, 2**63 - 1, -(2**63), 123456789012], pa.int64()),
    pa.array([0.0, -0.0, 1.5, float("nan"), float("inf"), -3.25e38], pa.float32()),
    pa.array([0.0, -0.0, 1.5, float("nan"), -1e300, 5e-324], pa.float64()),
    pa.array([0, 19000, -5], pa.date32()),
    pa.array([0, 86_399_999, 1234], pa.time32("ms")),
    pa.array([0, 1_700_000_000_123, -1], pa.timestamp("ms")),
    pa.array([0, 1_700_000_000_123_456, -1], pa.timestamp("us")),
    pa.array([0, 1_700_000_000_123_456_789, -1, -1_500], pa.timestamp("ns")),
    pa.array([0, 1_700_000_000_123_456, -1], pa.timestamp("us", tz="UTC")),
]


@pytest.mark.parametrize("values", HASHED, ids=lambda a: str(a.type))
def test_hash_of_every_hashed_type_is_javas(java: PaimonJava, values: pa.Array) -> None:
    paimon_type = from_arrow(values.type)
    ours = fast_hash(values, paimon_type).view(np.int64).tolist()
    theirs = java.file_index_hash(paimon_type.to_json(), [v for v in encode_values(values) if v is not None])
    assert ours == theirs


@pytest.mark.parametrize(("paimon_type", "values"), [
    ("CHAR(5)", pa.array(["ab   ", "abcde"])),
    ("BINARY(3)", pa.array([b"\x00\x01\x02", b"abc"])),
    ("TIMESTAMP(0)", pa.array([1_700_000_000_000, -1_000], pa.timestamp("ms"))),
    ("TIMESTAMP(4)", pa.array([1_700_000_000_000_123, -7], pa.timestamp("us"))),
    ("TIMESTAMP(9)", pa.array([1_700_000_000_000_123_999, -1], pa.timestamp("ns"))),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", pa.array([1_700_000_000_123, -1], pa.timestamp("ms", tz="UTC"))),
    ("TIME(0)", pa.array([0, 3_600_000], pa.time32("ms"))),
])
def test_hash_by_declared_type_and_precision_is_javas(java: PaimonJava, paimon_type: str, values: pa.Array) -> None:
    dt_ = parse_type(paimon_type)
    assert fast_hash(values, dt_).view(np.int64).tolist() == java.file_index_hash(paimon_type, encode_values(values))


def test_stored_vectors_are_javas_answers(java: PaimonJava, wh: str) -> None:
    """tests/data/file_index_java_vectors.json (the unit tests' Java-free check) holds what Java says."""
    vectors = json.loads((Path(__file__).parents[1] / "data" / "file_index_java_vectors.json").read_text())
    assert [c["paimon_type"] for c in vectors["hashes"]] == [from_arrow(a.type).to_json() for a in HASHED]
    for case in vectors["hashes"]:
        assert java.file_index_hash(case["paimon_type"], case["values"]) == case["hashes"]
    for k, case in enumerate(vectors["containers"]):
        java.create_table(wh, f"db.v{k}", pa.schema([("id", pa.int64()), ("name", pa.string())]),
                          options=case["options"])
        java.write(wh, f"db.v{k}", pa.table({"id": list(range(40)), "name": [f"name-{i}" for i in range(40)]}))
        (f,) = java.file_index_test(wh, f"db.v{k}", None)
        assert f["embedded"] == case["embedded"]


SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("ts", pa.timestamp("us")), ("v", pa.float64())])


def _rows(ids: range) -> pa.Table:
    return pa.table({"id": list(ids), "name": [f"name-{i}" for i in ids],
                     "ts": [1_700_000_000_000_000 + i for i in ids], "v": [i / 2 for i in ids]}, schema=SCHEMA)


@pytest.mark.parametrize("embedded", [True, False], ids=["embedded", "index-file"])
def test_java_prunes_by_our_indexes_and_keeps_every_match(java: PaimonJava, wh: str, lake: Catalog,
                                                          embedded: bool) -> None:
    # items 40 at fpp 0.01: ~50 bytes a column, in the manifest; the default items: an .index file
    sizing = {"file-index.bloom-filter.id.items": "40", "file-index.bloom-filter.name.items": "40",
              "file-index.bloom-filter.ts.items": "40", "file-index.bloom-filter.id.fpp": "0.01",
              "file-index.bloom-filter.name.fpp": "0.01", "file-index.bloom-filter.ts.fpp": "0.01"}
    t = lake.create_table("db.t", SCHEMA, options={
        "file-index.bloom-filter.columns": "id,name,ts", **(sizing if embedded else {})})
    batches = [range(k * 30, k * 30 + 30) for k in range(4)]  # four files, disjoint values
    for ids in batches:
        t.write_arrow(_rows(ids))
    files = java.file_index_test(wh, "db.t", None)
    assert len(files) == 4
    for f in files:
        assert ("embedded" in f) == embedded
        assert f["extra_files"] == ([] if embedded else [f["name"] + ".index"])
    owner = {}
    for f in java.file_index_test(wh, "db.t", None):
        rows = pq_ids(wh, f["name"])
        owner.update(dict.fromkeys(rows, f["name"]))
    skipped = 0
    for i in range(0, 120, 7):
        for col, value in (("id", i), ("name", f"name-{i}"), ("ts", pa.scalar(1_700_000_000_000_000 + i,
                                                                                pa.timestamp("us")).as_py())):
            verdicts = {f["name"]: f["remain"] for f in java.file_index_test(wh, "db.t", [(col, "=", value)])}
            assert verdicts[owner[i]], f"Java's index check drops the file holding {col} = {value!r}"
            skipped += sum(not keep for keep in verdicts.values())
    # 3 files of 4 lack each value: a filter answering "maybe" everywhere would skip none
    assert skipped > 0.8 * 3 * 3 * len(range(0, 120, 7))
    absent = [(("id", 10_000 + i)) for i in range(20)]
    verdicts = [f["remain"] for col, v in absent for f in java.file_index_test(wh, "db.t", [(col, "=", v)])]
    assert verdicts.count(False) > 0.8 * len(verdicts)
    # Java's scan and reader prune by the indexes: every row of an equality / IN filter survives
    assert_same_table(java.read(wh, "db.t", filter=[("id", "in", [5, 65, 119])]),
                      t.to_arrow(filter=[("id", "in", [5, 65, 119])]))
    assert java.read(wh, "db.t", filter=[("name", "=", "name-77")]).column("id").to_pylist() == [77]


def pq_ids(wh: str, name: str) -> list[int]:
    import pyarrow.parquet as pq

    (path,) = Path(wh).rglob(name)
    return pq.read_table(path, columns=["id"]).column("id").to_pylist()


@pytest.mark.parametrize("items", ["50", "1000000"], ids=["embedded", "index-file"])
def test_we_read_javas_indexed_files_and_build_the_same_bytes(java: PaimonJava, wh: str, lake: Catalog,
                                                              items: str) -> None:
    opts = {"file-index.bloom-filter.columns": "name", "file-index.bloom-filter.name.items": items,
            "bucket": "-1"}
    java.create_table(wh, "db.j", SCHEMA, options=opts)
    data = _rows(range(40))
    java.write(wh, "db.j", data)
    t = lake.get_table("db.j")
    assert_same_table(t.to_arrow(), data)
    assert_same_table(t.to_arrow(filter=[("name", "=", "name-3")]), data.slice(3, 1))
    (f,) = java.file_index_test(wh, "db.j", None)
    if items == "50":
        theirs = base64.b64decode(f["embedded"])
    else:
        (index_file,) = f["extra_files"]
        (path,) = Path(wh).rglob(index_file)
        theirs = path.read_bytes()
    builder = FileIndexBuilder(index_plan(t.schema))
    builder.add(data)
    ours, to_file = builder.finish()
    assert ours == theirs  # one column: Java's container is fully determined
    assert to_file == (items != "50")
    assert read_container(theirs).keys() == {"name"}
    bloom = bloom_filters(theirs)["name"]
    assert bloom.might_contain(fast_hash(data.column("name"), from_arrow(pa.string()))).all()
    # we write on top of Java's table: our files get indexes Java evaluates
    t.write_arrow(_rows(range(100, 110)))
    verdicts = java.file_index_test(wh, "db.j", [("name", "=", "name-105")])
    assert sorted(v["remain"] for v in verdicts) in ([False, True], [True, True])
    assert [v["remain"] for v in verdicts if "name-105" in str(pq_names(wh, v["name"]))] == [True]
    # and our reads skip Java's file by Java's index: one file is opened, ours
    planned = [f.file_name for sp in t.refresh().plan(filter=[("name", "=", "name-105")]) for f in sp.files]
    assert planned == [v["name"] for v in verdicts if "name-105" in str(pq_names(wh, v["name"]))]
    assert t.to_arrow(filter=[("name", "in", ["name-3", "name-105"])]).column("id").to_pylist() == [3, 105]


def pq_names(wh: str, name: str) -> list[str]:
    import pyarrow.parquet as pq

    (path,) = Path(wh).rglob(name)
    return pq.read_table(path, columns=["name"]).column("name").to_pylist()


def test_javas_bitmap_index_is_read_maintained_and_written(java: PaimonJava, wh: str, lake: Catalog) -> None:
    # bitmap indexes in depth: tests/differential/test_bitmap_index_java.py
    java.create_table(wh, "db.b", SCHEMA, options={"file-index.bitmap.columns": "name"})
    java.write(wh, "db.b", _rows(range(10)))
    java.write(wh, "db.b", _rows(range(10, 20)))
    t = lake.get_table("db.b")
    assert_same_table(t.to_arrow(filter=[("name", "=", "name-12")]), _rows(range(12, 13)))
    t.create_tag("tag-1")
    t.expire_snapshots()
    assert t.remove_orphan_files(dry_run=True) is not None
    t.write_arrow(_rows(range(30, 31)))
    t.compact(full=True)
    (f,) = java.file_index_test(wh, "db.b", [("name", "=", "name-30")])
    assert f["remain"] is True
    assert java.file_index_test(wh, "db.b", [("name", "=", "name-31")])[0]["remain"] is False
    with pytest.raises(UnsupportedFeatureError, match=r"file-index\.vector\.columns"):
        t.update_schema().set_option("file-index.vector.columns", "id").commit()


def test_our_compaction_of_javas_indexed_table_indexes_its_outputs(java: PaimonJava, wh: str,
                                                                   lake: Catalog) -> None:
    java.create_table(wh, "db.c", SCHEMA, options={"file-index.bloom-filter.columns": "id,name"})
    for k in range(3):
        java.write(wh, "db.c", _rows(range(k, 60, 3)))
    before = {Path(p).name for p in Path(wh).rglob("*.index")}
    assert len(before) == 3
    t = lake.get_table("db.c")
    t.compact(full=True)
    files = java.file_index_test(wh, "db.c", [("name", "=", "name-31")])
    (out,) = files
    assert out["extra_files"] == [out["name"] + ".index"] and out["remain"] is True
    assert java.file_index_test(wh, "db.c", [("id", "in", [1000, 1001])])[0]["remain"] is False
    t.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    assert {Path(p).name for p in Path(wh).rglob("*.index")} == {out["name"] + ".index"}
    assert_same_table(java.read(wh, "db.c", filter=[("id", "in", [4, 31, 59])]), _rows(range(60)).take([4, 31, 59]))
