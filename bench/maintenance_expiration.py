"""The expiration part of ``bench_maintenance.py``: tables of many snapshots built with a full
compaction every few commits, the oldest expired on fresh copies, each result checked (the latest
snapshot's rows, every retained snapshot's files)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))  # imported by `python bench/bench_maintenance.py` from a checkout

from bench.maintenance_common import KEY, SEED, random_strings, timed  # noqa: E402
from bench.profile_hotspots import Hotspot, profiled  # noqa: E402
from lake_assets import Catalog  # noqa: E402
from lake_assets.lsm.bucket import assign_buckets  # noqa: E402
from lake_assets.table import Table  # noqa: E402


@dataclass
class ExpireBuild:
    """A table built for expiration and what its expected latest state is."""

    table: Table
    warehouse: str
    buckets: int
    keys: np.ndarray  # (buckets, keys per bucket): ids routed to each bucket
    last_round: np.ndarray  # same shape: the last round that wrote each key, -1 if none
    rounds: int = 0
    files_added: int = 0
    build_s: float = 0.0


EXPIRE_SCHEMA = pa.schema([(KEY, pa.int64()), ("round", pa.int64()), ("name", pa.string())])
KEYS_PER_BUCKET = 200
ROWS_PER_BUCKET = 4


def new_expire_table(warehouse: str, buckets: int) -> ExpireBuild:
    """An empty PK table with ``buckets`` buckets and the ids that route to each bucket."""
    catalog = Catalog(warehouse)
    catalog.create_database("bench")
    table = catalog.create_table("bench.expire", EXPIRE_SCHEMA, primary_keys=[KEY],
                                 options={"bucket": str(buckets), "write-only": "true"})
    candidates = np.arange(buckets * KEYS_PER_BUCKET * 4, dtype=np.int64)
    routed = assign_buckets([pa.array(candidates)], table.schema.types([KEY]), buckets)
    keys = np.stack([candidates[routed == b][:KEYS_PER_BUCKET] for b in range(buckets)])
    if keys.shape[1] < KEYS_PER_BUCKET:
        raise SystemExit("not enough candidate keys per bucket")
    return ExpireBuild(table, warehouse, buckets, keys, np.full(keys.shape, -1, dtype=np.int64))


def grow(build: ExpireBuild, target_snapshots: int, compact_every: int, seed: int) -> None:
    """Commit rounds (one new file per bucket each) and full compactions until ``target_snapshots``."""
    rng = np.random.default_rng(seed)
    table = build.table
    user = f"bench-{seed}"
    writer = table.new_writer(user, write_only=True)
    committer = table.new_committer(user)
    start = time.perf_counter()
    latest = table.snapshot_manager.latest_id() or 0
    appended = 0
    try:
        while latest < target_snapshots:
            if appended and appended % compact_every == 0:
                result = table.compact(full=True)
                build.files_added += result.files_out - result.upgraded
                latest = result.snapshot_id or latest
                appended = 0
                if latest >= target_snapshots:
                    break
            cols = rng.integers(0, KEYS_PER_BUCKET, size=(build.buckets, ROWS_PER_BUCKET))
            rows = np.arange(build.buckets)[:, None]
            ids = build.keys[rows, cols].ravel()
            build.last_round[rows, cols] = build.rounds
            n = len(ids)
            writer.write_arrow(pa.table({
                KEY: pa.array(ids), "round": pa.array(np.full(n, build.rounds, dtype=np.int64)),
                "name": random_strings(rng, n),
            }, schema=EXPIRE_SCHEMA))
            messages = writer.prepare_commit()
            written = sum(len(m.new_files) for m in messages)
            if written != build.buckets:
                raise SystemExit(f"a commit wrote {written} files, expected one per bucket ({build.buckets})")
            latest = committer.commit(messages, build.rounds)[-1]
            build.files_added += written
            build.rounds += 1
            appended += 1
    finally:
        writer.close()
    build.build_s += time.perf_counter() - start


def expected_expire_state(build: ExpireBuild) -> tuple[np.ndarray, np.ndarray]:
    """(ids, round) of every key written, sorted by id."""
    written = build.last_round >= 0
    ids, rounds = build.keys[written], build.last_round[written]
    order = np.argsort(ids)
    return ids[order], rounds[order]


def count_data_files(table: Table) -> int:
    """Data files on disk under the table's bucket directories."""
    n = 0
    for entry in os.scandir(table.paths.root):
        if entry.is_dir() and entry.name.startswith("bucket-"):
            n += sum(1 for f in os.scandir(entry.path) if f.name.endswith(".parquet"))
    return n


def referenced_files(table: Table) -> set[str]:
    """Every data file some retained snapshot references: the earliest's live files plus later additions."""
    sm = table.snapshot_manager
    earliest, latest = sm.earliest_id(), sm.latest_id()
    assert earliest is not None and latest is not None
    scan = table.store.file_store_scan()
    store = table.store
    files = {store.data_file_path(e.partition, e.bucket, e.file) for e in scan.live_entries(sm.snapshot(earliest))}
    for sid in range(earliest + 1, latest + 1):
        for e in scan.delta_entries(sm.snapshot(sid)):
            files.add(table.store.data_file_path(e.partition, e.bucket, e.file))
    return files


def expire_and_verify(name: str, build: ExpireBuild, warehouse: str, limit: int,
                      errors: list[str]) -> dict[str, Any]:
    """Dry-run, then expire the oldest ``limit`` snapshots of the copy in ``warehouse``; check it afterwards."""
    table = Catalog(warehouse).get_table("bench.expire")
    sm = table.snapshot_manager
    snapshots_before = len(sm.snapshot_ids())
    files_before = count_data_files(table)
    future = datetime.now() + timedelta(days=1)
    sync_started = time.perf_counter()
    os.sync()  # the copy's writeback must not land inside the timings
    sync_s = time.perf_counter() - sync_started
    dry, dry_s = timed(lambda: table.expire_snapshots(retain_min=1, limit=limit, older_than=future, dry_run=True))
    result, expire_s = timed(lambda: table.expire_snapshots(retain_min=1, limit=limit, older_than=future))
    if len(result.expired_snapshots) != min(limit, snapshots_before - 1):
        errors.append(f"{name}: expired {len(result.expired_snapshots)} snapshots, expected {limit}")
    if len(dry.deleted_data_files) != len(result.deleted_data_files):
        errors.append(f"{name}: the dry run planned {len(dry.deleted_data_files)} data-file deletions, "
                      f"the real run {len(result.deleted_data_files)}")
    verify_started = time.perf_counter()
    table = Catalog(warehouse).get_table("bench.expire")
    missing = [p for p in referenced_files(table) if not os.path.exists(p)]
    if missing:
        errors.append(f"{name}: {len(missing)} files of retained snapshots are missing, e.g. {missing[0]}")
    got = table.to_arrow().sort_by(KEY)
    ids, rounds = expected_expire_state(build)
    if not (np.array_equal(got.column(KEY).to_numpy(), ids)
            and np.array_equal(got.column("round").to_numpy(), rounds)):
        errors.append(f"{name}: the latest snapshot does not read the expected {len(ids)} rows "
                      f"(read {got.num_rows})")
    return {
        "scenario": name, "buckets": build.buckets, "snapshots_before": snapshots_before,
        "snapshots_after": len(table.snapshot_manager.snapshot_ids()), "data_files_written": build.files_added,
        "data_files_on_disk_before": files_before, "data_files_on_disk_after": count_data_files(table),
        "build_s": round(build.build_s, 1), "expired_snapshots": len(result.expired_snapshots),
        "deleted_data_files": len(result.deleted_data_files), "deleted_manifests": len(result.deleted_manifests),
        "dry_run_s": [round(dry_s, 3)], "expire_s": [round(expire_s, 3)],
        "overhead_s": {"sync": round(sync_s, 1), "verify": round(time.perf_counter() - verify_started, 1)},
    }


def bench_expiration(args: argparse.Namespace, workdir: Path,
                     errors: list[str]) -> tuple[list[dict[str, Any]], list[Hotspot]]:
    """Base, twice the history (same expired window) and twice the files per snapshot.

    Each table is built once; every timed expiry runs on a fresh full copy of it, the scenarios
    interleaved, best of ``--expire-repeat``.
    """
    per_commit = max(1, args.files // args.snapshots)
    target = args.snapshots + 1
    base = new_expire_table(str(workdir / "exp-base"), per_commit)
    grow(base, target, args.compact_every, seed=SEED)
    print(f"  built base: {base.files_added} files, {target} snapshots in {base.build_s:.1f} s", flush=True)
    # twice the history: the base, copied, then as many snapshots again (the expired window is the same)
    hist_wh = str(workdir / "exp-history")
    start = time.perf_counter()
    shutil.copytree(base.warehouse, hist_wh)
    hist = ExpireBuild(Catalog(hist_wh).get_table("bench.expire"), hist_wh, base.buckets, base.keys,
                       base.last_round.copy(), base.rounds, base.files_added)
    hist.build_s = base.build_s + time.perf_counter() - start
    grow(hist, 2 * args.snapshots + 1, args.compact_every, seed=SEED + 1)
    print(f"  built 2x history: {hist.files_added} files in {hist.build_s:.1f} s (incl. the base)", flush=True)
    wide = new_expire_table(str(workdir / "exp-wide"), 2 * per_commit)
    grow(wide, target, args.compact_every, seed=SEED + 2)
    print(f"  built 2x files: {wide.files_added} files in {wide.build_s:.1f} s", flush=True)
    rows: dict[str, dict[str, Any]] = {}
    for rep in range(args.expire_repeat):
        for name, build in (("base", base), ("2x history", hist), ("2x files per snapshot", wide)):
            copy = str(workdir / "exp-copy")
            copy_started = time.perf_counter()
            shutil.copytree(build.warehouse, copy)
            copy_s = time.perf_counter() - copy_started
            row = expire_and_verify(name, build, copy, args.expire, errors)
            shutil.rmtree(copy)
            row["overhead_s"]["copy"] = round(copy_s, 1)
            if name in rows:
                rows[name]["dry_run_s"] += row["dry_run_s"]
                rows[name]["expire_s"] += row["expire_s"]
                rows[name]["overhead_s"] = row["overhead_s"]
            else:
                rows[name] = row
            print(f"  expire {name} #{rep + 1}: {row['expire_s'][0]:.3f} s (dry run {row['dry_run_s'][0]:.3f} s; "
                  f"{row['deleted_data_files']} data files, {row['deleted_manifests']} manifests; "
                  f"untimed {row['overhead_s']})", flush=True)
    for row in rows.values():
        row["best_dry_run_s"] = min(row["dry_run_s"])
        row["best_expire_s"] = min(row["expire_s"])
    hotspots: list[Hotspot] = []
    if args.profile:
        copy = str(workdir / "exp-copy")
        shutil.copytree(base.warehouse, copy)
        table = Catalog(copy).get_table("bench.expire")
        future = datetime.now() + timedelta(days=1)
        os.sync()
        hotspots = profiled(lambda: table.expire_snapshots(retain_min=1, limit=args.expire, older_than=future),
                            args.out / "maintenance_expire.prof")
    return list(rows.values()), hotspots
