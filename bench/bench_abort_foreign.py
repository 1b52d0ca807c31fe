"""Abort of another writer's messages (`TableWriter.abort` -> `writer_abort.referenced_messages`) on a table
of many retained snapshots: SNAPSHOTS commits of FILES new files each (an append table, FILES partitions),
then a writer aborts another writer's 4 messages never committed (every retained manifest must be read to
know that) and 4 that the first commit landed. CPU (`time.process_time`) and wall per abort over ROUNDS
(the first with the process's manifest cache cold), of the lake_assets at ROOT; the table is built once
under /tmp and reused by both trees.

    for r in 1 2 3; do for root in /tmp/base /work/wt/x; do
        PYTHONPATH= python bench/bench_abort_foreign.py $root; done; done
"""

from __future__ import annotations

import os
import shutil
import sys
import time

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
SNAPSHOTS = int(os.environ.get("SNAPSHOTS", "500"))
FILES = int(os.environ.get("FILES", "50"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
BUILT = f"/tmp/bench-abort-foreign-{SNAPSHOTS}x{FILES}"
sys.path.insert(0, ROOT)

import pyarrow as pa  # noqa: E402

from lake_assets import Catalog  # noqa: E402

SCHEMA = pa.schema([("p", pa.int64()), ("v", pa.int64())])


def _batch(v: int) -> pa.Table:
    return pa.table({"p": list(range(FILES)), "v": [v] * FILES}, schema=SCHEMA)


def build() -> None:
    if os.path.exists(f"{BUILT}/done"):
        return
    shutil.rmtree(BUILT, ignore_errors=True)
    catalog = Catalog(f"{BUILT}/wh")
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, partition_keys=["p"], options={"bucket": "-1"})
    for v in range(SNAPSHOTS):
        table.write_arrow(_batch(v))
    open(f"{BUILT}/done", "w").close()


def main() -> None:
    build()
    work = f"/tmp/bench-abort-foreign-run-{os.getpid()}"
    shutil.copytree(BUILT, work)
    try:
        table = Catalog(f"{work}/wh").get_table("db.t")
        cpus: list[float] = []
        walls: list[float] = []
        for r in range(ROUNDS):
            other = table.new_writer("other")
            other.write_arrow(_batch(-1 - r))
            pending = other.prepare_commit()[:4]
            landed = table.store.snapshot_manager.snapshot(1)  # its first commit's files: landed
            committed = [m for m in _messages_of(table, landed)][:4]
            with table.new_writer("job") as w:
                c0, w0 = time.process_time(), time.perf_counter()
                kept = w.abort([*pending, *committed])
                cpus.append(time.process_time() - c0)
                walls.append(time.perf_counter() - w0)
            assert len(kept) == len(committed), (len(kept), len(committed))
            other.close()
        print(f"{ROOT}: {SNAPSHOTS} snapshots x {FILES} files: first abort (manifests not cached) CPU "
              f"{cpus[0] * 1e3:.0f} ms, wall {walls[0] * 1e3:.0f} ms; later (cached) best CPU "
              f"{min(cpus[1:] or cpus) * 1e3:.0f} ms, wall {min(walls[1:] or walls) * 1e3:.0f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _messages_of(table: object, snap: object) -> list[object]:
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.spec.manifest import FileKind

    store = table.store  # type: ignore[attr-defined]
    entries = [e for e in store.file_store_scan().delta_entries(snap) if e.kind == FileKind.ADD]
    return [CommitMessage(e.partition, e.bucket, e.total_buckets, (e.file,)) for e in entries]


if __name__ == "__main__":
    main()
