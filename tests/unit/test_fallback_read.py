"""``scan.fallback-branch`` reads of the core (lake_assets.ops.fallback_read) in the cases Java's
differential test (tests/differential/test_fallback_branch_java.py) does not build: a branch
falling back to main, a missing fallback branch, renamed columns, time travel by timestamp, row
deletes."""

from __future__ import annotations

import json
import time

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.errors import NoSuchTableError, SnapshotNotFoundError, UnsupportedFeatureError

SCHEMA = pa.schema([pa.field("pt", pa.int32(), nullable=False), pa.field("k", pa.int32(), nullable=False),
                    ("v", pa.string())])


def rows(pt: int, ks: list[int], v: str) -> pa.Table:
    return pa.table({"pt": [pt] * len(ks), "k": ks, "v": [v] * len(ks)}, schema=SCHEMA)


def carry(t: Table, value: str | None, *, rename: tuple[str, str] | None = None) -> None:
    """Write a next schema carrying scan.fallback-branch ``value`` and renaming a column (as
    another engine's ALTER would)."""
    latest = t.store.load_latest_schema()
    schema = json.loads(t.file_io.read_bytes(t.paths.schema_file(latest.id)))
    schema["id"] = latest.id + 1
    if value is not None:
        schema["options"]["scan.fallback-branch"] = value
    if rename is not None:
        for f in schema["fields"]:
            f["name"] = rename[1] if f["name"] == rename[0] else f["name"]
    t.file_io.write_bytes(t.paths.schema_file(latest.id + 1), json.dumps(schema).encode())


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, partition_keys=["pt"], primary_keys=["pt", "k"], options={"bucket": "1"})
    t.write_arrow(rows(1, [1, 2], "main"))  # main's 1
    t.create_branch("fb")
    return cat


def _sorted(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: (r["pt"], r["k"]))


def test_a_branch_falls_back_to_main(catalog: Catalog) -> None:
    fb = catalog.get_table("db.t$branch_fb")
    fb.write_arrow(rows(2, [1], "fb"))
    carry(fb, "main")  # the branch reads main's partitions it lacks
    assert _sorted(catalog.get_table("db.t$branch_fb").to_arrow()) == _sorted(
        pa.concat_tables([rows(1, [1, 2], "main"), rows(2, [1], "fb")]))
    assert catalog.get_table("db.t").to_arrow().num_rows == 2  # main carries no fallback


def test_a_missing_fallback_branch_fails_the_read_naming_it(catalog: Catalog) -> None:
    carry(catalog.get_table("db.t"), "gone")
    with pytest.raises(NoSuchTableError, match=r"scan\.fallback-branch = 'gone' names a branch that does not exist"):
        catalog.get_table("db.t").to_arrow()
    carry(catalog.get_table("db.t"), "  ")  # blank: no fallback, as Java's isNullOrWhitespaceOnly
    assert catalog.get_table("db.t").to_arrow().num_rows == 2


def test_renamed_columns_are_refused_naming_them(catalog: Catalog) -> None:
    fb = catalog.get_table("db.t$branch_fb")
    carry(fb, None, rename=("v", "w"))  # a branch schema whose column v is named w
    carry(catalog.get_table("db.t"), "fb")
    with pytest.raises(UnsupportedFeatureError, match=r"fallback branch 'fb' .*names its columns \['pt', 'k', 'w'\]"):
        catalog.get_table("db.t").to_arrow()


def test_time_travel_by_timestamp_reads_the_fallback_of_that_time(catalog: Catalog) -> None:
    fb = catalog.get_table("db.t$branch_fb")
    fb.write_arrow(rows(2, [1], "old"))  # fb's 1
    time.sleep(0.005)  # a later millisecond: the two snapshots' times differ
    fb.write_arrow(rows(2, [1], "new"))  # fb's 2
    carry(catalog.get_table("db.t"), "fb")
    t = catalog.get_table("db.t")
    first, second = list(fb.snapshots())
    assert [r["v"] for r in t.to_arrow(timestamp=first.time_millis, filter=[("pt", "=", 2)]).to_pylist()] == ["old"]
    assert [r["v"] for r in t.to_arrow(timestamp=second.time_millis, filter=[("pt", "=", 2)]).to_pylist()] == ["new"]
    assert [r["v"] for r in t.to_arrow(filter=[("pt", "=", 2)]).to_pylist()] == ["new"]
    # by snapshot id: main's snapshot 1 precedes every fallback snapshot: the fallback's snapshot 1 (Java 0.9)
    assert [r["v"] for r in t.to_arrow(snapshot_id=1, filter=[("pt", "=", 2)]).to_pylist()] == ["old"]
    fb.expire_snapshots(retain_min=1, retain_max=1)  # its snapshot 1 is gone: nothing to fall back to
    with pytest.raises(SnapshotNotFoundError, match=r"its snapshot 1 \(where Paimon 0.9 reads then\) is gone"):
        catalog.get_table("db.t").to_arrow(snapshot_id=1)


def test_deleting_rows_of_a_table_carrying_a_fallback_is_refused(tmp_path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.a", SCHEMA, partition_keys=["pt"], options={"deletion-vectors.enabled": "true"})
    t.write_arrow(rows(1, [1, 2], "main"))
    t.create_branch("fb")
    carry(t, "fb")
    a = cat.get_table("db.a")
    before = sorted(p.name for p in (tmp_path / "wh").rglob("*") if p.is_file())
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot delete rows of db\.a: it carries scan\.fallback-branch"):
        a.delete_where([("k", "=", 1)])
    assert sorted(p.name for p in (tmp_path / "wh").rglob("*") if p.is_file()) == before
    assert a.to_arrow().num_rows == 2
