"""A read resolves its snapshot once and carries it: a commit landing after the lookup must not
make the read pair one snapshot's schema with another's files, or read a snapshot it did not plan."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


@pytest.fixture
def t(catalog: Catalog):
    table = catalog.create_table("db.once", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    for lo in (0, 100, 200):
        table.write_arrow(pa.table({"k": pa.array(range(lo, lo + 10), pa.int64()), "v": ["x"] * 10}))
    return table


def _commit_after_first_lookup(monkeypatch: pytest.MonkeyPatch, catalog: Catalog, t: Any, method: str) -> list[int]:
    """Wrap the snapshot manager's ``method`` so that right after its first answer another writer
    (its own table handle) commits 10 more rows; returns the list of snapshot ids it answered."""
    manager = t.store.snapshot_manager
    original: Callable[..., Any] = getattr(manager, method)
    answered: list[int] = []

    def looked_up(*a: Any, **kw: Any) -> Any:
        snap = original(*a, **kw)
        answered.append(snap.id)
        if len(answered) == 1:
            other = catalog.get_table("db.once")
            other.write_arrow(pa.table({"k": pa.array(range(300, 310), pa.int64()), "v": ["y"] * 10}))
        return snap

    monkeypatch.setattr(manager, method, looked_up)
    return answered


@pytest.mark.parametrize("read", ["to_arrow", "to_batches"])
def test_latest_read_is_the_snapshot_first_resolved(t, catalog: Catalog, monkeypatch: pytest.MonkeyPatch,
                                                     read: str):
    answered = _commit_after_first_lookup(monkeypatch, catalog, t, "latest")
    data = t.to_arrow() if read == "to_arrow" else pa.Table.from_batches(list(t.to_batches()))
    assert answered == [3]  # looked up once: the commit that landed after it (snapshot 4) is not seen
    assert data.num_rows == 30
    assert t.to_arrow().num_rows == 40  # a new read sees it


def test_time_travel_read_is_the_snapshot_first_resolved(t, catalog: Catalog, monkeypatch: pytest.MonkeyPatch):
    answered = _commit_after_first_lookup(monkeypatch, catalog, t, "earlier_or_equal_time")
    data = t.to_arrow(timestamp=datetime.now() + timedelta(days=1))
    assert answered == [3]
    assert data.num_rows == 30
