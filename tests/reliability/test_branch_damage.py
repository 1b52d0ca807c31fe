"""Damaged branch metadata stops every destructive maintenance op of the table, naming the branch.

A branch's snapshot, tag or schema file cut short, or a branch directory whose snapshots have no
schema: what the branch references cannot be told, so expiry, changelog expiry, orphan removal,
tag deletion, rollback and fast-forward of the main branch, and the same of another branch, raise
`CorruptMetadataError` naming the damaged branch and change nothing. Deleting the damaged branch
is the way out, and works.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CorruptMetadataError
from lake_assets.table import Table
from tests.reliability.invariants import tree_digest

_ALL = datetime.now() + timedelta(days=1)  # every snapshot is old enough to expire
SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _write(t: Table, ks: range, v: int) -> None:
    t.write_arrow(pa.table({"k": list(ks), "v": [v] * len(ks)}, schema=SCHEMA))


@pytest.fixture
def tables(tmp_path: Path) -> tuple[Catalog, Path]:
    """Main: snapshots 2-4 (tags ``t1`` on 1, ``t3`` on 3, snapshot 1's long-lived changelog); branches
    ``ok`` and ``bad``, each from ``t1`` with snapshots 2-3 of its own and a tag on 2."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"],
                         options={"bucket": "1", "changelog-producer": "input", "changelog.num-retained.min": "20"})
    _write(t, range(0, 4), 0)
    t.create_tag("t1")
    _write(t, range(2, 6), 1)
    _write(t, range(4, 8), 2)
    _write(t, range(6, 9), 3)
    t.create_tag("t3", 3)
    for name in ("ok", "bad"):
        t.create_branch(name, "t1")
        b = cat.get_table(f"db.t$branch_{name}")
        for i in range(2):
            _write(b, range(10 * i, 10 * i + 3), 5 + i)
        b.create_tag(f"{name}t", 2)
    # snapshot 1 expires (tag t1 keeps it): its changelog stays, long-lived, for expire_changelogs
    t.expire_snapshots(retain_min=3, retain_max=3, older_than=_ALL)
    assert t.store.changelog_manager().ids() == [1]
    return cat, tmp_path / "wh" / "db.db" / "t"


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:17])


DAMAGE: dict[str, Callable[[Path], None]] = {
    "snapshot truncated": lambda root: _truncate(root / "branch/branch-bad/snapshot/snapshot-3"),
    "tag truncated": lambda root: _truncate(root / "branch/branch-bad/tag/tag-badt"),
    "schema truncated": lambda root: _truncate(root / "branch/branch-bad/schema/schema-0"),
    "no schema": lambda root: os.unlink(root / "branch/branch-bad/schema/schema-0"),
}


def _ops(cat: Catalog) -> dict[str, Callable[[], object]]:
    from lake_assets.ops.expire import expire_changelogs

    main = cat.get_table("db.t")
    ok = cat.get_table("db.t$branch_ok")
    return {
        "expire": lambda: main.expire_snapshots(retain_min=1, retain_max=1, older_than=_ALL),
        "expire_changelogs": lambda: expire_changelogs(main.store, retain_min=1, retain_max=1, older_than_ms=0),
        "orphans": lambda: main.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True),
        "delete_tag": lambda: main.delete_tag("t3"),
        "rollback": lambda: main.rollback_to(snapshot_id=2),
        "fast_forward": lambda: main.fast_forward("ok"),
        "branch expire": lambda: ok.expire_snapshots(retain_min=1, retain_max=1, older_than=_ALL),
        "branch delete_tag": lambda: ok.delete_tag("okt"),
        "branch rollback": lambda: ok.rollback_to(snapshot_id=2),
    }


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_branch_stops_maintenance(tables: tuple[Catalog, Path], damage: str) -> None:
    cat, root = tables
    ops = _ops(cat)  # opened before the damage: a handle a long-lived process holds
    DAMAGE[damage](root)
    before = tree_digest(str(root))
    problems = []
    for what, op in ops.items():
        try:
            op()
            problems.append(f"{what}: ran")
        except CorruptMetadataError as exc:
            if "'bad'" not in str(exc) and "branch_bad" not in str(exc):
                problems.append(f"{what}: does not name the branch: {exc}")
        except Exception as exc:  # every op's outcome is reported at once
            problems.append(f"{what}: {exc!r}")
        if tree_digest(str(root)) != before:
            problems.append(f"{what} changed the table")
            before = tree_digest(str(root))
    assert not problems, "\n".join(problems)
    # the way out: delete the damaged branch; maintenance then runs and keeps what 'ok' names
    main = cat.get_table("db.t")
    main.delete_branch("bad")
    main.expire_snapshots(retain_min=1, retain_max=1, older_than=_ALL)
    main.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    ok = cat.get_table("db.t$branch_ok")
    for s in ok.snapshots():
        ok.to_arrow(snapshot_id=s.id)
    assert ok.to_arrow(tag="okt").num_rows == 4
