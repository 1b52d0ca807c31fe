"""Bounded soak: a streaming writer, compaction and expiry, and a streaming reader run together.

The reader (a consumer, so expiry keeps what it has not read) must see every row exactly once, and
the table must equal the model at the end. LAKE_SOAK_SECONDS makes it longer (see bench/README).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.ops.stream import iter_stream

WORKERS = Path(__file__).with_name("soak_workers.py")
SECONDS = float(os.environ.get("LAKE_SOAK_SECONDS", "10"))


def test_soak_streaming_write_maintenance_and_read(tmp_path):
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    t = cat.create_table("db.events", pa.schema([("id", pa.int64()), ("cp", pa.int64())]), primary_keys=["id"],
                         options={"bucket": "3", "write-only": "true", "num-sorted-run.compaction-trigger": "3"})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    outs = {r: str(tmp_path / f"{r}.json") for r in ("writer", "maintainer")}
    procs = [subprocess.Popen([sys.executable, str(WORKERS), r, wh, str(SECONDS), outs[r]], env=env,
                              stderr=subprocess.PIPE, text=True) for r in outs]
    enum = t.stream(mode="latest-full", consumer_id="soak-reader")
    reader = t.change_reader()
    seen: dict[int, int] = {}
    polls = 0
    deadline = time.time() + SECONDS * 6 + 60

    def drain() -> None:
        nonlocal polls
        for _, changes in iter_stream(enum, reader):
            polls += 1
            for k in changes.column("id").to_pylist():
                seen[k] = seen.get(k, 0) + 1

    while any(p.poll() is None for p in procs) and time.time() < deadline:
        drain()
        time.sleep(0.05)
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err[-3000:]
    drain()
    results = {r: json.loads(Path(o).read_text()) for r, o in outs.items()}
    written = results["writer"]["rows"]
    assert len(seen) == written, f"reader saw {len(seen)} distinct of {written} rows"
    dupes = {k: n for k, n in seen.items() if n != 1}
    assert not dupes, f"rows seen more than once: {list(dupes.items())[:5]}"
    final = t.to_arrow()
    assert final.num_rows == written and sorted(final.column("id").to_pylist()) == sorted(seen)
    print(f"\nsoak: {results['writer']['checkpoints']} checkpoints, {written} rows written and read once, "
          f"{results['maintainer']['compactions']} compactions, {results['maintainer']['expired']} snapshots "
          f"expired, {polls} reader batches")
