"""Many processes on one table at once: appenders, a two-phase writer that crashes and replays its
checkpoints, a compactor, an aggressive expirer, an orphan cleaner, readers of the latest snapshot,
a reader pinned to an old snapshot, taggers and slow consumers. Afterwards (`invariants.py`): every
acknowledged row is there once with its last acknowledged value, snapshot ids are contiguous and
each was written once, every snapshot, tag and consumer position has all its files and reads, tags
read what their tagger saw, consumers continue from their position, and nothing outside the
warehouse changed. Runs on a local disk and on S3 (moto on loopback, conditional PUTs).

``LAKE_CONCURRENCY_SECONDS`` lengthens the run (default 8 s of load per process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog
from tests.reliability.concurrency_workers import apply_changes
from tests.reliability.invariants import TableInvariants, tree_digest

WORKERS = Path(__file__).with_name("concurrency_workers.py")
SECONDS = float(os.environ.get("LAKE_CONCURRENCY_SECONDS", "8"))
# Snapshot time retention of the expirer: what protects readers of the latest snapshot, fresh
# consumers/tags on recent snapshots and a restarted committer's replay (see concurrency_workers).
RETENTION_S = 6.0
# older_than of the orphan cleaner: what protects the files of writers in flight. Paimon's default
# is a day; here it only has to exceed the write-to-commit time the writers report (checked), which
# on two cores shared with other test runs reaches seconds.
ORPHAN_AGE_S = 8.0


def _roles(state: str) -> list[tuple[str, dict]]:
    common = {"seconds": SECONDS, "retention_s": RETENTION_S, "orphan_age_s": ORPHAN_AGE_S}
    return [
        ("appender", {**common, "worker": 1}),
        ("appender", {**common, "worker": 2}),
        ("two_phase", {**common, "worker": 9, "state": state}),
        ("compactor", common),
        ("expirer", common),
        # a little longer than the writers, so that the files of killed writers get old enough
        ("orphan_cleaner", {**common, "seconds": SECONDS + 3}),
        ("reader", common),
        ("old_reader", common),
        ("tagger", {**common, "pick": "retained", "prefix": "old"}),
        ("consumer", {**common, "consumer_id": "slow-a", "pause_s": 0.4}),
        ("consumer", {**common, "consumer_id": "slow-b", "pause_s": 0.15}),
    ]


def _run_all(warehouse: str, opts: dict, tmp_path: Path, roles: list[tuple[str, dict]]) -> dict[str, dict]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    procs = {}
    for i, (role, params) in enumerate(roles):
        name = f"{role}-{i}"
        out = tmp_path / f"{name}.json"
        procs[name] = (out, subprocess.Popen(
            [sys.executable, str(WORKERS), role, warehouse, json.dumps(opts), json.dumps(params), str(out)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    failures = []
    for name, (_, p) in procs.items():
        try:
            _, err = p.communicate(timeout=SECONDS * 6 + 90)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            failures.append(f"{name} timed out: {err[-2000:]}")
            continue
        if p.returncode != 0:
            failures.append(f"{name} failed: {err[-3000:]}")
    assert not failures, "\n".join(failures)
    return {name: json.loads(out.read_text()) for name, (out, _) in procs.items()}


def _create(warehouse: str, opts: dict) -> None:
    cat = Catalog(warehouse, **opts)
    cat.create_database("db")
    cat.create_table("db.t", pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())]),
                     primary_keys=["k"], options={"bucket": "2", "rowkind.field": "op", "write-only": "true",
                                                  "commit.max-retries": "50"})


def _by_role(results: dict[str, dict], role: str) -> list[dict]:
    return [r for name, r in results.items() if name.rsplit("-", 1)[0] == role]


def _check(warehouse: str, opts: dict, results: dict[str, dict]) -> None:
    t = Catalog(warehouse, **opts).get_table("db.t")
    writers = _by_role(results, "appender") + _by_role(results, "two_phase")
    problems: list[str] = []

    # The run is only meaningful if the timing protections covered what the roles did.
    held = {n: r["inflight_max_s"] for n, r in results.items() if "inflight_max_s" in r}
    inflight = max(held.values())
    assert inflight < ORPHAN_AGE_S, f"writers held files longer than the orphan cleaner's bound: {held}"
    slowest = max(r["read_max_s"] for r in _by_role(results, "reader"))
    gap = max(r["replay_gap_max_s"] for r in _by_role(results, "two_phase"))
    assert max(slowest, gap) < RETENTION_S, f"read {slowest:.1f}s / replay gap {gap:.1f}s: raise RETENTION_S"
    print(f"\nlongest: write-to-commit {inflight:.2f}s, read {slowest:.2f}s, replay gap {gap:.2f}s")

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
    claims = {f"writer {i}": r["claims"] for i, r in enumerate(writers)}
    claims.update({f"compactor {i}": r["claims"] for i, r in enumerate(_by_role(results, "compactor"))})
    users = {f"writer {i}": r["user"] for i, r in enumerate(writers) if "user" in r}
    # with every process gone nothing is in flight: a cleanup without age bound must remove exactly
    # the killed writers' files and keep everything a snapshot, tag or consumer needs
    abandoned = {f for r in writers for f in r.get("abandoned", [])}
    removed = {p.rsplit("/", 1)[-1] for p in t.remove_orphan_files(older_than=timedelta(0), dry_run=False).paths}
    problems += [f"final orphan cleanup removed {f}, which no killed writer wrote" for f in removed - abandoned
                 if f.startswith("data-")]
    left = {p.rsplit("/", 1)[-1] for p in (st.path for st in t.file_io.walk_files(t.paths.root))} & abandoned
    problems += [f"killed writer's file {f} survived the final orphan cleanup" for f in left]
    inv = TableInvariants(t)
    problems += inv.claimed_ids_unique(claims, users)
    problems += inv.check_all()

    # tags read what their tagger saw; readers and consumers saw no anomaly
    tags = t.tags()
    for r in _by_role(results, "tagger"):
        problems += [f"tagger: {e}" for e in r["errors"]]
        for name, seen in r["tags"].items():
            if name not in tags:
                problems.append(f"tag {name} is gone")
            elif seen["rows"] is not None and {str(x["k"]): x["v"] for x in t.to_arrow(tag=name).to_pylist()} != seen["rows"]:
                problems.append(f"tag {name} reads differently from what its tagger saw")
    for role in ("reader", "old_reader", "consumer", "orphan_cleaner"):
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
    assert commits > 10 and _by_role(results, "expirer")[0]["expired"] > 0
    print(f"\nconcurrency: {commits} writer commits, {results['compactor-3']['compactions']} compactions, "
          f"{results['expirer-4']['expired']} snapshots expired, {len(results['orphan_cleaner-5']['removed'])} "
          f"orphans removed in {results['orphan_cleaner-5']['runs']} runs, {results['reader-6']['reads']} reads, "
          f"{len(tags)} tags, snapshots {inv.table.snapshot_manager.earliest_id()}..{t.snapshot_manager.latest_id()}")


def _sentinel_files(write) -> None:
    """Files beside the warehouse, some named like table files, that no operation may touch."""
    write("wh-sentinel/db.db/t/snapshot/snapshot-1", b"not a snapshot")
    write("wh-sentinel/db.db/t/bucket-0/data-x.parquet", b"not parquet")
    write("wh-sentinel/notes.txt", b"keep me")
    write("unrelated/deep/a/b.bin", bytes(range(256)))


def test_processes_commit_concurrently_on_local_disk(tmp_path):
    lake = tmp_path / "lake"
    wh = str(lake / "wh")

    def write(rel: str, data: bytes) -> None:
        (lake / rel).parent.mkdir(parents=True, exist_ok=True)
        (lake / rel).write_bytes(data)

    _sentinel_files(write)
    _create(wh, {})
    before = {k: v for k, v in tree_digest(str(lake)).items() if not k.startswith("wh/")}
    started = time.time()
    results = _run_all(wh, {}, tmp_path, _roles(str(tmp_path / "state")))
    print(f"\nprocesses ran {time.time() - started:.1f}s")
    _check(wh, {}, results)
    assert {k: v for k, v in tree_digest(str(lake)).items() if not k.startswith("wh/")} == before


def test_processes_commit_concurrently_on_s3(tmp_path, s3_warehouse):
    wh, opts = s3_warehouse
    bucket = wh.split("://", 1)[1].split("/", 1)[0]
    import fsspec

    fs = fsspec.filesystem("s3", **opts)
    _sentinel_files(lambda rel, data: fs.pipe_file(f"{bucket}/{rel}", data))
    fs.pipe_file(f"{bucket}/warehouse-2/db.db/t/snapshot/LATEST", b"1")  # shares the warehouse's prefix

    def outside() -> dict[str, str]:
        fs.invalidate_cache()
        return {k: v for k, v in tree_digest(f"s3://{bucket}", **opts).items() if not k.startswith("warehouse/")}

    _create(wh, opts)
    before = outside()
    results = _run_all(wh, opts, tmp_path, _roles(str(tmp_path / "state")))
    _check(wh, opts, results)
    assert outside() == before

