"""Processes that hammer one table at once (spawned by test_concurrency.py).

Run as ``python concurrency_workers.py <role> <warehouse> <storage options JSON> <params JSON> <out>``.
Every role is bounded in time (``params["seconds"]``) and in iterations, writes a JSON report to
``out`` and records what it had acknowledged: the checker compares the table with those reports.

Two protections are timing-based in Paimon, and the roles measure what they rely on so the test can
tell a real bug from a misconfigured run:

* ``remove_orphan_files(older_than=...)`` keeps files younger than the bound: a writer's files are
  safe while its write-to-commit time (``inflight_max_s``) stays below it;
* snapshot expiry with a time retention keeps snapshot ``s`` until ``s + 1`` is older than the
  retention: a read of the latest snapshot (``read_max_s``), a fresh consumer/tag on a recent snapshot
  and a committer replaying its last checkpoint (``replay_gap_max_s``) are safe within it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog, CommitConflictError, SnapshotNotFoundError
from lake_assets.ops.commit_message import CommitMessage

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


# ------------------------------------------------------------------ writers
def appender(warehouse: str, opts: dict, p: dict) -> dict:
    """Upserts its own keys (worker*1000 + j) with write_arrow; acknowledged once it returned."""
    t = _table(warehouse, opts)
    acked: dict[int, int] = {}
    claims: list[int] = []
    abandoned: list[str] = []
    inflight = 0.0
    deadline = time.time() + p["seconds"]
    i = 0
    while time.time() < deadline and i < 40:
        keys = [p["worker"] * 1000 + (i * 7 + j) % 50 for j in range(5)]
        start = time.time()
        sid = t.write_arrow(_rows(keys, i, t.arrow_schema))
        inflight = max(inflight, time.time() - start)
        claims.append(sid)
        acked.update(dict.fromkeys(keys, i))
        if i % 8 == 3:
            # a killed job: files written, never committed nor aborted (orphans for the cleaner)
            lost = t.new_writer(f"lost-{p['worker']}-{i}", write_only=True)
            lost.write_arrow(_rows(keys, -1, t.arrow_schema))
            abandoned += [f.file_name for m in lost.prepare_commit() for f in m.new_files]
        i += 1
        _pause(p, 0.05)
    return {"acked": acked, "commits": i, "claims": claims, "inflight_max_s": inflight, "abandoned": abandoned}


def _load_messages(path: Path) -> list[CommitMessage]:
    return [CommitMessage.from_json(m) for m in json.loads(path.read_text())]


def two_phase(warehouse: str, opts: dict, p: dict) -> dict:
    """Flink-style writer: write → prepare_commit → messages persisted as JSON (the checkpoint) →
    committed with identifier = checkpoint id. Every other checkpoint a fresh catalog and committer
    (a restarted job) replays the checkpoint, which must be a no-op; every fourth (when a standby
    process is up) the job "crashes" between prepare and commit, and the standby - a fresh process -
    commits the persisted messages and replays them."""
    user = f"two-phase-{p['worker']}"
    state = Path(p["state"])
    state.mkdir(parents=True, exist_ok=True)
    t = _table(warehouse, opts)
    writer = t.new_writer(user, write_only=True)
    committer = t.new_committer(user)
    # the first standby was started with this process, before the common start (see __main__)
    standby = _EARLY.pop("standby", None) or _Standby(warehouse, opts, user, state, p["seconds"])
    acked: dict[int, int] = {}
    claims: list[int] = []
    replays: list[dict] = []
    inflight = gap = 0.0
    deadline = time.time() + p["seconds"]
    cp = crashes = 0
    crash_due = 2
    while cp < 30 and (time.time() < deadline or crashes == 0):
        if time.time() >= deadline:
            # no standby was up in time to crash yet: one last checkpoint waits for it (bounded)
            standby.wait_ready(120)
        cp += 1
        keys = [p["worker"] * 1000 + (cp * 3 + j) % 20 for j in range(4)]
        start = time.time()
        writer.write_arrow(_rows(keys, cp, t.arrow_schema))
        path = state / f"{user}-cp-{cp}.json"
        path.write_text(json.dumps([m.to_json() for m in writer.prepare_commit()]))
        _pause(p, 0.1)  # the checkpoint barrier travels: the files are in flight meanwhile
        if cp >= crash_due and standby.ready():
            # crash (only once a standby is up: its interpreter start would count as time in flight)
            writer.close()  # this writer and committer are gone
            crashes += 1
            crash_due = cp + 4
            r = standby.take_over(cp, path)
            standby = _Standby(warehouse, opts, user, state, p["seconds"])
            ids, committed_at = r["ids"], r["committed_at"]
            if r["replayed"]:
                replays.append({"cp": cp, "ids": r["replayed"], "by": "recover process"})
            gap = max(gap, r["replay_gap_s"])
            # the restarted job: new writer only after its recovery committed (sequence numbers)
            t = _table(warehouse, opts)
            writer = t.new_writer(user, write_only=True)
            committer = t.new_committer(user)
        else:
            ids = committer.commit(_load_messages(path), cp)
            committed_at = time.time()
        inflight = max(inflight, committed_at - start)
        claims += ids
        acked.update(dict.fromkeys(keys, cp))
        if cp % 2 == 0:
            replay_start = time.time()
            again = _table(warehouse, opts).new_committer(user).commit(_load_messages(path), cp)
            gap = max(gap, replay_start - committed_at)
            if again:
                replays.append({"cp": cp, "ids": again, "by": "restarted committer"})
        _pause(p, 0.05)
    writer.close()
    standby.stop()
    return {"acked": acked, "commits": cp, "claims": claims, "replays": replays, "user": user, "crashes": crashes,
            "inflight_max_s": inflight, "replay_gap_max_s": gap}


class _Standby:
    """A fresh process started ahead of time (like a standby job manager), so that taking over a
    crashed job's checkpoint costs a commit, not an interpreter start."""

    count = 0  # standbys started by this process (names their files)

    def __init__(self, warehouse: str, opts: dict, user: str, state: Path, seconds: float) -> None:
        self.state = state
        self.n = _Standby.count
        _Standby.count += 1
        self.request = state / f"{user}-standby-{self.n}.request"
        self.out = state / f"{user}-standby-{self.n}.json"
        self.ready_file = state / f"{user}-standby-{self.n}.ready"
        params = {"user": user, "request": str(self.request), "seconds": seconds * 3 + 30,
                  "standby_ready": str(self.ready_file)}
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "recover", warehouse, json.dumps(opts), json.dumps(params), str(self.out)],
            stderr=subprocess.PIPE, text=True,
        )

    def ready(self) -> bool:
        return self.ready_file.exists()

    def wait_ready(self, timeout: float) -> None:
        deadline = time.time() + timeout
        while not self.ready() and time.time() < deadline and self.proc.poll() is None:
            time.sleep(0.05)

    def take_over(self, cp: int, path: Path) -> dict:
        tmp = self.request.with_suffix(".tmp")
        tmp.write_text(json.dumps({"cp": cp, "path": str(path)}))
        tmp.replace(self.request)
        _, err = self.proc.communicate(timeout=120)
        if self.proc.returncode != 0:
            raise RuntimeError(f"recover process failed: {err[-3000:]}")
        return json.loads(self.out.read_text())

    def stop(self) -> None:
        self.request.write_text("{}")
        self.proc.communicate(timeout=120)


def recover(warehouse: str, opts: dict, p: dict) -> dict:
    """A restarted job: waits for a crashed job's checkpoint, commits its persisted messages, then
    replays them once more with another fresh committer (a second restart), which must be a no-op."""
    request = Path(p["request"])
    deadline = time.time() + p["seconds"]
    _table(warehouse, opts).latest_snapshot()  # connected and imported: ready to take over
    Path(p["standby_ready"]).touch()
    while not request.exists():
        if time.time() > deadline:
            return {"ids": [], "replayed": [], "committed_at": time.time(), "replay_gap_s": 0.0}
        _pause(p, 0.01)
    req = json.loads(request.read_text())
    if not req:
        return {"ids": [], "replayed": [], "committed_at": time.time(), "replay_gap_s": 0.0}
    t = _table(warehouse, opts)
    ids = t.new_committer(p["user"]).commit(_load_messages(Path(req["path"])), req["cp"])
    committed_at = time.time()
    fresh = _table(warehouse, opts).new_committer(p["user"])
    replay_start = time.time()
    replayed = fresh.commit(_load_messages(Path(req["path"])), req["cp"])
    return {"ids": ids, "replayed": replayed, "committed_at": committed_at,
            "replay_gap_s": replay_start - committed_at}


# -------------------------------------------------------------- maintenance
def compactor(warehouse: str, opts: dict, p: dict) -> dict:
    t = _table(warehouse, opts)
    deadline = time.time() + p["seconds"]
    n = conflicts = loops = 0
    claims: list[int] = []
    inflight = 0.0
    while time.time() < deadline and loops < MAX_ITERATIONS:
        loops += 1
        start = time.time()
        try:
            sid = t.compact(full=loops % 3 == 0).snapshot_id
            if sid is not None:
                claims.append(sid)
                n += 1
        except CommitConflictError:
            conflicts += 1
        inflight = max(inflight, time.time() - start)
        _pause(p, 0.05)
    return {"compactions": n, "conflicts": conflicts, "claims": claims, "inflight_max_s": inflight}


def expirer(warehouse: str, opts: dict, p: dict) -> dict:
    """Aggressive: keep one snapshot by count, and by time only what the retention protects."""
    t = _table(warehouse, opts)
    deadline = time.time() + p["seconds"]
    expired = loops = 0
    while time.time() < deadline and loops < MAX_ITERATIONS:
        loops += 1
        res = t.expire_snapshots(retain_min=1, older_than=timedelta(seconds=p["retention_s"]))
        expired += len(res.expired_snapshots)
        _pause(p, 0.1)
    return {"expired": expired}


def orphan_cleaner(warehouse: str, opts: dict, p: dict) -> dict:
    t = _table(warehouse, opts)
    deadline = time.time() + p["seconds"]
    removed: list[str] = []
    errors: list[str] = []
    runs = loops = 0
    while time.time() < deadline and loops < MAX_ITERATIONS:
        loops += 1
        try:
            removed += t.remove_orphan_files(older_than=timedelta(seconds=p["orphan_age_s"]), dry_run=False).paths
            runs += 1
        except Exception as exc:  # reported: a cleaner that keeps failing under load never cleans
            errors.append(_err(exc))
        _pause(p, 0.1)
    return {"runs": runs, "removed": removed, "errors": errors}


# ------------------------------------------------------------------ readers
def reader(warehouse: str, opts: dict, p: dict) -> dict:
    """Reads the latest snapshot again and again: keys once each, values never going back."""
    t = _table(warehouse, opts)
    deadline = time.time() + p["seconds"]
    seen: dict[int, int] = {}
    errors: list[str] = []
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
            errors.append(f"snapshot {snap.id}: {_err(exc)}")
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
    return {"reads": reads, "errors": errors, "read_max_s": slowest}


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
    t.consumer_manager().record("old-reader", pinned)
    first = t.to_arrow(snapshot_id=pinned).sort_by("k").to_pylist()
    deadline = time.time() + p["seconds"]
    reads = 0
    errors: list[str] = []
    release = time.time() + p["seconds"] / 2
    while time.time() < deadline and reads < MAX_ITERATIONS:
        if time.time() > release:
            # done with it: the pin goes and expiry may catch up (reads of it would now be unprotected)
            t.consumer_manager().delete("old-reader")
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

    ``p["pick"] == "retained"``: the oldest snapshot whose successor is younger than half the
    retention (no expiry can have planned it); ``"earliest"``: the earliest snapshot, racing expiry.
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
        sid = _pick(sm, p["pick"], p["retention_s"])
        if sid is None:
            continue
        name = f"{p['prefix']}{i}"
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
    while t.latest_snapshot() is None and time.time() < deadline:
        _pause(p, 0.05)
    start = t.latest_snapshot().id
    t.consumer_manager().record(cid, start)  # pinned before reading (see the module doc)
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
    position is saved and the snapshot still exists, expiry must keep it: reading it then works."""
    t = _table(warehouse, opts)
    sm = t.snapshot_manager
    consumers = t.consumer_manager()
    deadline = time.time() + p["seconds"]
    started: dict[str, int] = {}
    errors: list[str] = []
    i = 0
    while time.time() < deadline and i < 60:
        i += 1
        _pause(p, 0.2)
        sid = sm.earliest_id()
        if sid is None:
            continue
        cid = f"early-{i}"
        consumers.record(cid, sid)
        if sm.try_snapshot(sid) is None:
            consumers.delete(cid)  # it expired before the position was saved: start elsewhere
            continue
        started[cid] = sid
        try:
            t.to_arrow(snapshot_id=sid)
        except Exception as exc:
            errors.append(f"{cid} on {sid}: {_err(exc)}")
        if time.time() < deadline:
            consumers.delete(cid)  # read what it wanted: gone, so expiry moves on (the last one stays)
    return {"started": started, "errors": errors}


def recorder(warehouse: str, opts: dict, p: dict) -> dict:
    """A consumer that saves its position after every tiny batch (as fast as it can)."""
    t = _table(warehouse, opts)
    consumers = t.consumer_manager()
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


_EARLY: dict[str, _Standby] = {}


def _wait_for_start(role: str, warehouse: str, opts: dict, p: dict) -> None:
    """Imports and the first connection cost seconds of CPU: do them before the common start, so
    that no role's timed loop competes with another one's interpreter start (the two-phase
    writer's first standby process included)."""
    if "ready" not in p:
        return
    if role == "two_phase":
        user = f"two-phase-{p['worker']}"
        Path(p["state"]).mkdir(parents=True, exist_ok=True)
        _EARLY["standby"] = _Standby(warehouse, opts, user, Path(p["state"]), p["seconds"])
    _table(warehouse, opts).latest_snapshot()
    if "standby" in _EARLY:
        _EARLY["standby"].wait_ready(180)
    Path(p["ready"]).touch()
    deadline = time.time() + 300
    while not Path(p["go"]).exists() and time.time() < deadline:
        time.sleep(0.02)


if __name__ == "__main__":
    role, warehouse, opts_json, params_json, out = sys.argv[1:]
    params = json.loads(params_json)
    _wait_for_start(role, warehouse, json.loads(opts_json), params)
    result = globals()[role](warehouse, json.loads(opts_json), params)
    with contextlib.suppress(FileNotFoundError):
        Path(out).unlink()
    Path(out).write_text(json.dumps(result))
