"""Tag deletion against a brute-force oracle, over random histories of writes, compactions,
expirations, tags and tag deletions.

The oracle is the rule itself, computed the slow way: the tag's live data files minus every data
file live in any retained snapshot or other tag (one full scan per holder). `delete_tag` reads each
manifest once and stops early; it must delete exactly that set, and every holder must still read
its state afterwards.
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta

import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog, Table

WRITE = st.tuples(st.just("write"), st.lists(st.tuples(st.integers(0, 8), st.sampled_from(["+I", "-D"]),
                                                       st.integers(0, 99)), min_size=1, max_size=15))
# tags of snapshots that expiry removes and compaction rewrites, so that deleting one has files
# to free and files other tags keep
STEP = st.one_of(
    WRITE, WRITE,
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 2)),
    st.tuples(st.just("tag"), st.none()), st.tuples(st.just("tag"), st.none()),
    st.tuples(st.just("delete_tag"), st.integers(0, 5)),
)
FUTURE = datetime.now() + timedelta(days=1)


def _live_names(t: Table, snap) -> set[str]:
    return {e.file.file_name for e in t.store.file_store_scan().live_entries(snap)}


def _oracle(t: Table, name: str) -> set[str]:
    """Names of the data files deleting tag ``name`` must free (see the module doc)."""
    tags = t.tags()
    tagged = tags[name]
    if tagged.id in {s.id for s in t.snapshots()} or any(n != name and s.id == tagged.id for n, s in tags.items()):
        return set()
    others: set[str] = set()
    for snap in [*t.snapshots(), *(s for n, s in tags.items() if n != name)]:
        others |= _live_names(t, snap)
    return _live_names(t, tagged) - others


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=6, max_size=24))
# a tag whose files only a newer tag keeps once compaction replaced them and expiry took the snapshots
@example(steps=[("write", [(1, "+I", 1), (2, "+I", 2)]), ("tag", None), ("write", [(3, "+I", 3)]), ("tag", None),
                ("compact", True), ("write", [(4, "+I", 4)]), ("expire", 1), ("delete_tag", 0), ("delete_tag", 0)])
def test_delete_tag_frees_exactly_what_no_other_holder_keeps(steps):
    with tempfile.TemporaryDirectory() as wh:
        cat = Catalog(wh)
        cat.create_database("db")
        t = cat.create_table(
            "db.t", pa.schema([("k", pa.int64()), ("op", pa.string()), ("v", pa.int64())]), primary_keys=["k"],
            options={"bucket": "1", "rowkind.field": "op", "write-only": "true",
                     "num-sorted-run.compaction-trigger": "3", "manifest.merge-min-count": "4"},
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
                t.expire_snapshots(retain_min=arg, retain_max=arg, older_than=FUTURE)
            elif kind == "tag" and t.latest_snapshot() is not None:
                name = f"t{i}"
                t.create_tag(name)
                tags[name] = states[t.latest_snapshot().id]
            elif kind == "delete_tag" and tags:
                name = sorted(tags)[arg % len(tags)]
                expected = _oracle(t, name)
                result = t.delete_tag(name)
                assert {p.rsplit("/", 1)[-1] for p in result.deleted_data_files} == expected, (i, name)
                del tags[name]
            latest = t.latest_snapshot()
            if latest is not None:
                states.setdefault(latest.id, dict(model))
            for snap in t.snapshots():
                got = {r["k"]: r["v"] for r in t.to_arrow(snapshot_id=snap.id).to_pylist()}
                assert got == states[snap.id], f"snapshot {snap.id} after step {i} {kind}"
            for name, state in tags.items():
                assert {r["k"]: r["v"] for r in t.to_arrow(tag=name).to_pylist()} == state
        assert t.remove_orphan_files(older_than=timedelta(0)).paths == []
