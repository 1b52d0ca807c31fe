"""Processes that hammer one table at once (spawned by test_concurrency.py)."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from datetime import datetime, timedelta

import pyarrow as pa

from lake_assets import Catalog, CommitConflictError, CommitStateUnknownError
from lake_assets.errors import CorruptMetadataError, SnapshotNotFoundError


def _table(warehouse: str, opts: dict):
    return Catalog(warehouse, **opts).get_table("db.t")


def appender(warehouse: str, opts: dict, worker: int, seconds: float, out: str) -> None:
    """Upserts its own keys (worker*1000 + j) in a loop; records acknowledged values."""
    t = _table(warehouse, opts)
    acked: dict[int, int] = {}
    deadline = time.time() + seconds
    i = 0
    # bounded in count as well as time, so checking every snapshot afterwards stays cheap
    while (time.time() < deadline or i < 3) and i < 40:  # a few commits even on a slow machine
        keys = [worker * 1000 + (i * 7 + j) % 50 for j in range(5)]
        t.write_arrow(pa.table({"k": keys, "v": [i] * 5, "op": ["+I"] * 5}, schema=t.arrow_schema))
        for k in keys:
            acked[k] = i  # only after write_arrow returned: the commit is acknowledged
        i += 1
        time.sleep(0.05)
    with open(out, "w") as fh:
        json.dump({"acked": acked, "commits": i}, fh)


def compactor(warehouse: str, opts: dict, seconds: float, out: str) -> None:
    t = _table(warehouse, opts)
    deadline = time.time() + seconds
    n = conflicts = 0
    while time.time() < deadline:
        try:
            if t.compact(full=n % 3 == 0).snapshot_id is not None:
                n += 1
        except CommitConflictError:
            conflicts += 1
        time.sleep(0.05)
    with open(out, "w") as fh:
        json.dump({"compactions": n, "conflicts": conflicts}, fh)


def expirer(warehouse: str, opts: dict, seconds: float, out: str) -> None:
    t = _table(warehouse, opts)
    deadline = time.time() + seconds
    expired = 0
    while time.time() < deadline:
        expired += len(t.expire_snapshots(retain_min=3, older_than=datetime.now() + timedelta(days=1))
                       .expired_snapshots)
        time.sleep(0.1)
    with open(out, "w") as fh:
        json.dump({"expired": expired}, fh)


def tagger(warehouse: str, opts: dict, seconds: float, out: str) -> None:
    t = _table(warehouse, opts)
    deadline = time.time() + seconds
    tags = {}
    i = 0
    while time.time() < deadline:
        snap = t.latest_snapshot()
        if snap is not None:
            name = f"tag{i}"
            with contextlib.suppress(Exception):
                t.create_tag(name, snap.id)
                tags[name] = {str(r["k"]): r["v"] for r in t.to_arrow(tag=name).to_pylist()}
            i += 1
        time.sleep(0.2)
    with open(out, "w") as fh:
        json.dump({"tags": tags}, fh)


def two_phase(warehouse: str, opts: dict, seconds: float, out: str) -> None:
    """A two-phase writer (writer + committer, checkpoint ids): exactly once through any retry."""
    t = _table(warehouse, opts)
    user = "two-phase-writer"
    acked: dict[int, int] = {}
    deadline = time.time() + seconds
    ident = unknown = 0
    while (time.time() < deadline or ident < 3) and ident < 25:
        ident += 1
        keys = [9000 + (ident * 3 + j) % 40 for j in range(4)]
        w = t.new_writer(user, write_only=True)
        w.write_arrow(pa.table({"k": keys, "v": [ident] * 4, "op": ["+I"] * 4}, schema=t.arrow_schema))
        msgs = w.prepare_commit()
        for _attempt in range(10):
            try:
                t.new_committer(user).commit(msgs, ident)  # a replay after "unknown" is a no-op
                break
            except CommitStateUnknownError:
                unknown += 1
        else:
            raise RuntimeError(f"checkpoint {ident} stayed unknown")
        acked.update(dict.fromkeys(keys, ident))
        time.sleep(0.05)
    with open(out, "w") as fh:
        json.dump({"acked": acked, "commits": ident, "unknown": unknown}, fh)


def orphan_cleaner(warehouse: str, opts: dict, seconds: float, out: str) -> None:
    """Removes orphans older than a bound longer than any commit takes, while everything runs."""
    t = _table(warehouse, opts)
    deadline = time.time() + seconds
    runs = removed = refused = 0
    while time.time() < deadline:
        try:
            removed += len(t.remove_orphan_files(older_than=timedelta(seconds=20), dry_run=False).paths)
            runs += 1
        except (CorruptMetadataError, SnapshotNotFoundError):
            refused += 1  # metadata vanished under it (expiry): it deletes nothing then
        time.sleep(0.3)
    with open(out, "w") as fh:
        json.dump({"runs": runs, "removed": removed, "refused": refused}, fh)


def old_tagger(warehouse: str, opts: dict, seconds: float, out: str) -> None:
    """Tags the earliest snapshot (the one expiry goes for next) and records a consumer on it."""
    t = _table(warehouse, opts)
    deadline = time.time() + seconds
    tags: dict[str, dict] = {}
    refused = 0
    i = 0
    while time.time() < deadline:
        earliest = t.snapshot_manager.earliest_id()
        if earliest is not None:
            name = f"old{i}"
            i += 1
            try:
                t.create_tag(name, earliest)
            except (SnapshotNotFoundError, CorruptMetadataError):
                refused += 1  # being or already expired: refused, never a tag without files
            else:
                tags[name] = {str(r["k"]): r["v"] for r in t.to_arrow(tag=name).to_pylist()}
            if i % 3 == 0:
                # a consumer that starts on the earliest snapshot, reads it, and leaves
                try:
                    t.consumer_manager().record("old-tagger", earliest)
                except SnapshotNotFoundError:
                    refused += 1
                else:
                    # a position recorded after expiry finished protects nothing: the snapshot
                    # may be gone already, which the read reports (a consumer then restarts)
                    with contextlib.suppress(SnapshotNotFoundError):
                        t.to_arrow(snapshot_id=earliest)
                t.consumer_manager().delete("old-tagger")
        time.sleep(0.15)
    with open(out, "w") as fh:
        json.dump({"tags": tags, "refused": refused}, fh)


def old_reader(warehouse: str, opts: dict, seconds: float, out: str) -> None:
    """Pins a snapshot with a consumer id and keeps reading it while expiry runs."""
    t = _table(warehouse, opts)
    start = time.time()
    # pin a snapshot a little way in, so the expirer has history to remove before it
    while (t.latest_snapshot() is None or t.latest_snapshot().id < 6) and time.time() - start < seconds / 2:
        time.sleep(0.05)
    while t.latest_snapshot() is None:
        time.sleep(0.05)
    pinned = t.latest_snapshot().id
    t.consumer_manager().record("old-reader", pinned)
    first = t.to_arrow(snapshot_id=pinned).sort_by("k").to_pylist()
    deadline = time.time() + seconds / 2  # then it leaves, and expiry may move on
    reads = 0
    while time.time() < deadline:
        assert t.to_arrow(snapshot_id=pinned).sort_by("k").to_pylist() == first
        reads += 1
        time.sleep(0.05)
    t.consumer_manager().delete("old-reader")
    with open(out, "w") as fh:
        json.dump({"pinned": pinned, "reads": reads}, fh)


if __name__ == "__main__":
    role, warehouse, opts_json, *rest = sys.argv[1:]
    fn = globals()[role]
    args = [int(rest[0]), float(rest[1]), rest[2]] if role == "appender" else [float(rest[0]), rest[1]]
    fn(warehouse, json.loads(opts_json), *args)
