"""Session 14's table kinds under every maintenance operation: a table of each kind, its writes,
and a step runner that interleaves writes, compactions, expiry, orphan removal, tags and rollback
while keeping a model of every retained snapshot's and tag's rows.

Shared by the property test (`test_maintenance_table_kinds.py`), the Java 0.9 differential test
and the pypaimon interop test of the same histories. The model of a snapshot is its rows as read
right after the step that committed it, before any maintenance touched the table; each kind's
own writer semantics are checked against engines and models in their own tests. After each step
`check` asserts that every retained snapshot and tag still reads its rows, that every file it
references (data files, their index files, deletion vector and hash index files) exists, and
that `health()` answers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from lake_assets import Catalog, Table
from lake_assets.ops.orphans import index_file_paths

FUTURE = datetime.now() + timedelta(days=1)
SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("v", pa.int64())])
DV = {"deletion-vectors.enabled": "true"}
FILE_INDEX_V2 = {"file-index.bitmap.columns": "v", "file-index.bitmap.v.version": "2",
                 "file-index.in-manifest-threshold": "1"}  # index bytes in .index files beside the data


@dataclass(frozen=True)
class Kind:
    """A table kind: how to create it and what its writes look like."""

    name: str
    options: dict[str, str]
    primary_keys: tuple[str, ...] = ()
    partitions: str = "ab"  # the dt values writes pick from
    deletes: bool = False  # append table with vectors: Table.delete_where steps
    read_columns: tuple[str, ...] = ("id", "dt", "v")

    def create(self, catalog: Catalog, identifier: str = "db.t") -> Table:
        return catalog.create_table(identifier, SCHEMA, primary_keys=list(self.primary_keys),
                                    partition_keys=["dt"], options=self.options)


APPEND_DV = {"bucket": "-1", **DV, "compaction.min.file-num": "2"}
PK = {"bucket": "2"}
CROSS = {"bucket": "-1", "dynamic-bucket.target-row-num": "4"}

KINDS = {k.name: k for k in [
    Kind("append_dv", APPEND_DV, deletes=True),
    Kind("append_dv_dir_bitmap_v2", {**APPEND_DV, **FILE_INDEX_V2, "data-file.path-directory": "data"}, deletes=True),
    Kind("dv_deduplicate", {**PK, **DV}, ("id", "dt")),
    Kind("dv_partial_update_lookup", {**PK, **DV, "merge-engine": "partial-update", "changelog-producer": "lookup"},
         ("id", "dt")),
    Kind("dv_aggregation", {**PK, **DV, "merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
         ("id", "dt")),
    Kind("dv_max_lookup", {**PK, **DV, "merge-engine": "aggregation", "fields.v.aggregate-function": "max",
                        "changelog-producer": "lookup"}, ("id", "dt")),
    Kind("dv_dir_bitmap_v2", {**PK, **DV, **FILE_INDEX_V2, "data-file.path-directory": "data"}, ("id", "dt")),
    Kind("cross_partition", CROSS, ("id",), partitions="abc"),
    Kind("cross_partition_dv", {**CROSS, **DV}, ("id",), partitions="abc"),
    # compacted since session 16: a row-tracking table's outputs store each row's ids, a
    # data-evolution table's units of whole row-id ranges merge into one file of every column
    Kind("row_tracking", {"row-tracking.enabled": "true", "compaction.min.file-num": "2"},
         read_columns=("id", "dt", "v", "_ROW_ID")),
    Kind("data_evolution", {"row-tracking.enabled": "true", "data-evolution.enabled": "true",
                            "compaction.min.file-num": "2"}, read_columns=("id", "dt", "v", "_ROW_ID")),
]}

State = list[tuple[Any, ...]]


def rows_of(table: pa.Table, columns: tuple[str, ...]) -> State:
    return sorted(tuple(r[c] for c in columns) for r in table.select(list(columns)).to_pylist())


@dataclass
class History:
    """A table of ``kind`` and the model: each retained snapshot's rows, each tag's (id, rows)."""

    kind: Kind
    table: Table
    states: dict[int, State] = field(default_factory=dict)
    tags: dict[str, tuple[int, State]] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    def read(self, **at: Any) -> State:
        cols = self.kind.read_columns
        return rows_of(self.table.to_arrow(columns=list(cols), **at), cols)

    # ----------------------------------------------------------------- steps
    def write(self, rng: random.Random) -> None:
        kind, n = self.kind, rng.randint(1, 6)
        ids = [rng.randint(0, 20) for _ in range(n)]
        if kind.primary_keys == ("id",):
            ids = sorted(set(ids))  # one row per key and batch (the key has no partition field)
        if kind.deletes and rng.random() < 0.3:
            self.table.delete_where([("v", "in", ids[:3])])
            return
        self.table.write_arrow(pa.table({"id": ids, "dt": [rng.choice(kind.partitions) for _ in ids],
                                         "v": [rng.randint(0, 9) for _ in ids]}, schema=SCHEMA))

    def tag(self, name: str) -> None:
        latest = self.table.latest_snapshot()
        if latest is not None:
            self.table.create_tag(name)
            self.tags[name] = (latest.id, self.states[latest.id])

    def delete_tag(self, pick: int) -> None:
        if self.tags:
            name = sorted(self.tags)[pick % len(self.tags)]
            self.table.delete_tag(name)
            del self.tags[name]

    def rollback(self, pick: int, to_tag: bool) -> None:
        if to_tag and self.tags:
            name = sorted(self.tags)[pick % len(self.tags)]
            target, state = self.tags[name]
            self.table.rollback_to(tag=name)
            self.states[target] = state
        else:
            ids = [s.id for s in self.table.snapshots()][:-1]
            if not ids:
                return
            target = ids[pick % len(ids)]
            self.table.rollback_to(snapshot_id=target)
        # as Paimon: newer snapshots and the tags of newer snapshots are gone
        self.states = {k: v for k, v in self.states.items() if k <= target}
        self.tags = {n: v for n, v in self.tags.items() if v[0] <= target}

    def step(self, op: str, arg: int) -> None:
        """Apply one step; ``arg`` seeds its choices."""
        rng = random.Random(arg)
        t = self.table
        if op == "write":
            self.write(rng)
        elif op == "compact":
            t.compact(full=arg % 2 == 0)
        elif op == "expire":
            t.expire_snapshots(retain_min=1 + arg % 3, retain_max=3 + arg % 3, older_than=FUTURE)
        elif op == "orphans":
            t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
        elif op == "tag":
            self.tag(f"t{len(self.log)}")
        elif op == "delete_tag":
            self.delete_tag(arg)
        elif op == "rollback":
            self.rollback(arg, to_tag=arg % 2 == 0)
        else:
            raise AssertionError(op)
        self.log.append(f"{op}({arg})")

    # ---------------------------------------------------------------- checks
    def check(self) -> None:
        """Record new snapshots; every retained snapshot and tag reads its rows and has its files."""
        t = self.table
        where = " -> ".join(self.log)
        for snap in t.snapshots():
            got = self.read(snapshot_id=snap.id)
            expected = self.states.setdefault(snap.id, got)
            assert got == expected, f"snapshot {snap.id} reads other rows after {where}"
            missing = [p for p in referenced(t, snap) if not t.file_io.exists(p)]
            assert not missing, f"snapshot {snap.id} lost {missing} after {where}"
        assert sorted(t.tags()) == sorted(self.tags), where
        for name, snap in t.tags().items():
            assert self.read(tag=name) == self.tags[name][1], f"tag {name} reads other rows after {where}"
            missing = [p for p in referenced(t, snap) if not t.file_io.exists(p)]
            assert not missing, f"tag {name} lost {missing} after {where}"
        health = t.health()
        live = sum(r["file_count"] for r in health.to_pylist())
        latest = t.latest_snapshot()
        files = 0 if latest is None else len(t.store.file_store_scan().live_entries(latest))
        assert live == files, f"health counts {live} files, the latest snapshot has {files} after {where}"


def referenced(t: Table, snap: Any) -> list[str]:
    """The data files (and their extra index files), and the index files, of a snapshot."""
    store = t.store
    out: list[str] = []
    for e in store.file_store_scan().live_entries(snap):
        out += store.written_file_paths(e.partition, e.bucket, e.file)
    if snap.index_manifest:
        out += index_file_paths(store, snap.index_manifest, may_be_gone=False)
    return out


OPS = ("write", "write", "write", "compact", "expire", "orphans", "tag", "delete_tag", "rollback")


def random_history(kind: Kind, catalog: Catalog, seed: int, steps: int, identifier: str = "db.t") -> History:
    """A seeded history of ``steps`` random steps on a new table of ``kind``, checked after each."""
    rng = random.Random(seed)
    h = History(kind, kind.create(catalog, identifier))
    for _ in range(steps):
        h.step(rng.choice(OPS), rng.randrange(1 << 16))
        h.check()
    return h
