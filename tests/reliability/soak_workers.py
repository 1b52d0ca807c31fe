"""Processes of the soak test: a checkpointing streaming writer and a maintenance loop."""

from __future__ import annotations

import contextlib
import json
import sys
import time
from datetime import datetime, timedelta

import pyarrow as pa

from lake_assets import Catalog, CommitConflictError


def writer(warehouse: str, seconds: float, out: str) -> None:
    """Streams batches of new keys; each checkpoint commits with identifier = checkpoint id."""
    t = Catalog(warehouse).get_table("db.events")
    deadline = time.time() + seconds
    w = t.new_writer("soak-writer", write_only=True)
    committer = t.new_committer("soak-writer")
    cp = rows = 0
    while time.time() < deadline:
        cp += 1
        keys = list(range(cp * 100, cp * 100 + 50))
        w.write_arrow(pa.table({"id": keys, "cp": [cp] * 50}, schema=t.arrow_schema))
        committer.commit(w.prepare_commit(), cp)
        rows += 50
        time.sleep(0.02)
    with open(out, "w") as fh:
        json.dump({"checkpoints": cp, "rows": rows}, fh)


def maintainer(warehouse: str, seconds: float, out: str) -> None:
    t = Catalog(warehouse).get_table("db.events")
    deadline = time.time() + seconds
    compactions = expired = 0
    while time.time() < deadline:
        with contextlib.suppress(CommitConflictError):
            if t.compact().snapshot_id is not None:
                compactions += 1
        expired += len(t.expire_snapshots(retain_min=2, older_than=datetime.now() + timedelta(days=1))
                       .expired_snapshots)
        time.sleep(0.05)
    with open(out, "w") as fh:
        json.dump({"compactions": compactions, "expired": expired}, fh)


if __name__ == "__main__":
    role, warehouse, seconds, out = sys.argv[1:]
    globals()[role](warehouse, float(seconds), out)
