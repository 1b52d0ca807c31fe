"""Processes that hammer one table at once (spawned by test_concurrency.py).

Forked by ``concurrency_hub.py`` (one role a process), or run alone as
``python concurrency_workers.py <role> <warehouse> <storage options JSON> <params JSON> <out>``.
Every role is bounded in time (``params["seconds"]``) and in iterations, writes a JSON report to
``out`` and records what it had acknowledged: the checker compares the table with those reports.

Two protections are timing-based in Paimon, and the roles measure what they rely on so the test can
tell a real bug from a misconfigured run:

* ``remove_orphan_files(older_than=...)`` keeps files younger than the bound: a writer's files are
  safe while its write-to-commit time (``inflight_max_s``) stays below it;
* snapshot expiry with a time retention keeps snapshot ``s`` until ``s + 1`` is older than the
  retention: a read of the latest snapshot (``read_max_s``), a fresh consumer/tag on a recent snapshot
  and a committer replaying its last checkpoint (``replay_gap_max_s``) are safe within it. On shared
  cores a read or a restart can outlast it, so a read or replay that fails is judged by what the
  table shows (`concurrency_readers.expiry_explains`), not by how long it took.
"""


from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from lake_assets import (
    CommitConflictError,
    CommitFileMissingError,
    CommitStateUnknownError,
    CorruptMetadataError,
    SnapshotNotFoundError,
)
from lake_assets.ops.commit_message import CommitMessage
from tests.reliability.concurrency_readers import (  # noqa: F401  (roles dispatched by name below)
    MAX_ITERATIONS,
    _err,
    _pause,
    _rows,
    _table,
    consumer,
    early_consumer,
    expiry_explains,
    old_reader,
    reader,
    recorder,
    tagger,
)


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
    while (time.time() < deadline or i < 3) and i < 40:  # a few commits even on a slow machine
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


def _judge_refusal(warehouse: str, opts: dict, cp: int, ids: list[int], retention_s: float,
                   problems: list[str]) -> Callable[[float], None]:
    """What `_commit` calls when a replay of checkpoint ``cp`` (committed as snapshots ``ids``) is
    refused: a refusal is right only once an expiry the retention allowed removed that snapshot."""

    def judge(failed_at: float) -> None:
        bug = expiry_explains(_table(warehouse, opts), ids, retention_s, failed_at)
        if bug:
            problems.append(f"replay of checkpoint {cp} (snapshots {ids}) refused: {bug}")

    return judge


def _load_messages(path: Path) -> list[CommitMessage]:
    return [CommitMessage.from_json(m) for m in json.loads(path.read_text())]


def _commit(make_committer, path: Path, cp: int, stats: dict, *,
            refused: Callable[[float], None] | None = None) -> list[int]:
    """Commit checkpoint ``cp`` from its persisted messages, exactly once through lost answers: after
    `CommitStateUnknownError` a fresh committer retries with the same identifier (a no-op if it
    landed). A replay (``refused`` given) may also be refused because its files are gone (its
    snapshot was compacted away and expired): nothing is committed then, and ``refused`` is called
    with the time of the refusal."""
    for _attempt in range(10):
        try:
            return make_committer().commit(_load_messages(path), cp)
        except CommitStateUnknownError:
            stats["unknown"] = stats.get("unknown", 0) + 1
        except CommitFileMissingError:
            if refused is None:
                raise
            stats["refused_replays"] = stats.get("refused_replays", 0) + 1
            refused(time.time())
            return []
    raise RuntimeError(f"checkpoint {cp} stayed unknown after 10 tries")


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
    # the first standby was started with this process, before the common start (see __main__)
    standby = _EARLY.pop("standby", None) or _Standby(warehouse, opts, user, state, p)
    acked: dict[int, int] = {}
    claims: list[int] = []
    replays: list[dict] = []
    inflight = gap = 0.0
    deadline = time.time() + p["seconds"]
    cp = crashes = 0
    crash_due = 2
    stats: dict[str, int] = {}
    refusal_problems: list[str] = []
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
            standby = _Standby(warehouse, opts, user, state, p)
            ids, committed_at = r["ids"], r["committed_at"]
            if r["replayed"]:
                replays.append({"cp": cp, "ids": r["replayed"], "by": "recover process"})
            gap = max(gap, r["replay_gap_s"])
            refusal_problems += r["refusal_problems"]
            for k, v in r["stats"].items():
                stats[k] = stats.get(k, 0) + v
            # the restarted job: new writer only after its recovery committed (sequence numbers)
            t = _table(warehouse, opts)
            writer = t.new_writer(user, write_only=True)
        else:
            ids = _commit(lambda tt=t: tt.new_committer(user), path, cp, stats)
            committed_at = time.time()
        inflight = max(inflight, committed_at - start)
        claims += ids
        acked.update(dict.fromkeys(keys, cp))
        if cp % 2 == 0:
            replay_start = time.time()
            again = _commit(lambda: _table(warehouse, opts).new_committer(user), path, cp, stats,
                            refused=_judge_refusal(warehouse, opts, cp, ids, p["retention_s"], refusal_problems))
            gap = max(gap, replay_start - committed_at)
            if again:
                replays.append({"cp": cp, "ids": again, "by": "restarted committer"})
        _pause(p, 0.05)
    writer.close()
    standby.stop()
    return {"acked": acked, "commits": cp, "claims": claims, "replays": replays, "user": user, "crashes": crashes,
            "inflight_max_s": inflight, "replay_gap_max_s": gap, "stats": stats, "refusal_problems": refusal_problems}


class _Standby:
    """A fresh process started ahead of time (like a standby job manager), so that taking over a
    crashed job's checkpoint costs a commit, not an interpreter start. Under the hub
    (``concurrency_hub.py``: `HUB_SPAWN` set) the hub forks it from its imported, warmed-up state,
    never from this process, which holds live connections; otherwise it is a fresh interpreter."""

    count = 0  # standbys started by this process (names their files)

    def __init__(self, warehouse: str, opts: dict, user: str, state: Path, p: dict) -> None:
        self.state = state
        self.n = _Standby.count
        _Standby.count += 1
        self.request = state / f"{user}-standby-{self.n}.request"
        self.out = state / f"{user}-standby-{self.n}.json"
        self.ready_file = state / f"{user}-standby-{self.n}.ready"
        params = {"user": user, "request": str(self.request), "seconds": p["seconds"] * 3 + 30,
                  "standby_ready": str(self.ready_file), "retention_s": p["retention_s"]}
        self.proc: subprocess.Popen[str] | HubChild
        if HUB_SPAWN is not None:
            self.proc = HubChild.spawn(HUB_SPAWN, "recover", params, self.out)
        else:
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
            break
        _pause(p, 0.01)
    req = json.loads(request.read_text()) if request.exists() else {}
    if not req:
        return {"ids": [], "replayed": [], "committed_at": time.time(), "replay_gap_s": 0.0, "stats": {},
                "refusal_problems": []}
    t = _table(warehouse, opts)
    stats: dict[str, int] = {}
    ids = _commit(lambda: t.new_committer(p["user"]), Path(req["path"]), req["cp"], stats)
    committed_at = time.time()
    fresh = _table(warehouse, opts)
    replay_start = time.time()
    problems: list[str] = []
    replayed = _commit(lambda: fresh.new_committer(p["user"]), Path(req["path"]), req["cp"], stats,
                       refused=_judge_refusal(warehouse, opts, req["cp"], ids, p["retention_s"], problems))
    return {"ids": ids, "replayed": replayed, "committed_at": committed_at,
            "replay_gap_s": replay_start - committed_at, "stats": stats, "refusal_problems": problems}


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
    """Aggressive: keep one snapshot by count, and by time only what the retention protects.

    With ``p["until"]`` (a path) it runs on past its deadline until that file exists (bounded by
    a hang guard): a role that must race expiry to the end says when it is done."""
    t = _table(warehouse, opts)
    deadline = time.time() + p["seconds"]
    hang_guard = deadline + 180
    started = time.time()
    expired = loops = 0
    first_expiry_s = None
    held = ""
    sm = t.snapshot_manager

    def racing() -> bool:
        if time.time() < deadline:
            return True
        return "until" in p and not Path(p["until"]).exists() and time.time() < hang_guard

    while racing() and (loops < MAX_ITERATIONS or "until" in p):
        loops += 1
        res = t.expire_snapshots(retain_min=1, older_than=timedelta(seconds=p["retention_s"]))
        expired += len(res.expired_snapshots)
        if res.expired_snapshots and first_expiry_s is None:
            first_expiry_s = round(time.time() - started, 2)
        if not expired:  # what held the first expiry back (reported when nothing expired)
            earliest, latest = sm.earliest_id(), sm.latest_id()
            after = sm.try_snapshot(earliest + 1) if earliest is not None else None
            age = None if after is None else round(time.time() - after.time_millis / 1000, 2)
            held = (f"at {time.time() - started:.2f}s: snapshots {earliest}..{latest}, the one after the "
                    f"earliest {age}s old, consumers at {t.store.consumer_manager().min_next_snapshot()}")
        _pause(p, 0.1)
    return {"expired": expired, "first_expiry_s": first_expiry_s, "held": held}


def orphan_cleaner(warehouse: str, opts: dict, p: dict) -> dict:
    t = _table(warehouse, opts)
    deadline = time.time() + p["seconds"]
    removed: list[str] = []
    errors: list[str] = []
    runs = loops = refused = 0
    while time.time() < deadline and loops < MAX_ITERATIONS:
        loops += 1
        try:
            removed += t.remove_orphan_files(
                older_than=timedelta(seconds=p["orphan_age_s"]), dry_run=False, allow_recent=True).paths
            runs += 1
        except (CorruptMetadataError, SnapshotNotFoundError):
            refused += 1  # metadata vanished under it (expiry): it deletes nothing then
        except Exception as exc:  # reported: a cleaner that keeps failing under load never cleans
            errors.append(_err(exc))
        _pause(p, 0.1)
    return {"runs": runs, "removed": removed, "errors": errors, "refused": refused}


_EARLY: dict[str, _Standby] = {}
HUB_SPAWN: Path | None = None  # where a process forked by the hub asks it for another process


class HubChild:
    """A process the hub forked on request (``<out>.rc`` holds its exit code once it ended): the
    part of `subprocess.Popen` that `_Standby` uses."""

    def __init__(self, out: Path, err: Path) -> None:
        self.rc_path, self.err = Path(f"{out}.rc"), err
        self.returncode: int | None = None

    @classmethod
    def spawn(cls, spawn_dir: Path, role: str, params: dict, out: Path) -> HubChild:
        err = out.with_suffix(".err")
        request = {"role": role, "params": params, "out": str(out), "err": str(err)}
        tmp = spawn_dir / f"{out.stem}.tmp"
        tmp.write_text(json.dumps(request))
        tmp.replace(spawn_dir / f"{out.stem}.json")  # whole, or not there: the hub reads *.json
        return cls(out, err)

    def poll(self) -> int | None:
        if self.returncode is None and self.rc_path.exists():
            self.returncode = int(self.rc_path.read_text())
        return self.returncode

    def communicate(self, timeout: float) -> tuple[str, str]:
        deadline = time.time() + timeout
        while self.poll() is None:
            if time.time() > deadline:
                raise subprocess.TimeoutExpired(f"hub child {self.rc_path.stem}", timeout)
            time.sleep(0.01)
        return "", self.err.read_text() if self.err.exists() else ""


def warm_up(scratch: Path) -> None:
    """Run every code path a role takes once, on a scratch table outside the warehouse: the first
    write of a process imports the write path (about 0.4 s of CPU), its first read, stream and
    expiry theirs. Done after the common start, a dozen processes' first operations competed for
    the two cores and the first commits landed seconds late: too late for any snapshot to outlive
    the expirer's time retention within the run, which then expired nothing."""
    import shutil

    from lake_assets import Catalog

    catalog = Catalog(str(scratch))
    catalog.create_database("db")
    t = catalog.create_table("db.t", pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())]),
                             primary_keys=["k"], options={"bucket": "2", "rowkind.field": "op",
                                                          "write-only": "true"})
    for i in range(3):
        t.write_arrow(_rows([1, 2, 3], i, t.arrow_schema))
    t.store.consumer_manager().record("warm", 1)
    stream, changes = t.stream(consumer_id="warm"), t.change_reader()
    for batch in stream.poll(max_snapshots=2):
        for split in batch.splits:
            changes.read(split)
    t.to_arrow(snapshot_id=1)
    t.create_tag("warm", 2)
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, older_than=timedelta(0))
    t.remove_orphan_files(older_than=timedelta(days=1), dry_run=True)
    shutil.rmtree(scratch)


def wait_for_start(role: str, warehouse: str, opts: dict, p: dict, *, warmed: bool = False) -> None:
    """Imports, the first connection and each code path's first run cost seconds of CPU: do them
    before the common start, so that no role's timed loop competes with another one's interpreter
    start (the two-phase writer's first standby process included). ``warmed``: a process forked
    from one that ran `warm_up` already (``concurrency_hub.py``)."""
    if "ready" not in p:
        return
    if not warmed:
        warm_up(Path(p["ready"]).with_suffix(".warm"))
    if role == "two_phase":
        user = f"two-phase-{p['worker']}"
        Path(p["state"]).mkdir(parents=True, exist_ok=True)
        _EARLY["standby"] = _Standby(warehouse, opts, user, Path(p["state"]), p)
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
    wait_for_start(role, warehouse, json.loads(opts_json), params)
    result = globals()[role](warehouse, json.loads(opts_json), params)
    with contextlib.suppress(FileNotFoundError):
        Path(out).unlink()
    Path(out).write_text(json.dumps(result))
