"""Long-lived changelogs against Paimon Java 0.9: expire in one engine, read in the other.

With ``changelog.num-retained.*`` above the snapshot retention, expiring a snapshot leaves its
changelog in ``changelog/changelog-<id>`` (decoupled lifecycle). After one engine expires, the
other must read the retained changes of expired snapshots exactly as before (one-snapshot
incremental reads and a stream from the first retained id), keep the same snapshot and changelog
files, and write and expire on top.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import JavaError, PaimonJava

from .scenario import concat_changes, norm_changes

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("op", pa.string())])
RETENTION = {
    "snapshot.num-retained.min": "1",
    "snapshot.num-retained.max": "2",
    "changelog.num-retained.min": "1",
    "changelog.num-retained.max": "5",
    # Java 0.9 expires at most 10 snapshots per run by default; set it so neither engine's default decides.
    "snapshot.expire.limit": "100",
}
NO_EXPIRY = {"snapshot.num-retained.min": "1000", "snapshot.num-retained.max": "1000",
             "changelog.num-retained.min": "1000", "changelog.num-retained.max": "1000"}
# Inserts, -U/+U updates, deletes and a re-insert, one commit each.
COMMITS = [
    [("+I", 1, "a"), ("+I", 2, "b"), ("+I", 3, "c")],
    [("-U", 1, "a"), ("+U", 1, "a2"), ("-D", 2, "b")],
    [("+I", 2, "b2"), ("+I", 4, "d")],
    [("-U", 3, "c"), ("+U", 3, "c3"), ("-D", 4, "d")],
    [("+I", 5, "e")],
]
MORE = [
    [("-U", 5, "e"), ("+U", 5, "e2")],
    [("+I", 6, "f"), ("-D", 1, "a2")],
    [("+I", 7, "g")],
]


class Engines:
    """Both engines on one table: write, compact, expire, read changes and streams."""

    def __init__(self, java: PaimonJava, wh: str, name: str, producer: str) -> None:
        self.java, self.wh, self.name, self.producer = java, wh, name, producer
        self.catalog = Catalog(wh)
        self.catalog.create_database("db")
        self.ident = 0

    @property
    def table(self):
        return self.catalog.get_table(self.name)

    def create(self, engine: str) -> None:
        # Both engines' non-write-only commits expire per the table's retention (Paimon's committer
        # and lake_assets' alike): the table keeps everything until the test expires (`expire`).
        options = {"bucket": "1", "changelog-producer": self.producer, "rowkind.field": "op", **RETENTION,
                   **NO_EXPIRY}
        if self.producer == "lookup":
            options["write-only"] = "true"  # changes come from a dedicated compaction after each commit
        if engine == "java":
            self.java.create_table(self.wh, self.name, SCHEMA, ["k"], options=options)
        else:
            self.catalog.create_table(self.name, SCHEMA, primary_keys=["k"], options=options)

    def commit(self, engine: str, rows: list[tuple[str, int, str]]) -> None:
        data = pa.Table.from_pylist([{"k": k, "v": v, "op": op} for op, k, v in rows], schema=SCHEMA)
        if engine == "java":
            self.ident += 1
            # write-only, as the table's writers were before: the test expires explicitly, in one
            # engine or the other.
            self.java.write(self.wh, self.name, data, commit_identifier=self.ident, commit_user="java-writer",
                            options={"write-only": "true"})
            if self.producer == "lookup":
                self.java.compact(self.wh, self.name, [], 0, options={"write-only": "false"})
        else:
            self.table.write_arrow(data)
            if self.producer == "lookup":
                self.table.compact(full=True)

    def expire(self, engine: str) -> None:
        """Expire per RETENTION in ``engine``. The retention stays: a stream reads long-lived
        changelogs only while the table's options decouple them (Java's does)."""
        self.catalog.alter_table_options(self.name, set=RETENTION)
        if engine == "java":
            # As lake_assets' expire_snapshots: snapshots first, then the long-lived changelogs.
            self.java.expire_snapshots(self.wh, self.name)
            self.java.expire_changelogs(self.wh, self.name)
        else:
            self.table.expire_snapshots()

    def files(self) -> dict[str, list[int]]:
        """Snapshot and long-lived changelog ids present on disk, as both engines see them."""
        table = self.table
        root = os.path.join(self.wh, "db.db", self.name.split(".")[1])
        on_disk = sorted(int(n.split("-")[1]) for n in os.listdir(os.path.join(root, "changelog"))
                         if n.startswith("changelog-")) if os.path.isdir(os.path.join(root, "changelog")) else []
        assert on_disk == table.store.changelog_manager().ids()
        java_ids = sorted(s["id"] for s in self.java.snapshots(self.wh, self.name))
        assert java_ids == [s.id for s in table.snapshots()]
        return {"snapshots": java_ids, "changelogs": on_disk}

    def changes(self, reader: str, sid: int) -> list[Any]:
        """The changes of snapshot ``sid`` alone (incremental read of (sid - 1, sid])."""
        if reader == "java":
            got = self.java.read_changes(self.wh, self.name, sid - 1, sid)
        else:
            got = self.table.read_changes(sid - 1, sid)
        return norm_changes(got, ["k"])

    def stream(self, reader: str, start: int) -> list[Any]:
        """Everything a stream starting at snapshot ``start`` reads up to the latest snapshot."""
        latest = self.table.snapshot_manager.latest_id()
        if reader == "java":
            stream = self.java.stream(self.wh, self.name,
                                      options={"scan.mode": "from-snapshot", "scan.snapshot-id": str(start)})
            parts = []
            while True:
                parts.append(stream.next())
                if stream.checkpoint is None or stream.checkpoint > latest:
                    break
            stream.close()
        else:
            table = self.table
            reader_ = table.change_reader()
            parts = [reader_.read(s) for b in table.stream(mode="from-snapshot", snapshot_id=start).poll(1000)
                     for s in b.splits] or [reader_.schema.empty_table()]
        return norm_changes(concat_changes(parts), ["k"])


def _joined(per_snapshot: list[list[Any]]) -> list[Any]:
    """One-snapshot changes joined in snapshot order, as a stream over those snapshots reads them."""
    per_key: dict[Any, tuple] = {}
    for changes in per_snapshot:
        for key, seq in changes:
            per_key[key] = per_key.get(key, ()) + seq
    return sorted(per_key.items(), key=repr)


@pytest.mark.parametrize("producer", ["input", "lookup"])
@pytest.mark.parametrize("writer,expirer", [("java", "lake"), ("lake", "java")])
def test_expire_in_one_engine_read_retained_changelog_in_the_other(
    java: PaimonJava, wh: str, producer: str, writer: str, expirer: str
) -> None:
    """Java 0.9's incremental-between read refuses ranges below the earliest snapshot (it does not
    read long-lived changelogs; lake_assets' read_changes does), so expired snapshots' changes are
    compared through streams on the Java side and through both kinds of read on ours."""
    e = Engines(java, wh, "db.t", producer)
    e.create(writer)
    for rows in COMMITS:
        e.commit(writer, rows)
    latest = e.table.snapshot_manager.latest_id()
    before = {sid: e.changes("java", sid) for sid in range(1, latest + 1)}
    assert before == {sid: e.changes("lake", sid) for sid in range(1, latest + 1)}
    assert e.stream("java", 1) == e.stream("lake", 1) == _joined(list(before.values()))

    e.expire(expirer)
    kept = e.files()
    assert kept["snapshots"] == [latest - 1, latest]
    assert kept["changelogs"], "expired snapshots left long-lived changelogs"
    first = kept["changelogs"][0]
    expected = _joined([before[sid] for sid in range(first, latest + 1)])
    assert e.stream("java", first) == expected
    assert e.stream("lake", first) == expected
    for sid in range(first, latest + 1):
        assert e.changes("lake", sid) == before[sid], sid
    for sid in kept["snapshots"]:
        assert e.changes("java", sid) == before[sid], sid
    with pytest.raises(JavaError, match="out of available snapshotId range"):
        e.changes("java", first)

    # The other engine writes on top and expires again: changelog.num-retained.max caps them.
    for rows in MORE:
        e.commit(expirer, rows)
    e.expire(writer)
    again = e.files()
    latest = e.table.snapshot_manager.latest_id()
    assert again["snapshots"] == [latest - 1, latest]
    assert len(again["changelogs"]) <= int(RETENTION["changelog.num-retained.max"])
    first = (again["changelogs"] or again["snapshots"])[0]
    for sid in again["snapshots"]:
        assert e.changes("java", sid) == e.changes("lake", sid), sid
    expected = _joined([e.changes("lake", sid) for sid in range(first, latest + 1)])
    assert e.stream("java", first) == e.stream("lake", first) == expected


@pytest.mark.parametrize("producer", ["input", "lookup"])
def test_both_engines_expire_the_same_files(java: PaimonJava, wh: str, producer: str) -> None:
    """The same commits (by Java) on two tables, one expired by Java and one by lake_assets: the
    same snapshots and long-lived changelogs survive, twice over."""
    tables = {engine: Engines(java, wh, f"db.by_{engine}", producer) for engine in ("java", "lake")}
    for engine, e in tables.items():
        e.create("java")
        for rows in COMMITS:
            e.commit("java", rows)
        e.expire(engine)
    assert tables["java"].files() == tables["lake"].files()
    for engine, e in tables.items():
        for rows in MORE:
            e.commit("java", rows)
        e.expire(engine)
    assert tables["java"].files() == tables["lake"].files()
