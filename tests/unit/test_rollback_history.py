"""Rollback removes the history it discards, as Paimon's ``RollbackHelper.cleanLargerThan``: the
snapshots, the long-lived changelogs and the tags of newer ids. The next commits reuse those ids,
so anything left naming one would name another history (session 16's maintenance review)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidArgumentError

_EVERYTHING = datetime.now() + timedelta(days=1)
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _write(t, ks, v) -> int:
    return t.write_arrow(pa.table({"k": ks, "v": [v] * len(ks)}, schema=SCHEMA))


def _state(t, **kw) -> dict:
    return {r["k"]: r["v"] for r in t.to_arrow(**kw).to_pylist()}


@pytest.fixture
def kv(catalog: Catalog):
    return catalog.create_table("db.kv", SCHEMA, primary_keys=["k"], options={"bucket": "1", "write-only": "true"})


def test_rollback_removes_newer_tags_so_a_reused_id_is_never_rolled_onto(kv) -> None:
    for v in range(1, 6):
        _write(kv, [v], v)
    kv.create_tag("two", 2)
    kv.create_tag("four", 4)
    kv.rollback_to(snapshot_id=3)
    assert set(kv.tags()) == {"two"}  # Paimon drops "four": snapshot 4 is rewritten below
    _write(kv, [9], 9)  # snapshot 4 again, another history
    assert _state(kv) == {1: 1, 2: 2, 3: 3, 9: 9}
    kv.rollback_to(tag="two")
    assert [s.id for s in kv.snapshots()] == [1, 2] and _state(kv) == {1: 1, 2: 2}


def test_rollback_to_a_tag_whose_id_another_history_reuses_is_refused(kv) -> None:
    """A tag an older lake_assets left behind a rollback: rolling onto it kept the new snapshot of
    that id (the wrong rows) or, with the id not reached yet, left a gap in the snapshot ids."""
    for v in range(1, 6):
        _write(kv, [v], v)
    tags = kv.store.tag_manager()
    kept = {"four": kv.snapshot(4), "five": kv.snapshot(5)}
    kv.rollback_to(snapshot_id=2)
    for name, snap in kept.items():  # as an older lake_assets left them: tags of the discarded history
        tags.create(name, snap)
    _write(kv, [8], 8)
    _write(kv, [9], 9)  # snapshot 4 of the new history
    before = ([s.id for s in kv.snapshots()], _state(kv))
    for name in kept:  # 4 names another commit now; 5 would sit on top of the new history's 4
        with pytest.raises(InvalidArgumentError, match=rf"tag '{name}'.*history an earlier rollback discarded"):
            kv.rollback_to(tag=name)
        assert ([s.id for s in kv.snapshots()], _state(kv)) == before
    assert _state(kv, tag="four") == {1: 1, 2: 2, 3: 3, 4: 4}  # the tags still read
    assert _state(kv, tag="five") == {1: 1, 2: 2, 3: 3, 4: 4, 5: 5}


def test_rollback_removes_newer_long_lived_changelogs(catalog: Catalog) -> None:
    t = catalog.create_table("db.c", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "write-only": "true", "changelog-producer": "input", "changelog.num-retained.min": "20"})
    for v in range(1, 7):
        _write(t, [v], v)
    t.create_tag("two", 2)
    t.expire_snapshots(retain_min=1, retain_max=1, older_than=_EVERYTHING)
    changelogs = t.store.changelog_manager()
    assert changelogs.ids() == [1, 2, 3, 4, 5]
    t.rollback_to(tag="two")
    assert changelogs.ids() == [1, 2] and changelogs.latest_id() == 2  # 2 stays, as in Java (its snapshot is back)
    assert [s.id for s in t.snapshots()] == [2] and set(t.tags()) == {"two"}
    # Left, changelog-3..5 of the discarded history would stand for the next commits' ids: once
    # those snapshots expire without a copy, streams would read the old changes as theirs.
    _write(t, [7], 7)
    assert sorted(t.read_changes(2, 3).column("k").to_pylist()) == [7]
    assert _state(t) == {1: 1, 2: 2, 7: 7}


def test_rollback_of_a_row_tracking_table_leaves_no_tag_with_reused_row_ids(catalog: Catalog) -> None:
    t = catalog.create_table("db.r", SCHEMA, options={"row-tracking.enabled": "true"})
    for v in range(1, 4):
        _write(t, [v, v + 10], v)
    t.create_tag("three", 3)
    t.rollback_to(snapshot_id=1)
    assert t.tags() == {}
    _write(t, [7], 7)  # row id 2 again, as Paimon's nextRowId says
    rows = t.to_arrow(columns=["k", "_ROW_ID"]).to_pylist()
    assert sorted((r["_ROW_ID"], r["k"]) for r in rows) == [(0, 1), (1, 11), (2, 7)]
