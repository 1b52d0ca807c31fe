"""The step harness the maintenance property tests share: a primary-key table whose writes carry
their row kind, random histories of writes, compactions, expirations and tags applied to it, a dict
model of every retained snapshot's and tag's state, and the read-back checks against that model."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa
from hypothesis import strategies as st

from lake_assets import Catalog, Table

FUTURE = datetime.now() + timedelta(days=1)
Row = tuple[int, str, int]  # (key, row kind, value)


def write_step(max_key: int) -> st.SearchStrategy[tuple[str, list[Row]]]:
    """A ("write", rows) step: 1-15 inserts or deletes of keys 0..``max_key``."""
    return st.tuples(st.just("write"), st.lists(st.tuples(st.integers(0, max_key), st.sampled_from(["+I", "-D"]),
                                                          st.integers(0, 99)), min_size=1, max_size=15))


@contextmanager
def kv_table(options: dict[str, str]) -> Iterator[Table]:
    """A fresh ``db.t`` (k primary key, op the row kind field, v) with ``options``, in a temporary warehouse."""
    with tempfile.TemporaryDirectory() as wh:
        cat = Catalog(wh)
        cat.create_database("db")
        yield cat.create_table(
            "db.t", pa.schema([("k", pa.int64()), ("op", pa.string()), ("v", pa.int64())]), primary_keys=["k"],
            options={"rowkind.field": "op", "write-only": "true", **options},
        )


def write_rows(t: Table, rows: Sequence[Row]) -> None:
    t.write_arrow(pa.table({"k": [a[0] for a in rows], "op": [a[1] for a in rows], "v": [a[2] for a in rows]},
                           schema=t.arrow_schema))


class ModelledHistory:
    """Applies steps to ``t`` and keeps the model: the state each snapshot id had when it was
    committed (``states``) and each tag's (``tags``)."""

    def __init__(self, t: Table, *, expire_retain_max: bool) -> None:
        self.t = t
        self.expire_retain_max = expire_retain_max  # "expire" n retains at most n too, not only at least n
        self.model: dict[int, int] = {}
        self.states: dict[int, dict[int, int]] = {}
        self.tags: dict[str, dict[int, int]] = {}

    def apply(self, i: int, kind: str, arg: Any) -> bool:
        """Apply step ``i`` if it is a write, compact, expire or tag; False for another kind."""
        t = self.t
        if kind == "write":
            write_rows(t, arg)
            for k, op, v in arg:
                if op == "-D":
                    self.model.pop(k, None)
                else:
                    self.model[k] = v
        elif kind == "compact":
            t.compact(full=arg)
        elif kind == "expire":
            t.expire_snapshots(retain_min=arg, retain_max=arg if self.expire_retain_max else None, older_than=FUTURE)
        elif kind == "tag":
            latest = t.latest_snapshot()
            if latest is not None:
                name = f"t{i}"
                t.create_tag(name)
                self.tags[name] = self.states[latest.id]
        else:
            return False
        return True

    def record_and_check(self, i: int, kind: str) -> None:
        """Record the latest snapshot's state (once per id) and check that every retained snapshot
        and every tag reads back the state it had when committed."""
        t = self.t
        latest = t.latest_snapshot()
        if latest is not None:
            self.states.setdefault(latest.id, dict(self.model))
        for snap in t.snapshots():
            got = {r["k"]: r["v"] for r in t.to_arrow(snapshot_id=snap.id).to_pylist()}
            assert got == self.states[snap.id], f"snapshot {snap.id} after step {i} {kind}"
        for name, state in self.tags.items():
            assert {r["k"]: r["v"] for r in t.to_arrow(tag=name).to_pylist()} == state
