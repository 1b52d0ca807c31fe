"""Random interleavings of writes, compactions, expirations, tags and orphan cleanup.

After every step each retained snapshot and tag reads back the model state it had when it was
committed, and no retained snapshot or tag references a missing file.
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog

WRITE = st.tuples(st.just("write"), st.lists(st.tuples(st.integers(0, 20), st.sampled_from(["+I", "-D"]),
                                                       st.integers(0, 99)), min_size=1, max_size=15))
STEP = st.one_of(
    WRITE,
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 4)),
    st.tuples(st.just("tag"), st.none()),
    st.tuples(st.just("orphans"), st.none()),
)
FUTURE = datetime.now() + timedelta(days=1)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=3, max_size=18))
def test_every_retained_snapshot_and_tag_reads_its_state(steps):
    with tempfile.TemporaryDirectory() as wh:
        cat = Catalog(wh)
        cat.create_database("db")
        t = cat.create_table(
            "db.t", pa.schema([("k", pa.int64()), ("op", pa.string()), ("v", pa.int64())]), primary_keys=["k"],
            options={"bucket": "2", "rowkind.field": "op", "write-only": "true",
                     "num-sorted-run.compaction-trigger": "3"},
        )
        model: dict[int, int] = {}
        states: dict[int, dict[int, int]] = {}
        tags: dict[str, dict[int, int]] = {}
        for i, (kind, arg) in enumerate(steps):
            if kind == "write":
                t.write_arrow(pa.table({"k": [a[0] for a in arg], "op": [a[1] for a in arg],
                                        "v": [a[2] for a in arg]}, schema=t.arrow_schema))
                for k, op, v in arg:
                    if op == "-D":
                        model.pop(k, None)
                    else:
                        model[k] = v
            elif kind == "compact":
                t.compact(full=arg)
            elif kind == "expire":
                t.expire_snapshots(retain_min=arg, older_than=FUTURE)
            elif kind == "tag" and t.latest_snapshot() is not None:
                name = f"t{i}"
                t.create_tag(name)
                tags[name] = states[t.latest_snapshot().id]
            elif kind == "orphans":
                t.remove_orphan_files(older_than=timedelta(0), dry_run=False)
            latest = t.latest_snapshot()
            if latest is not None:
                states.setdefault(latest.id, dict(model))
            for snap in t.snapshots():
                got = {r["k"]: r["v"] for r in t.to_arrow(snapshot_id=snap.id).to_pylist()}
                assert got == states[snap.id], f"snapshot {snap.id} after step {i} {kind}"
            for name, state in tags.items():
                assert {r["k"]: r["v"] for r in t.to_arrow(tag=name).to_pylist()} == state
            # no retained snapshot or tag references a missing file
            scan = t.file_store_scan()
            for snap in [*t.snapshots(), *t.tags().values()]:
                for e in scan.live_entries(snap):
                    assert t.file_io.exists(t.data_file_path(e.partition, e.bucket, e.file)), (snap.id, i, kind)
