"""Many processes on one table at once: appenders (some leaving the files of killed jobs behind), a
two-phase writer that crashes, is taken over by a standby process and replays its checkpoints, a
compactor, an aggressive expirer, an orphan cleaner, readers of the latest snapshot, a reader pinned
to an old snapshot, a tagger (of retained, latest and earliest snapshots, the last racing expiry),
consumers started on the earliest snapshot and slow streaming consumers. Afterwards
(`invariants.py`): every acknowledged row is there once with its last acknowledged value, snapshot
ids are contiguous and each was written once, every snapshot, tag and consumer position has all its
files and reads, tags read what their tagger saw, consumers continue from their position, and
nothing outside the warehouse changed. Runs on a local disk, on S3 (moto on loopback, conditional
PUTs), and on S3 through a proxy that loses the answers of every 4th snapshot put and every 3rd tag
put (the clients must find out by looking and recognise their own objects). Every role, and every
standby of the two-phase writer, is its own process, forked from one hub that imported and warmed up
once (`concurrency_hub`): 40-odd fresh interpreters cost the module 60 CPU s of its 112.

``LAKE_CONCURRENCY_SECONDS`` / ``LAKE_CONCURRENCY_S3_SECONDS`` lengthen the runs (default 8 s of
load per process locally, 8 s paced on S3).

Smaller tests pin down races the big one meets by chance: listings that lose every entry when one
file vanishes mid-listing, tags and consumer positions created on a snapshot an expiry is removing,
and a checkpoint replayed after its snapshot expired.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog, LakeError
from lake_assets.ops.commit_message import CommitMessage
from tests.reliability.concurrency_readers import _state, apply_changes, expiry_explains
from tests.reliability.invariants import TableInvariants, tree_digest

WORKERS = Path(__file__).with_name("concurrency_workers.py")
HUB = Path(__file__).with_name("concurrency_hub.py")
SECONDS = float(os.environ.get("LAKE_CONCURRENCY_SECONDS", "8"))


@dataclass(frozen=True)
class Setup:
    """How hard one run pushes, and the two timing protections it relies on.

    ``retention_s`` is the expirer's snapshot time retention: what protects readers of the latest
    snapshot, fresh consumers/tags on recent snapshots and a restarted committer's replay (see
    concurrency_workers). ``orphan_age_s`` is the orphan cleaner's ``older_than``: what protects the
    files of writers in flight; Paimon's default is a day, here it only has to exceed the
    write-to-commit time the writers report (checked), which on two shared cores reaches seconds.
    ``pace`` stretches every pause of every role (a single moto process serves all of S3).
    """

    seconds: float = SECONDS
    retention_s: float = 6.0
    orphan_age_s: float = 10.0
    pace: float = 1.0
    appenders: int = 2
    consumers: int = 2
    min_commits: int = 10
    expect_expiry: bool = True
    skip: tuple[str, ...] = ()  # roles left out (every role runs on the local disk)


LOCAL = Setup()
# Commits on moto take seconds once several processes race (one server process, exponential
# back-off between tries) and opening a fresh catalog takes seconds: fewer committers, slower loops,
# longer protections. On a machine shared by several test runs a default run commits only about ten
# snapshots and expires none; a longer LAKE_CONCURRENCY_S3_SECONDS lets the time retention bite.
# The readers of the latest and of a pinned snapshot and the streaming consumers run locally only:
# every process costs seconds of moto's time, and the test must stay well under a minute.
S3 = Setup(seconds=float(os.environ.get("LAKE_CONCURRENCY_S3_SECONDS", "8")), retention_s=15.0,
           orphan_age_s=25.0, pace=6.0, appenders=1, consumers=0, min_commits=4, expect_expiry=False,
           skip=("reader", "old_reader"))


def _roles(setup: Setup, state: str) -> list[tuple[str, dict]]:
    common = {"seconds": setup.seconds, "retention_s": setup.retention_s, "orphan_age_s": setup.orphan_age_s,
              "pace": setup.pace}
    # A snapshot expires once the one after it is older than the retention: with the expirer
    # stopping with the writers, only snapshots committed in the first ``seconds - retention_s``
    # of the run could, and on shared cores the first commits can come later than that. So the
    # expirer runs on until what the writers committed is old enough, and the consumer that
    # starts on the earliest snapshot keeps racing it as long.
    expiry = {**common, "seconds": setup.seconds + setup.retention_s} if setup.expect_expiry else common
    consumers = [("consumer", {**common, "consumer_id": cid, "pause_s": pause})
                 for cid, pause in [("slow-a", 0.4), ("slow-b", 0.15)][: setup.consumers]]
    roles = [
        *[("appender", {**common, "worker": w}) for w in range(1, setup.appenders + 1)],
        ("two_phase", {**common, "worker": 9, "state": state}),
        ("compactor", common),
        ("expirer", expiry),
        # a little longer than the writers, so that the files of killed writers get old enough
        ("orphan_cleaner", {**common, "seconds": setup.seconds + 4}),
        ("reader", common),
        ("old_reader", common),
        # tags a retained, the latest and the earliest snapshot in turn (the last one races expiry)
        ("tagger", {**common, "picks": ["retained", "latest", "earliest"], "prefix": "t-"}),
        ("early_consumer", expiry),
        *consumers,
    ]
    return [(role, params) for role, params in roles if role not in setup.skip]


def _run_all(warehouse: str, opts: dict, tmp_path: Path, roles: list[tuple[str, dict]]) -> dict[str, dict]:
    """Runs the roles as concurrent processes, forked from one hub that imported and warmed up once
    (`concurrency_hub`), from a common start; returns each role's report by process name."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    go = tmp_path / "go"
    specs = []
    for i, (role, params) in enumerate(roles):
        name = f"{role}-{i}"
        specs.append({"name": name, "role": role, "out": str(tmp_path / f"{name}.json"),
                      "err": str(tmp_path / f"{name}.err"),
                      "params": {**params, "ready": str(tmp_path / f"{name}.ready"), "go": str(go)}})
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"warehouse": warehouse, "opts": opts, "scratch": str(tmp_path / "hub.warm"),
                                "spawn": str(tmp_path / "spawn"), "roles": specs}))
    # the hub's output to a file: a chatty process must never block on a full pipe while we wait
    with open(tmp_path / "hub.err", "w") as err:
        hub = subprocess.Popen([sys.executable, str(HUB), str(plan)], env=env, stdout=subprocess.DEVNULL,
                               stderr=err, start_new_session=True)

    def ended(spec: dict) -> bool:
        return Path(spec["out"] + ".rc").exists()

    # a common start once every process has connected (bounded: a dead one fails below)
    deadline = time.time() + 180
    while time.time() < deadline and hub.poll() is None and not all(
        Path(s["params"]["ready"]).exists() or ended(s) for s in specs
    ):
        time.sleep(0.05)
    go.touch()
    failures = []
    try:
        # a hang guard only: the expirer of the early-consumer test may race on 180 s past its run
        hub.wait(timeout=SECONDS * 6 + 300)
    except subprocess.TimeoutExpired:
        os.killpg(hub.pid, signal.SIGKILL)
        hub.wait()
    for spec in specs:
        if not ended(spec):
            failures.append(f"{spec['name']} timed out or was lost (hub: {_tail(tmp_path / 'hub.err')}): "
                            f"{_tail(Path(spec['err']))}")
        elif Path(spec["out"] + ".rc").read_text() != "0":
            failures.append(f"{spec['name']} failed: {_tail(Path(spec['err']))}")
    assert not failures, "\n".join(failures)
    return {s["name"]: json.loads(Path(s["out"]).read_text()) for s in specs}


def _tail(path: Path) -> str:
    return path.read_text()[-3000:] if path.exists() else "(nothing written)"


def _create(warehouse: str, opts: dict) -> None:
    cat = Catalog(warehouse, **opts)
    cat.create_database("db")
    cat.create_table("db.t", pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())]),
                     primary_keys=["k"], options={"bucket": "2", "rowkind.field": "op", "write-only": "true",
                                                  "commit.max-retries": "50"})


def _by_role(results: dict[str, dict], role: str) -> list[dict]:
    return [r for name, r in results.items() if name.rsplit("-", 1)[0] == role]


def _check(warehouse: str, opts: dict, results: dict[str, dict], setup: Setup) -> None:
    t = Catalog(warehouse, **opts).get_table("db.t")
    writers = _by_role(results, "appender") + _by_role(results, "two_phase")
    problems: list[str] = []

    # The run is only meaningful if the orphan cleaner's age bound covered the writers' files in flight.
    held = {n: r["inflight_max_s"] for n, r in results.items() if "inflight_max_s" in r}
    inflight = max(held.values())
    assert inflight < setup.orphan_age_s, f"writers held files longer than the orphan cleaner's bound: {held}"
    # Reads of the latest snapshot and replays of a committed checkpoint are protected by the time
    # retention only, and on shared cores they can outlast any retention: each failure of theirs is
    # judged by what the table shows (`expiry_explains`: a bug unless an expiry the retention
    # allowed removed the snapshot), not by asserting that the load stayed light.
    slowest = max((r["read_max_s"] for r in _by_role(results, "reader")), default=0.0)
    gap = max(r["replay_gap_max_s"] for r in _by_role(results, "two_phase"))
    unprotected = [u for r in _by_role(results, "reader") for u in r["unprotected"]]
    print(f"\nlongest: write-to-commit {inflight:.2f}s, read {slowest:.2f}s, replay gap {gap:.2f}s; "
          f"{len(unprotected)} read(s) outlasted the retention and lost their snapshot: {unprotected[:3]}")

    # every acknowledged row is there once, with its last acknowledged value; nothing else is
    acked: dict[int, int] = {}
    for r in writers:
        acked.update({int(k): v for k, v in r["acked"].items()})
    rows = t.to_arrow().to_pylist()
    keys = [r["k"] for r in rows]
    if len(keys) != len(set(keys)):
        problems.append("a key appears twice in the latest snapshot")
    if {r["k"]: r["v"] for r in rows} != acked:
        state = {r["k"]: r["v"] for r in rows}
        diff = {k: (acked.get(k), state.get(k)) for k in acked.keys() | state.keys() if acked.get(k) != state.get(k)}
        problems.append(f"latest state differs from the acknowledged writes (acked, read): {diff}")

    # replays of a committed checkpoint were no-ops; no snapshot id was claimed twice
    for r in _by_role(results, "two_phase"):
        problems += [f"replayed checkpoint committed again: {x}" for x in r["replays"]]
        # while its snapshot is kept the replay must be found committed, not refused for missing
        # files (that refusal is for replays after an expiry the retention allowed)
        problems += r["refusal_problems"]
        assert r["crashes"] > 0, "the two-phase writer never crashed: no standby came up in time"
    claims = {f"writer {i}": r["claims"] for i, r in enumerate(writers)}
    claims.update({f"compactor {i}": r["claims"] for i, r in enumerate(_by_role(results, "compactor"))})
    users = {f"writer {i}": r["user"] for i, r in enumerate(writers) if "user" in r}
    inv = TableInvariants(t)
    problems += inv.claimed_ids_unique(claims, users)
    problems += inv.check_all()
    assert not problems, "\n".join(problems)  # before the cleanup below can make it worse

    # with every process gone nothing is in flight: a cleanup without age bound must remove exactly
    # the killed writers' files and keep everything a snapshot, tag or consumer needs
    abandoned = {f for r in writers for f in r.get("abandoned", [])}
    found = t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    removed = {p.rsplit("/", 1)[-1] for p in found.paths}
    problems += [f"final orphan cleanup removed {f}, which no killed writer wrote" for f in removed - abandoned
                 if f.startswith("data-")]
    left = {p.rsplit("/", 1)[-1] for p in (st.path for st in t.file_io.walk_files(t.paths.root))} & abandoned
    problems += [f"killed writer's file {f} survived the final orphan cleanup" for f in left]
    problems += TableInvariants(t).check_all()

    # tags read what their tagger saw; readers and consumers saw no anomaly
    tags = t.tags()
    problems += _tag_problems(t, results)
    for role in ("reader", "old_reader", "consumer", "early_consumer", "orphan_cleaner"):
        for r in _by_role(results, role):
            problems += [f"{role}: {e}" for e in r["errors"]]

    # each consumer continues from its saved position up to the latest snapshot
    latest_state = {str(r["k"]): r["v"] for r in rows}
    for r in _by_role(results, "consumer"):
        state = dict(r["state"])
        stream = t.stream(consumer_id=r["consumer_id"])
        change_reader = t.change_reader()
        for _ in range(10_000):
            batches = stream.poll(max_snapshots=50)
            if not batches:
                break
            for b in batches:
                for split in b.splits:
                    apply_changes(state, change_reader.read(split).to_pylist())
        if state != latest_state:
            problems.append(f"consumer {r['consumer_id']} continued from {r['position']} to a different state")

    assert not problems, "\n".join(problems)
    commits = sum(r["commits"] for r in writers)
    expired = sum(r["expired"] for r in _by_role(results, "expirer"))
    assert commits >= setup.min_commits and (expired > 0 or not setup.expect_expiry), (
        commits, expired, [r["held"] for r in _by_role(results, "expirer")])
    cleaner = _by_role(results, "orphan_cleaner")[0]
    first = [r["first_expiry_s"] for r in _by_role(results, "expirer")]
    print(f"\nconcurrency: {commits} writer commits, {_by_role(results, 'compactor')[0]['compactions']} "
          f"compactions, {expired} snapshots expired (the first after {first}s), {len(cleaner['removed'])} "
          f"orphans removed in "
          f"{cleaner['runs']} runs, {sum(r['reads'] for r in _by_role(results, 'reader'))} reads, {len(tags)} tags, "
          f"snapshots {t.snapshot_manager.earliest_id()}..{t.snapshot_manager.latest_id()}; two-phase "
          f"{[r['stats'] for r in _by_role(results, 'two_phase')]}, tagger skipped "
          f"{sum(len(r['skipped']) for r in _by_role(results, 'tagger'))}, early consumers refused "
          f"{sum(r['refused'] for r in _by_role(results, 'early_consumer'))}, cleaner refused {cleaner['refused']}")


def _tag_problems(t, results: dict[str, dict]) -> list[str]:
    """Every tag a tagger created is there and reads what the tagger read right after creating it."""
    tags = t.tags()
    problems = []
    for r in _by_role(results, "tagger"):
        problems += [f"tagger: {e}" for e in r["errors"]]
        problems += [f"tag {s.split(' ', 1)[0]} exists although creating it failed" for s in r["skipped"]
                     if s.split(" ", 1)[0] in tags]
        for name, seen in r["tags"].items():
            if name not in tags:
                problems.append(f"tag {name} is gone")
            elif seen["rows"] is not None and _state(t.to_arrow(tag=name)) != seen["rows"]:
                problems.append(f"tag {name} reads differently from what its tagger saw")
    return problems


def _sentinel_files(write) -> None:
    """Files beside the warehouse, some named like table files, that no operation may touch."""
    write("wh-sentinel/db.db/t/snapshot/snapshot-1", b"not a snapshot")
    write("wh-sentinel/db.db/t/bucket-0/data-x.parquet", b"not parquet")
    write("wh-sentinel/notes.txt", b"keep me")
    write("unrelated/deep/a/b.bin", bytes(range(256)))
    write("wh.orc", b"next to the warehouse, sharing its prefix")


def test_processes_commit_concurrently_on_local_disk(tmp_path):
    lake = tmp_path / "lake"
    wh = str(lake / "wh")

    def write(rel: str, data: bytes) -> None:
        (lake / rel).parent.mkdir(parents=True, exist_ok=True)
        (lake / rel).write_bytes(data)

    _sentinel_files(write)
    _create(wh, {})
    before = tree_digest(str(lake), exclude="wh")
    started = time.time()
    results = _run_all(wh, {}, tmp_path, _roles(LOCAL, str(tmp_path / "state")))
    print(f"\nprocesses ran {time.time() - started:.1f}s")
    _check(wh, {}, results, LOCAL)
    assert tree_digest(str(lake), exclude="wh") == before


def _s3_outside(wh: str, opts: dict):
    """Writes the sentinels beside an S3 warehouse; returns a digest of everything outside it."""
    import fsspec

    bucket = wh.split("://", 1)[1].split("/", 1)[0]
    fs = fsspec.filesystem("s3", **opts)
    _sentinel_files(lambda rel, data: fs.pipe_file(f"{bucket}/{rel}", data))
    fs.pipe_file(f"{bucket}/warehouse-2/db.db/t/snapshot/LATEST", b"1")  # shares the warehouse's prefix

    def outside() -> dict[str, str]:
        fs.invalidate_cache()
        return tree_digest(f"s3://{bucket}", exclude="warehouse", **opts)

    return outside


def _run_on_s3(tmp_path: Path, wh: str, opts: dict) -> None:
    outside = _s3_outside(wh, opts)
    _create(wh, opts)
    before = outside()
    started = time.time()
    results = _run_all(wh, opts, tmp_path, _roles(S3, str(tmp_path / "state")))
    print(f"\nprocesses ran {time.time() - started:.1f}s")
    _check(wh, opts, results, S3)
    print(f"\nchecked after {time.time() - started:.1f}s")
    assert outside() == before


def test_processes_commit_concurrently_on_s3(tmp_path, s3_warehouse):
    _run_on_s3(tmp_path, *s3_warehouse)


def test_processes_commit_concurrently_on_s3_losing_responses(tmp_path, faulty_s3):
    from tests.reliability.fault_proxy import Fault

    wh, opts, proxy = faulty_s3
    # every 3rd snapshot put and every 3rd tag put lands, but its answer is lost (every 3rd, not 4th: at
    # load 19 a run made only 5 commits in its 8 s and dropped 3 answers, too few to count as tested)
    proxy.add(Fault("drop", path=r"/snapshot/snapshot-\d+$", every=3, times=10**6))
    proxy.add(Fault("drop", path=r"/tag/tag-", every=3, times=10**6))
    _run_on_s3(tmp_path, wh, opts)
    assert sum(1 for r in proxy.requests if r[2] == "drop") > 3


def test_listings_miss_nothing_while_other_processes_commit(tmp_path):
    """Snapshots, tags and consumers that exist stay visible in listings while other processes
    commit and save consumer positions: on a local disk each creates and removes a temporary file
    in ``snapshot/`` or ``consumer/``, and a listing that meets such a file must skip only it."""
    wh = str(tmp_path / "wh")
    _create(wh, {})
    t = Catalog(wh).get_table("db.t")
    for i in range(3):
        t.write_arrow(pa.table({"k": [i], "v": [i], "op": ["+I"]}, schema=t.arrow_schema))
    t.create_tag("kept", 1)
    t.store.consumer_manager().record("pinned", 2)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    params = {"seconds": 20, "worker": 1}
    procs = [subprocess.Popen([sys.executable, str(WORKERS), role, wh, "{}", json.dumps(params),
                               str(tmp_path / f"{role}.json")], env=env, stderr=subprocess.PIPE, text=True)
             for role in ("appender", "recorder")]
    misses: list[str] = []
    try:
        while "busy" not in t.store.consumer_manager().consumers() and all(p.poll() is None for p in procs):
            time.sleep(0.01)
        deadline = time.time() + 15
        listings = 0
        while time.time() < deadline and not misses and all(p.poll() is None for p in procs) and listings < 50_000:
            listings += 1
            ids = [s.id for s in t.snapshots()]
            if ids[:3] != [1, 2, 3]:
                misses.append(f"listing {listings} of snapshot/ returned {ids[:5]}")
            if "pinned" not in t.store.consumer_manager().consumers():
                misses.append(f"listing {listings} of consumer/ lost consumer 'pinned'")
    finally:
        for p in procs:
            p.kill()
            p.communicate()
    assert not misses, misses


def test_tags_on_the_earliest_snapshot_keep_their_files(tmp_path):
    """A tagger tags whatever snapshot is the earliest while an aggressive expirer removes it:
    either the tag is refused (the snapshot was gone) or it keeps every file it references."""
    wh = str(tmp_path / "wh")
    _create(wh, {})
    common = {"seconds": SECONDS, "retention_s": 0.5, "orphan_age_s": LOCAL.orphan_age_s}
    roles = [("appender", {**common, "worker": 1}), ("appender", {**common, "worker": 2}), ("compactor", common),
             ("expirer", common), ("tagger", {**common, "pick": "earliest", "prefix": "early"})]
    results = _run_all(wh, {}, tmp_path, roles)
    t = Catalog(wh).get_table("db.t")
    inv = TableInvariants(t)
    tag_holders = [h for h in inv.holders() if h.kind == "tag"]
    problems = _tag_problems(t, results) + inv.files_present(tag_holders) + inv.reads_fully(tag_holders)
    assert tag_holders and not problems, "\n".join(problems)


def test_invariants_report_missing_files_and_outside_changes(tmp_path):
    """The checker itself: it names what is missing, for whom, and sees changes beside the warehouse."""
    wh = str(tmp_path / "lake" / "wh")
    (tmp_path / "lake" / "wh-sentinel").mkdir(parents=True)
    (tmp_path / "lake" / "wh-sentinel" / "a").write_bytes(b"a")
    _create(wh, {})
    t = Catalog(wh).get_table("db.t")
    for i in range(3):
        t.write_arrow(pa.table({"k": [i], "v": [i], "op": ["+I"]}, schema=t.arrow_schema))
    t.create_tag("first", 1)
    t.store.consumer_manager().record("c", 2)
    assert TableInvariants(t).check_all() == []
    before = tree_digest(str(tmp_path / "lake"), exclude="wh")

    first_file = next(e for e in t.store.file_store_scan().live_entries(t.snapshot(1)))
    os.unlink(t.store.data_file_path(first_file.partition, first_file.bucket, first_file.file))
    os.unlink(t.paths.manifest_file(t.snapshot(3).delta_manifest_list))
    problems = TableInvariants(t).check_all()
    assert any(p.startswith("tag first (snapshot 1): data file") for p in problems), problems
    assert any(p.startswith("consumer c (snapshot 2): data file") for p in problems), problems
    assert any(p.startswith("snapshot 3 (snapshot 3): delta manifest list") for p in problems), problems

    (tmp_path / "lake" / "wh-sentinel" / "b").write_bytes(b"b")
    assert tree_digest(str(tmp_path / "lake"), exclude="wh") != before


def test_failures_are_blamed_on_expiry_only_when_the_retention_allowed_it(tmp_path):
    """The judge of reads and replays that only the time retention protects (`expiry_explains`)."""
    wh = str(tmp_path / "wh")
    _create(wh, {})
    t = Catalog(wh).get_table("db.t")
    for i in range(3):
        t.write_arrow(pa.table({"k": [i], "v": [i], "op": ["+I"]}, schema=t.arrow_schema))
    assert t.expire_snapshots(retain_min=2, older_than=timedelta(0)).expired_snapshots == [1]
    now = time.time()
    assert expiry_explains(t, [1], 0.0, now) is None
    assert expiry_explains(t, [2], 0.0, now) == "snapshot 2 is still retained"
    assert expiry_explains(t, [1, 2], 0.0, now) == "snapshot 2 is still retained"
    assert expiry_explains(t, [], 0.0, now) == "no snapshot to tell whether an expiry explains it"
    # snapshot 2 was committed less than an hour ago: an expiry of 1 is premature for a 1 h retention
    premature = expiry_explains(t, [1], 3600.0, now)
    assert premature is not None and premature.startswith("snapshot 1 was expired although snapshot 2 was committed")


def test_a_replay_after_its_snapshot_expired_never_breaks_the_table(tmp_path):
    """A restarted job replays a checkpoint whose snapshot has meanwhile been compacted away and
    expired: the replay must be a no-op or be refused, and the table must still read."""
    wh = str(tmp_path / "wh")
    _create(wh, {})
    t = Catalog(wh).get_table("db.t")
    writer = t.new_writer("job", write_only=True)
    writer.write_arrow(pa.table({"k": [1], "v": [1], "op": ["+I"]}, schema=t.arrow_schema))
    checkpoint = json.dumps([m.to_json() for m in writer.prepare_commit()])
    assert t.new_committer("job").commit([CommitMessage.from_json(m) for m in json.loads(checkpoint)], 7)
    for i in range(3):
        t.write_arrow(pa.table({"k": [2], "v": [i], "op": ["+I"]}, schema=t.arrow_schema))
    t.compact(full=True)
    assert t.expire_snapshots(retain_min=1, retain_max=1, older_than=timedelta(0)).expired_snapshots
    before = t.latest_snapshot().id

    restarted = Catalog(wh).get_table("db.t").new_committer("job")
    try:
        replayed = restarted.commit([CommitMessage.from_json(m) for m in json.loads(checkpoint)], 7)
    except LakeError:
        replayed = []
    assert replayed == [] and t.latest_snapshot().id == before
    assert _state(t.to_arrow()) == {"1": 1, "2": 2}


def test_a_replay_whose_expired_snapshot_files_are_still_live_is_a_no_op(tmp_path):
    """The replayed checkpoint's snapshot expired but its files are still live (nothing compacted
    them): identifier dedup cannot see it, the files exist, and committing them again would add a
    live file twice. The committer must find them in the table and commit nothing."""
    wh = str(tmp_path / "wh")
    _create(wh, {})
    t = Catalog(wh).get_table("db.t")
    writer = t.new_writer("job", write_only=True)
    writer.write_arrow(pa.table({"k": [1], "v": [1], "op": ["+I"]}, schema=t.arrow_schema))
    checkpoint = json.dumps([m.to_json() for m in writer.prepare_commit()])
    assert t.new_committer("job").commit([CommitMessage.from_json(m) for m in json.loads(checkpoint)], 7)
    t.write_arrow(pa.table({"k": [2], "v": [2], "op": ["+I"]}, schema=t.arrow_schema))
    t.write_arrow(pa.table({"k": [3], "v": [3], "op": ["+I"]}, schema=t.arrow_schema))
    assert 1 in t.expire_snapshots(retain_min=2, retain_max=2, older_than=timedelta(0)).expired_snapshots
    before = t.latest_snapshot().id

    restarted = Catalog(wh).get_table("db.t").new_committer("job")
    assert restarted.commit([CommitMessage.from_json(m) for m in json.loads(checkpoint)], 7) == []
    assert t.latest_snapshot().id == before
    assert _state(t.to_arrow()) == {"1": 1, "2": 2, "3": 3}
    # its files are the live ones: abort after such a replay deletes nothing
    restarted.abort([CommitMessage.from_json(m) for m in json.loads(checkpoint)])
    assert _state(Catalog(wh).get_table("db.t").to_arrow()) == {"1": 1, "2": 2, "3": 3}


def test_consumers_started_on_the_earliest_snapshot_keep_their_files(tmp_path):
    """Consumers saved on whatever snapshot is the earliest while an aggressive expirer removes it:
    a position saved while its snapshot still existed keeps every file of that snapshot.

    The consumer ends holding one position, taken after some expiry, and the expirer races on
    until it holds it: events, not the clock, decide what is left to check. (Both used to stop at
    8 s, each position dropped once read but the last: at load 20 a run could end with its last
    start refused by an expiry, or with no snapshot yet, and so with no position to check.)"""
    wh = str(tmp_path / "wh")
    _create(wh, {})
    done = str(tmp_path / "early-consumer-holds")
    common = {"seconds": SECONDS, "retention_s": 0.5}
    roles = [("appender", {**common, "worker": 1}), ("appender", {**common, "worker": 2}), ("compactor", common),
             ("expirer", {**common, "until": done}), ("early_consumer", {**common, "done": done})]
    results = _run_all(wh, {}, tmp_path, roles)
    t = Catalog(wh).get_table("db.t")
    inv = TableInvariants(t)
    early = _by_role(results, "early_consumer")[0]
    held = [h for h in inv.holders() if h.kind == "consumer"]
    problems = [f"early consumer {e}" for e in early["errors"]]
    problems += inv.consumers_resumable() + inv.files_present(held) + inv.reads_fully(held)
    # every other position was dropped once read: the one held is the one it kept, and its snapshot is there
    assert [h.name for h in held] == [early["held"]] and not problems, (early["held"], held, "\n".join(problems))
    assert early["started"][early["held"]] > 1 and sum(r["expired"] for r in _by_role(results, "expirer")) > 0
