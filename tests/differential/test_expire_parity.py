"""Snapshot expiration keeps the same snapshots in both engines for the same retention options."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

from .helpers import compare_every_snapshot

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])

OPTION_SETS = [
    {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3"},
    {"snapshot.num-retained.min": "2", "snapshot.num-retained.max": "10", "snapshot.time-retained": "0 ms"},
    {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2", "snapshot.expire.limit": "2"},
    {"snapshot.num-retained.min": "5", "snapshot.num-retained.max": "5"},
    {"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1", "consumer.expiration-time": "1 d"},
]


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(f"{k[9:]}={v}" for k, v in o.items()))
def test_same_options_same_survivors(java: PaimonJava, wh: str, lake: Catalog, options: dict[str, str]) -> None:
    # Two identical histories (8 snapshots, a tag on 2, a consumer at 4): Java expires one, we the other.
    for name in ("db.j", "db.l"):
        java.create_table(wh, name, SCHEMA, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
        for k in range(8):
            java.write(wh, name, pa.table({"id": pa.array([k, k + 100], pa.int64()), "v": [str(k), "x"]}))
        java.create_tag(wh, name, "keep", snapshot_id=2)
        java.reset_consumer(wh, name, "reader", 4)
    java.expire_snapshots(wh, "db.j", options=options)
    t = lake.get_table("db.l")
    # Our expire reads the table's options: set the same ones the way a user would.
    update = t.update_schema()
    for k, v in options.items():
        update = update.set_option(k, v)
    update.commit()
    t = t.refresh()
    t.expire_snapshots()
    survivors_java = [s["id"] for s in java.snapshots(wh, "db.j")]
    survivors_ours = [s["id"] for s in java.snapshots(wh, "db.l")]
    assert survivors_ours == survivors_java
    compare_every_snapshot(java, wh, "db.l", t.refresh())
