"""Random upserts and deletes, committed in random groups, read back equal a dict model at every snapshot."""

from __future__ import annotations

import tempfile

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog

KEYS = st.integers(min_value=0, max_value=15)
PARTS = st.sampled_from(["p1", "p2", "p/3=x"])
OP = st.tuples(st.sampled_from(["+I", "+U", "-D"]), KEYS, PARTS, st.integers(-1000, 1000) | st.none())
BATCH = st.lists(OP, min_size=0, max_size=12)
COMMIT = st.lists(BATCH, min_size=1, max_size=3)  # several writer batches per commit


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commits=st.lists(COMMIT, min_size=1, max_size=6), buckets=st.sampled_from([1, 2, 3]))
def test_pk_table_equals_dict_model_at_every_snapshot(commits, buckets):
    with tempfile.TemporaryDirectory() as wh:
        cat = Catalog(wh)
        cat.create_database("db")
        t = cat.create_table(
            "db.t",
            pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("op", pa.string())]),
            primary_keys=["k", "p"], partition_keys=["p"],
            options={"bucket": str(buckets), "rowkind.field": "op"},
        )
        model: dict[tuple[int, str], int | None] = {}
        expected: dict[int, dict] = {}
        for i, commit in enumerate(commits):
            writer = t.new_writer("prop")
            for batch in commit:
                if batch:
                    writer.write_arrow(pa.table(
                        {"k": [b[1] for b in batch], "p": [b[2] for b in batch],
                         "v": [b[3] for b in batch], "op": [b[0] for b in batch]},
                        schema=t.arrow_schema))
                for op, k, p, v in batch:
                    if op == "-D":
                        model.pop((k, p), None)
                    else:
                        model[(k, p)] = v
                # flush mid-commit sometimes, so one commit holds several level-0 files per bucket
                if len(batch) % 2:
                    writer.flush()
            ids = t.new_committer("prop").commit(writer.prepare_commit(), i + 1)
            if ids:
                expected[ids[-1]] = dict(model)
        for sid, state in expected.items():
            got = t.to_arrow(snapshot_id=sid)
            as_dict = {(r["k"], r["p"]): r["v"] for r in got.to_pylist()}
            assert len(as_dict) == got.num_rows, "a key appears twice"
            assert as_dict == state, f"snapshot {sid}"
