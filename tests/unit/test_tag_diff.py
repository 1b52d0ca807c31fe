"""`read_changes` between two tags diffs the tags' files (`lake_assets.ops.tag_diff`): it needs no
snapshot in between and returns each key's net change. Java's answers are pinned in
``tests/differential/test_tag_diff.py``; these run without a JVM."""

from __future__ import annotations

from datetime import datetime, timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidArgumentError, OptionError

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("p", pa.string()), ("v", pa.float64()),
                    ("op", pa.string())])


def _write(t, rows: list[tuple[int, str, float | None, str]]) -> None:
    k, p, v, op = zip(*rows, strict=True)
    t.write_arrow(pa.table({"k": list(k), "p": list(p), "v": list(v), "op": list(op)}, schema=SCHEMA))


def _changes(t, start, end, **kw) -> list[tuple]:
    return sorted(((r["k"], r["p"], r["v"], r["_row_kind"]) for r in t.read_changes(start, end, **kw).to_pylist()),
                  key=repr)


@pytest.fixture
def table(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    return cat.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                            options={"bucket": "2", "rowkind.field": "op"})


def _history(t) -> None:
    _write(t, [(1, "x", 1.0, "+I"), (2, "x", 2.0, "+I"), (3, "y", 3.0, "+I"), (4, "y", float("nan"), "+I")])
    t.create_tag("A")
    _write(t, [(1, "x", 10.0, "+U"), (3, "y", None, "-D"), (5, "y", 5.0, "+I")])
    _write(t, [(1, "x", 11.0, "+U"), (2, "x", 2.0, "+I"), (4, "y", float("nan"), "+I")])  # 2, 4: same values
    _write(t, [(6, "x", 6.0, "+I")])
    _write(t, [(6, "x", None, "-D")])  # inserted and deleted between the tags: no change
    t.compact(full=True)
    t.create_tag("B")
    _write(t, [(7, "x", 7.0, "+I")])


NET = [(1, "x", 11.0, "+U"), (3, "y", 3.0, "-D"), (5, "y", 5.0, "+I")]


def test_tags_diff_after_the_snapshots_in_between_expired(table) -> None:
    _history(table)
    b = table.store.tag_manager().get("B").snapshot.id
    table.expire_snapshots(retain_min=1, retain_max=1, older_than=datetime.now() + timedelta(days=1))
    sm = table.store.snapshot_manager
    assert sm.earliest_id() == sm.latest_id() == b + 1  # only the tags keep A and B
    assert _changes(table, "A", "B") == NET
    assert table.read_changes("A", "B", columns=["v"]).column_names == ["v", "_row_kind"]
    assert _changes(table, "B", "B") == []
    with pytest.raises(InvalidArgumentError, match="before start"):
        table.read_changes("B", "A")
    with pytest.raises(InvalidArgumentError, match="source='changelog'"):
        table.read_changes("A", "B", source="changelog")


def test_diff_of_snapshot_ids_and_the_tables_scan_mode(table) -> None:
    _history(table)
    a, b = (table.store.tag_manager().get(x).snapshot.id for x in ("A", "B"))
    per_snapshot = _changes(table, a, b, source="delta")
    assert per_snapshot != NET and (6, "x", None, "-D") in per_snapshot  # every snapshot's changes
    assert _changes(table, a, b, source="diff") == NET
    table.update_schema().set_option("incremental-between-scan-mode", "diff").commit()
    assert _changes(table, a, b) == NET  # unset, source is the table's option
    assert repr(_changes(table, a, b, source="delta")) == repr(per_snapshot)  # NaN != NaN


def test_unknown_scan_mode_is_refused(table) -> None:
    with pytest.raises(OptionError, match="incremental-between-scan-mode"):
        table.update_schema().set_option("incremental-between-scan-mode", "sideways").commit()


def test_append_table_reads_the_files_the_later_tag_added(tmp_path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.a", pa.schema([("k", pa.int64())]), options={"bucket": "-1"})
    t.write_arrow(pa.table({"k": [1, 2]}))
    t.create_tag("A")
    t.write_arrow(pa.table({"k": [3]}))
    t.write_arrow(pa.table({"k": [4]}))
    t.create_tag("B")
    got = t.read_changes("A", "B")
    assert sorted(zip(got.column("k").to_pylist(), got.column("_row_kind").to_pylist(), strict=True)) == [
        (3, "+I"), (4, "+I")]


def test_per_snapshot_planning_refuses_two_tags(table) -> None:
    """The Spark source plans per-snapshot change splits: between two tags that would not be
    Paimon's answer, so it is refused (naming the tags) rather than given."""
    from lake_assets.errors import UnsupportedFeatureError
    from lake_assets.ops.stream import change_splits_between

    _history(table)
    with pytest.raises(UnsupportedFeatureError, match="between tags 'A' and 'B'"):
        change_splits_between(table.store, "A", "B")
    assert change_splits_between(table.store, "A", table.store.tag_manager().get("B").snapshot.id)  # mixed: as before


def test_postponed_rows_are_not_part_of_a_tag_diff(tmp_path) -> None:
    """Batch incremental reads see real buckets only (`lake_assets.ops.stream_postpone`): rows still
    waiting in ``bucket-postpone`` at the later tag are no change yet; moved by compaction, they are."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])
    t = cat.create_table("db.p", schema, primary_keys=["k"], options={"bucket": "-2"})
    t.write_arrow(pa.table({"k": [1], "v": [10]}, schema=schema))
    t.compact()
    t.create_tag("A")
    t.write_arrow(pa.table({"k": [1, 2], "v": [11, 20]}, schema=schema))
    t.create_tag("B")
    t.compact()
    t.create_tag("C")
    assert t.read_changes("A", "B").num_rows == 0
    got = t.read_changes("A", "C")
    assert sorted(zip(got.column("k").to_pylist(), got.column("_row_kind").to_pylist(), strict=True)) == [
        (1, "+I"), (2, "+I")]
