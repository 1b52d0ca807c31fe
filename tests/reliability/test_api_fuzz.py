"""Bad input fuzz over the public API: whatever arguments a call gets, it either works or raises a
`LakeError` - never a raw TypeError/KeyError/ArrowInvalid - and a call that fails leaves the table
directory byte for byte as it was."""

from __future__ import annotations

import datetime
import hashlib
import math
import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog
from lake_assets.errors import LakeError

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("x", pa.float64())])

# Values that Python would coerce silently or that are out of every range, plus a few valid ones
# (so that some calls get far enough to touch storage).
ODD = st.sampled_from([
    None, "", "k", "x", "p", "kk", "../x", "a b", "2020-01-01", "yesterday", "9" * 30, b"k",
    -1, 0, 1, 2, 3, 2**63, 2**70, -(2**64), True, False, 1.5, math.nan, math.inf, -0.0,
    [], ["k"], ["k", "k"], ["zz"], [None], ("p",), {}, {"p": "a"}, {"p": 5}, {"zz": 1}, [{"p": "a"}], [{"x": 1.0}],
    object(), datetime.datetime(1, 1, 1), datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
    datetime.timedelta(days=-1), datetime.timedelta(0), datetime.timedelta(days=10**8),
    pa.int64(), pa.table({"k": [1]}),
])

OPS = st.sampled_from(["=", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "like", None])
TERM = st.tuples(st.sampled_from(["k", "p", "x", "zz", ""]), OPS, ODD)
FILTERS = st.one_of(
    ODD,
    st.lists(TERM, max_size=3),
    st.lists(st.lists(TERM, max_size=2), max_size=2),
    st.just(pc.field("zz") > 1),
    st.just(pc.field("k") > "a"),
)

WRITES = st.sampled_from([
    None, {"k": [1]}, [1, 2], pa.table({"k": [1]}),
    pa.table({"k": [1], "p": ["a"], "x": [1.0], "z": [1]}),
    pa.table({"k": ["1"], "p": ["a"], "x": [1.0]}),
    pa.table({"k": pa.array([None], pa.int64()), "p": ["a"], "x": [1.0]}),
    pa.table({"k": [1], "p": pa.array([None], pa.string()), "x": [1.0]}),
    pa.Table.from_arrays([pa.array([1]), pa.array([2]), pa.array(["a"]), pa.array([1.0])], names=["k", "k", "p", "x"]),
    pa.table({"k": [[1]], "p": ["a"], "x": [1.0]}),
    pa.table({"k": pa.array([1], pa.uint64()), "p": ["a"], "x": [1.0]}),
    pa.table({"k": [1], "p": ["a"], "x": pa.array(["1.0"])}),
])


def _calls(t, a, b, c):
    """(name, thunk) pairs of public calls fed the drawn arguments."""
    return [
        ("to_arrow.snapshot_id", lambda: t.to_arrow(snapshot_id=a)),
        ("to_arrow.tag", lambda: t.to_arrow(tag=a)),
        ("to_arrow.timestamp", lambda: t.to_arrow(timestamp=a)),
        ("to_arrow.columns", lambda: t.to_arrow(columns=a)),
        ("to_batches", lambda: list(t.to_batches(columns=a, snapshot_id=b))),
        ("plan", lambda: t.plan(snapshot_id=a)),
        ("snapshot", lambda: t.snapshot(a)),
        ("compact", lambda: t.compact(full=a, partitions=b, max_units=c)),
        ("expire", lambda: t.expire_snapshots(retain_min=a, retain_max=b, older_than=c, dry_run=True)),
        ("expire.limit", lambda: t.expire_snapshots(limit=a, dry_run=b)),
        ("create_tag", lambda: t.create_tag(a, snapshot_id=b, time_retained=c)),
        ("delete_tag", lambda: t.delete_tag(a)),
        ("rollback.snapshot", lambda: t.rollback_to(snapshot_id=a)),
        ("rollback.tag", lambda: t.rollback_to(tag=a)),
        ("read_changes", lambda: t.read_changes(a, b, columns=c)),
        ("read_changes.source", lambda: t.read_changes(1, source=a)),
        ("stream", lambda: t.stream(mode=a, snapshot_id=b, position=c).poll()),
        ("stream.consumer", lambda: t.stream(consumer_id=a).poll(max_snapshots=b)),
        ("change_reader", lambda: t.change_reader(columns=a)),
        ("health", lambda: t.health(snapshot_id=a, small_file_threshold=b)),
        ("orphans", lambda: t.remove_orphan_files(older_than=a, dry_run=b, allow_recent=True)),
        ("new_writer", lambda: t.new_writer(a, write_only=b)),
        ("commit", lambda: t.new_committer("fuzz").commit(a, b)),
        ("schema.add", lambda: t.update_schema().add_column(a, b, nullable=c).commit()),
        ("schema.rename", lambda: t.update_schema().rename_column(a, b).commit()),
        ("schema.type", lambda: t.update_schema().update_column_type(a, b).commit()),
        ("schema.option", lambda: t.update_schema().set_option(a, b).commit()),
        ("schema.move", lambda: t.update_schema().move_column(a, b).commit()),
        ("overwrite", lambda: t.write_arrow(pa.table({"k": [1], "p": ["a"], "x": [1.0]}), overwrite=a)),
    ]


def _fingerprint(root: str) -> dict[str, str]:
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                out[os.path.relpath(os.path.join(d, f), root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    catalog = Catalog(str(tmp_path_factory.mktemp("fuzz") / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                             options={"bucket": "2"})
    for i in range(3):
        t.write_arrow(pa.table({"k": [i, i + 1], "p": ["a", "b"], "x": [float(i), math.nan]}, schema=t.arrow_schema))
    return t


def _check(table, name, thunk):
    before = _fingerprint(table.paths.root)
    try:
        thunk()
    except LakeError:
        assert _fingerprint(table.paths.root) == before, f"{name} failed but changed the table"
    finally:
        table.refresh()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data(), ODD, ODD, ODD)
def test_bad_arguments_raise_lake_errors(table, data, a, b, c):
    calls = _calls(table, a, b, c)
    name, thunk = calls[data.draw(st.integers(0, len(calls) - 1), label="call")]
    _check(table, name, thunk)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(FILTERS)
def test_bad_filters_raise_lake_errors(table, flt):
    _check(table, "filter", lambda: table.to_arrow(filter=flt))
    _check(table, "filter.batches", lambda: list(table.to_batches(filter=flt)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(WRITES, st.sampled_from([False, True, {"p": "a"}, {"p": 5}, {"zz": "a"}, ["p"], "yes"]))
def test_bad_writes_raise_lake_errors(table, data, overwrite):
    _check(table, "write_arrow", lambda: table.write_arrow(data, overwrite=overwrite))
    _check(table, "writer", lambda: table.new_writer("fuzz-w").write_arrow(data))
