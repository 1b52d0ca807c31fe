"""Tag deletion against a brute-force oracle, over random histories of writes, compactions,
expirations, tags and tag deletions.

The oracle is the rule itself, computed the slow way: the tag's live data files minus every data
file live in any retained snapshot or other tag (one full scan per holder). `delete_tag` reads each
manifest once and stops early; it must delete exactly that set, and every holder must still read
its state afterwards.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lake_assets import Table
from tests.property.history import ModelledHistory, kv_table, write_step

WRITE = write_step(8)
# tags of snapshots that expiry removes and compaction rewrites, so that deleting one has files
# to free and files other tags keep
STEP = st.one_of(
    WRITE, WRITE,
    st.tuples(st.just("compact"), st.booleans()),
    st.tuples(st.just("expire"), st.integers(1, 2)),
    st.tuples(st.just("tag"), st.none()), st.tuples(st.just("tag"), st.none()),
    st.tuples(st.just("delete_tag"), st.integers(0, 5)),
)


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
    with kv_table({"bucket": "1", "num-sorted-run.compaction-trigger": "3", "manifest.merge-min-count": "4"}) as t:
        history = ModelledHistory(t, expire_retain_max=True)
        for i, (kind, arg) in enumerate(steps):
            if kind == "delete_tag" and history.tags:
                name = sorted(history.tags)[arg % len(history.tags)]
                expected = _oracle(t, name)
                result = t.delete_tag(name)
                assert {p.rsplit("/", 1)[-1] for p in result.deleted_data_files} == expected, (i, name)
                del history.tags[name]
            else:
                history.apply(i, kind, arg)
            history.record_and_check(i, kind)
        assert t.remove_orphan_files(older_than=timedelta(0)).paths == []
