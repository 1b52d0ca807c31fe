"""Several processes commit to one table at once: appenders, a compactor, an expirer, a tagger and
a reader pinned to an old snapshot. No acknowledged commit is lost, no snapshot id is written twice,
every snapshot reads. Runs on a local disk and on S3 (moto on loopback, conditional PUTs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog

WORKERS = Path(__file__).with_name("concurrency_workers.py")
SECONDS = float(os.environ.get("LAKE_CONCURRENCY_SECONDS", "8"))


def _run_all(warehouse: str, opts: dict, tmp_path: Path) -> dict[str, dict]:
    cat = Catalog(warehouse, **opts)
    cat.create_database("db")
    cat.create_table("db.t", pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())]),
                     primary_keys=["k"], options={"bucket": "2", "rowkind.field": "op", "write-only": "true",
                                                  "commit.max-retries": "50"})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    roles = [("appender", ["1", str(SECONDS)]), ("appender", ["2", str(SECONDS)]),
             ("appender", ["3", str(SECONDS)]), ("compactor", [str(SECONDS)]), ("expirer", [str(SECONDS)]),
             ("tagger", [str(SECONDS)]), ("old_reader", [str(SECONDS)])]
    procs = []
    outs = {}
    for i, (role, args) in enumerate(roles):
        out = str(tmp_path / f"{role}-{i}.json")
        outs[f"{role}-{i}"] = out
        procs.append(subprocess.Popen(
            [sys.executable, str(WORKERS), role, warehouse, json.dumps(opts), *args, out],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in procs:
        _, err = p.communicate(timeout=SECONDS * 10 + 120)
        assert p.returncode == 0, err[-3000:]
    return {k: json.loads(Path(v).read_text()) for k, v in outs.items()}


def _check(warehouse: str, opts: dict, results: dict[str, dict]) -> None:
    t = Catalog(warehouse, **opts).get_table("db.t")
    acked: dict[int, int] = {}
    commits = 0
    for name, r in results.items():
        if name.startswith("appender"):
            acked.update({int(k): v for k, v in r["acked"].items()})
            commits += r["commits"]
    assert commits > 10
    state = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert state == acked  # every acknowledged write is there, nothing else
    snaps = t.snapshots()
    ids = [s.id for s in snaps]
    assert ids == list(range(ids[0], ids[0] + len(ids)))  # contiguous, each id once
    for s in snaps:
        t.to_arrow(snapshot_id=s.id)
    tags = results["tagger-5"]["tags"]
    for name, expected in tags.items():
        assert {str(r["k"]): r["v"] for r in t.to_arrow(tag=name).to_pylist()} == expected
    reader = results["old_reader-6"]
    assert reader["reads"] > 0
    print(f"\nconcurrency: {commits} appends, {results['compactor-3']['compactions']} compactions "
          f"({results['compactor-3']['conflicts']} conflicts), {results['expirer-4']['expired']} snapshots "
          f"expired, {len(tags)} tags, {reader['reads']} reads of pinned snapshot {reader['pinned']}")


def test_processes_commit_concurrently_on_local_disk(tmp_path):
    wh = str(tmp_path / "wh")
    _check(wh, {}, _run_all(wh, {}, tmp_path))


def test_processes_commit_concurrently_on_s3(tmp_path, s3_warehouse):
    wh, opts = s3_warehouse
    _check(wh, opts, _run_all(wh, opts, tmp_path))
