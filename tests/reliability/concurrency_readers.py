"""Reading roles of the many-process test (spawned through concurrency_workers.py), and the
helpers every role shares: readers of the latest snapshot, a reader pinned to an old snapshot,
taggers, slow streaming consumers and consumers started on the earliest snapshot.

See concurrency_workers.py for the timing protections the roles measure.
"""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog, SnapshotNotFoundError

MAX_ITERATIONS = 400  # every loop is bounded in count as well as in time


def _table(warehouse: str, opts: dict):
    # a fresh catalog each time: nothing cached from before a simulated restart
    return Catalog(warehouse, **opts).get_table("db.t")


def _rows(keys: list[int], value: int, schema: pa.Schema) -> pa.Table:
    return pa.table({"k": keys, "v": [value] * len(keys), "op": ["+I"] * len(keys)}, schema=schema)


def _state(table: pa.Table) -> dict[str, int]:
    return {str(r["k"]): r["v"] for r in table.to_pylist()}


def _pause(p: dict, seconds: float) -> None:
    # ``pace`` slows every loop down alike: a moto server shares the two cores with all the roles
    time.sleep(seconds * p.get("pace", 1.0))


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def expiry_explains(t, snapshot_ids: list[int], retention_s: float, failed_at: float) -> str | None:
    """Why a failure at ``failed_at`` on snapshots ``snapshot_ids`` (a read of the latest snapshot, a
    replay finding its committed files gone) is a bug, or None when an expiry the time retention
    allowed explains it: such roles are protected by time only, and on shared cores a read or a
    restart can take longer than any retention.

    Decided by what the table shows, not by how long the role took: a snapshot still retained
    (markers first: an expiry withdraws its marker last) was not expired, so the failure has
    another cause; an expired one must have had a successor at least ``retention_s`` older than
    the failure (its expiry ran before the failure), which is checked when the successor is
    still there."""
    if not snapshot_ids:
        return "no snapshot to tell whether an expiry explains it"
    sm = t.snapshot_manager
    for sid in snapshot_ids:
        try:
            sm.check_retained(sid, f"read snapshot {sid}")
        except SnapshotNotFoundError:
            successor = sm.try_snapshot(sid + 1)
            if successor is not None and successor.time_millis > (failed_at - retention_s) * 1000:
                return (f"snapshot {sid} was expired although snapshot {sid + 1} was committed "
                        f"{failed_at - successor.time_millis / 1000:.2f}s before, within the {retention_s}s retention")
            continue
        return f"snapshot {sid} is still retained"
    return None


# ------------------------------------------------------------------ readers
def reader(warehouse: str, opts: dict, p: dict) -> dict:
    """Reads the latest snapshot again and again: keys once each, values never going back.

    Only the time retention protects these reads: a read that fails because an expiry the
    retention allowed removed its snapshot meanwhile (`expiry_explains`) is counted in
    ``unprotected``, every other failure is an error."""
    t = _table(warehouse, opts)
    deadline = time.time() + p["seconds"]
    seen: dict[int, int] = {}
    errors: list[str] = []
    unprotected: list[str] = []
    reads = 0
    slowest = 0.0
    while time.time() < deadline and reads < MAX_ITERATIONS:
        snap = t.latest_snapshot()
        if snap is None:
            _pause(p, 0.05)
            continue
        start = time.time()
        try:
            rows = t.to_arrow(snapshot_id=snap.id).to_pylist()
        except Exception as exc:
            bug = expiry_explains(t, [snap.id], p["retention_s"], time.time())
            what = f"snapshot {snap.id} after {time.time() - start:.2f}s: {_err(exc)}"
            if bug:
                errors.append(f"{what} ({bug})")
            else:
                unprotected.append(what)
            continue
        finally:
            slowest = max(slowest, time.time() - start)
            reads += 1
        keys = [r["k"] for r in rows]
        if len(keys) != len(set(keys)):
            errors.append(f"snapshot {snap.id}: a key appears twice")
        for r in rows:
            if r["v"] < seen.get(r["k"], -1):
                errors.append(f"snapshot {snap.id}: key {r['k']} went back from {seen[r['k']]} to {r['v']}")
            seen[r["k"]] = r["v"]
        _pause(p, 0.02)
    return {"reads": reads, "errors": errors, "unprotected": unprotected, "read_max_s": slowest}


def old_reader(warehouse: str, opts: dict, p: dict) -> dict:
    """Pins a snapshot with a consumer id and keeps reading it while expiry runs, for half the
    run; then releases it, as a finished batch job would."""
    t = _table(warehouse, opts)
    start = time.time()
    # pin a snapshot a little way in, so the expirer has history to remove before it
    while (t.latest_snapshot() is None or t.latest_snapshot().id < 6) and time.time() - start < p["seconds"] / 2:
        _pause(p, 0.05)
    while t.latest_snapshot() is None:
        _pause(p, 0.05)
    # the latest snapshot can not be in an expiry planned before this record: see the module doc
    pinned = t.latest_snapshot().id
    t.store.consumer_manager().record("old-reader", pinned)
    first = t.to_arrow(snapshot_id=pinned).sort_by("k").to_pylist()
    deadline = time.time() + p["seconds"]
    reads = 0
    errors: list[str] = []
    release = time.time() + p["seconds"] / 2
    while time.time() < deadline and reads < MAX_ITERATIONS:
        if time.time() > release:
            # done with it: the pin goes and expiry may catch up (reads of it would now be unprotected)
            t.store.consumer_manager().delete("old-reader")
            break
        try:
            if t.to_arrow(snapshot_id=pinned).sort_by("k").to_pylist() != first:
                errors.append(f"pinned snapshot {pinned} read differently")
        except Exception as exc:
            errors.append(_err(exc))
        reads += 1
        _pause(p, 0.05)
    return {"pinned": pinned, "reads": reads, "errors": errors}


def tagger(warehouse: str, opts: dict, p: dict) -> dict:
    """Tags old snapshots and records what each tag read right after it was created.

    ``p["pick"]`` (or each of ``p["picks"]`` in turn) ``== "retained"``: the oldest snapshot whose
    successor is younger than half the retention (no expiry can have planned it); ``"latest"``: the
    latest one; ``"earliest"``: the earliest snapshot, racing expiry (refused with
    `SnapshotNotFoundError` when an expiry is removing it - the expiry marker handshake - and then
    no tag may remain).
    """
    t = _table(warehouse, opts)
    sm = t.snapshot_manager
    deadline = time.time() + p["seconds"]
    tags: dict[str, dict] = {}
    errors: list[str] = []
    skipped: list[str] = []
    i = 0
    while time.time() < deadline and i < 60:
        i += 1
        _pause(p, 0.2)
        picks = p.get("picks") or [p["pick"]]
        pick = picks[i % len(picks)]  # one process may take turns between kinds of snapshot
        sid = _pick(sm, pick, p["retention_s"])
        if sid is None:
            continue
        name = f"{p['prefix']}{pick}-{i}"
        try:
            t.create_tag(name, sid)
        except SnapshotNotFoundError as exc:  # it expired before we read it: nothing was tagged
            skipped.append(f"{name} on {sid}: {_err(exc)}")
            continue
        try:
            tags[name] = {"snapshot": sid, "rows": _state(t.to_arrow(tag=name))}
        except Exception as exc:
            errors.append(f"read {name} on {sid}: {_err(exc)}")
            tags[name] = {"snapshot": sid, "rows": None}
    return {"tags": tags, "errors": errors, "skipped": skipped}


def _pick(sm, pick: str, retention_s: float) -> int | None:
    earliest, latest = sm.earliest_id(), sm.latest_id()
    if earliest is None or latest is None:
        return None
    if pick == "earliest":
        return earliest
    if pick == "latest":
        return latest
    young = (time.time() - retention_s / 2) * 1000
    for sid in range(max(earliest, latest - 20), latest + 1):
        nxt = sm.try_snapshot(sid + 1)
        if nxt is None or nxt.time_millis > young:
            return sid if sm.try_snapshot(sid) is not None else None
    return latest


def consumer(warehouse: str, opts: dict, p: dict) -> dict:
    """A slow streaming consumer: pins a snapshot, then folds one snapshot's changes per poll into a
    key → value state, checking it against the snapshot it has reached while that one is pinned."""
    t = _table(warehouse, opts)
    cid = p["consumer_id"]
    deadline = time.time() + p["seconds"]
    # the writers commit a few times whatever the load (`appender`): wait for the first snapshot
    # past the deadline if it takes that long, rather than fail on a table still empty
    while t.latest_snapshot() is None and time.time() < deadline + 120:
        _pause(p, 0.05)
    start = t.latest_snapshot().id
    t.store.consumer_manager().record(cid, start)  # pinned before reading (see the module doc)
    state = _state(t.to_arrow(snapshot_id=start))
    stream = t.stream(consumer_id=cid)
    change_reader = t.change_reader()
    errors: list[str] = []
    polls = 0
    while time.time() < deadline and polls < 60:
        polls += 1
        for batch in stream.poll(max_snapshots=2):
            for split in batch.splits:
                apply_changes(state, change_reader.read(split).to_pylist())
            # the consumer still pins batch.snapshot_id (its position moves only below)
            truth = _state(t.to_arrow(snapshot_id=batch.snapshot_id))
            if truth != state:
                errors.append(f"after snapshot {batch.snapshot_id} the folded changes differ from the snapshot")
            stream.commit(batch.next_position)
        _pause(p, p.get("pause_s", 0.3))
    return {"consumer_id": cid, "start": start, "position": stream.position, "state": state,
            "polls": polls, "errors": errors}


def early_consumer(warehouse: str, opts: dict, p: dict) -> dict:
    """Starts consumers at whatever snapshot is the earliest while an expirer removes it. Once the
    position is saved and the snapshot still exists, expiry must keep it: reading it then works.

    Until the deadline each position is dropped once read, so that expiry moves on and the next
    start races it again. Then the consumer starts once more and keeps that position, trying again
    whenever the start loses the race, until it holds one: a checker needs a held position, and on
    shared cores the last start before the deadline may well have been refused, or no snapshot
    committed yet, so nothing is left to the clock. With ``p["done"]`` (a path) the held position
    is one taken after some expiry moved the earliest snapshot past the first (this role's own
    test has an expirer racing until then, `concurrency_workers.expirer`), and the file is touched
    once it is held."""
    t = _table(warehouse, opts)
    sm = t.snapshot_manager
    consumers = t.store.consumer_manager()
    deadline = time.time() + p["seconds"]
    started: dict[str, int] = {}
    errors: list[str] = []
    i = refused = 0

    def start() -> str | None:
        """Save a position on the earliest snapshot; its id when that snapshot was still there."""
        nonlocal i, refused
        i += 1
        sid = sm.earliest_id()
        if sid is None:
            return None
        cid = f"early-{i}"
        try:
            consumers.record(cid, sid)
        except SnapshotNotFoundError:
            refused += 1  # an expiry is removing it: the position was withdrawn, start elsewhere
            return None
        if sm.try_snapshot(sid) is None:
            consumers.delete(cid)  # it expired before the position was saved: start elsewhere
            return None
        started[cid] = sid
        try:
            t.to_arrow(snapshot_id=sid)
        except Exception as exc:
            errors.append(f"{cid} on {sid}: {_err(exc)}")
        return cid

    while time.time() < deadline and i < 60:
        _pause(p, 0.2)
        cid = start()
        if cid is not None:
            consumers.delete(cid)  # read what it wanted: gone, so expiry moves on
    held = None
    hang_guard = time.time() + 120  # only a hung table ends this loop: the writers commit whatever the load
    while held is None and time.time() < hang_guard:
        _pause(p, 0.05)
        if "done" in p and sm.earliest_id() in (None, 1):
            continue  # nothing expired yet: the position would race nothing
        held = start()
    if "done" in p:
        Path(p["done"]).touch()
    return {"started": started, "errors": errors, "refused": refused, "held": held}


def recorder(warehouse: str, opts: dict, p: dict) -> dict:
    """A consumer that saves its position after every tiny batch (as fast as it can)."""
    t = _table(warehouse, opts)
    consumers = t.store.consumer_manager()
    deadline = time.time() + p["seconds"]
    n = 0
    while time.time() < deadline and n < 100_000:
        n += 1
        consumers.record("busy", 1 + n % 3)
    return {"records": n}


def apply_changes(state: dict[str, int], rows: list[dict]) -> None:
    """Fold +I/-U/+U/-D rows (in order) into a key → value state."""
    for r in rows:
        if r["_row_kind"] in ("+I", "+U"):
            state[str(r["k"])] = r["v"]
        elif r["_row_kind"] == "-D":
            state.pop(str(r["k"]), None)
