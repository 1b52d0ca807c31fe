"""Several processes commit to one table at once: appenders, a two-phase writer, a compactor, an
expirer, an orphan cleaner, taggers (of the latest and of the earliest snapshot, the one expiry goes
for), consumers and a reader pinned to an old snapshot. No acknowledged commit is lost or doubled, no
snapshot id is written twice, every snapshot and tag reads whole, nothing outside the warehouse
changes. Runs on a local disk, on S3 (moto on loopback, conditional PUTs), and on S3 through a
proxy that loses responses of snapshot and tag puts (the clients retry and must recognise their own
objects)."""

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


ALL_ROLES = ("appender:1", "appender:2", "appender:3", "compactor", "expirer", "tagger", "old_reader",
             "two_phase", "orphan_cleaner", "old_tagger")
# fewer processes against the (single-threaded) moto server, so a loaded machine stays in bounds
S3_ROLES = ("appender:1", "appender:2", "compactor", "expirer", "two_phase", "orphan_cleaner", "old_tagger")


def _run_all(warehouse: str, opts: dict, tmp_path: Path, roles: tuple[str, ...] = ALL_ROLES) -> dict[str, dict]:
    cat = Catalog(warehouse, **opts)
    cat.create_database("db")
    cat.create_table("db.t", pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())]),
                     primary_keys=["k"], options={"bucket": "2", "rowkind.field": "op", "write-only": "true",
                                                  "commit.max-retries": "50"})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    tmp_path.mkdir(exist_ok=True)
    procs = []
    outs = {}
    for spec in roles:
        role, _, worker = spec.partition(":")
        args = [worker, str(SECONDS)] if worker else [str(SECONDS)]
        name = spec.replace(":", "-")
        out = str(tmp_path / f"{name}.json")
        outs[name] = out
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
        if name.startswith(("appender", "two_phase")):
            acked.update({int(k): v for k, v in r["acked"].items()})
            commits += r["commits"]
    assert commits > 8
    state = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert state == acked  # every acknowledged write is there, once, and nothing else
    snaps = t.snapshots()
    ids = [s.id for s in snaps]
    assert ids == list(range(ids[0], ids[0] + len(ids)))  # contiguous, each id once
    for s in snaps:
        t.to_arrow(snapshot_id=s.id)  # every file a retained snapshot needs is there
    tags = {**results.get("tagger", {}).get("tags", {}), **results["old_tagger"]["tags"]}
    for name, expected in tags.items():
        # every tag that was acknowledged reads whole, with what it read when it was created
        assert {str(r["k"]): r["v"] for r in t.to_arrow(tag=name).to_pylist()} == expected
    idents = [s.commit_identifier for s in snaps if s.commit_user == "two-phase-writer"]
    assert len(idents) == len(set(idents))  # each checkpoint committed once
    if "old_reader" in results:
        assert results["old_reader"]["reads"] > 0
    summary = {k: v for k, v in results.items() if not k.startswith(("appender", "tagger", "old_tagger"))}
    summary["two_phase"] = {k: v for k, v in results["two_phase"].items() if k != "acked"}
    print(f"\nconcurrency: {commits} commits, {len(tags)} tags "
          f"({results['old_tagger']['refused']} refused on expiring snapshots); {summary}")


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_processes_commit_concurrently_on_local_disk(tmp_path):
    wh = str(tmp_path / "wh")
    outside = tmp_path / "neighbour"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "data-1.parquet").write_bytes(b"not ours")
    (tmp_path / "next-to-warehouse.orc").write_bytes(b"not ours either")
    before = _tree(outside)
    _check(wh, {}, _run_all(wh, {}, tmp_path / "out"))
    assert _tree(outside) == before
    assert (tmp_path / "next-to-warehouse.orc").read_bytes() == b"not ours either"


def _s3_outside(wh: str, opts: dict):
    import s3fs

    fs = s3fs.S3FileSystem(key=opts["key"], secret=opts["secret"], client_kwargs=opts["client_kwargs"])
    bucket = wh.split("://", 1)[1].split("/", 1)[0]
    fs.pipe_file(f"{bucket}/neighbour/data-1.parquet", b"not ours")
    return lambda: fs.cat_file(f"{bucket}/neighbour/data-1.parquet") == b"not ours"


def test_processes_commit_concurrently_on_s3(tmp_path, s3_warehouse):
    wh, opts = s3_warehouse
    untouched = _s3_outside(wh, opts)
    _check(wh, opts, _run_all(wh, opts, tmp_path / "out", S3_ROLES))
    assert untouched()


def test_processes_commit_concurrently_on_s3_losing_responses(tmp_path, faulty_s3):
    from tests.reliability.fault_proxy import Fault

    wh, opts, proxy = faulty_s3
    untouched = _s3_outside(wh, opts)
    # every 4th snapshot put and every 3rd tag put lands, but its answer is lost
    proxy.add(Fault("drop", path=r"/snapshot/snapshot-\d+$", every=4, times=10**6))
    proxy.add(Fault("drop", path=r"/tag/tag-", every=3, times=10**6))
    _check(wh, opts, _run_all(wh, opts, tmp_path / "out", S3_ROLES))
    assert sum(1 for r in proxy.requests if r[2] == "drop") > 3
    assert untouched()
