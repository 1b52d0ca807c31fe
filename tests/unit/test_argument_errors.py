"""Bad read arguments raise LakeError subclasses naming the problem, never pyarrow's or the
parser's own exceptions."""

from __future__ import annotations

import datetime

import pyarrow as pa
import pytest

from lake_assets import Catalog, LakeError
from lake_assets.errors import InvalidArgumentError
from lake_assets.predicate import FilterError


@pytest.fixture
def t(catalog: Catalog):
    table = catalog.create_table(
        "db.a", pa.schema([("k", pa.int64()), ("v", pa.float64()), ("ts", pa.timestamp("us"))]),
        primary_keys=["k"], options={"bucket": "1"})
    table.write_arrow(pa.table({"k": [1, 2], "v": [1.0, 2.5],
                                "ts": pa.array([datetime.datetime(2020, 1, 1)] * 2, pa.timestamp("us"))}))
    return table


@pytest.mark.parametrize(("flt", "match"), [
    ([("zz", "=", 1)], r"no column 'zz'"),
    ([("k", "=", "abc")], r"'abc' is not a value of column 'k' \(BIGINT\): a str is not a number"),
    ([("ts", "<", "10000-01-01")], r"'10000-01-01' is not a value of column 'ts' \(TIMESTAMP\(6\)\): a str"),
    ([("k", "in", [1, True])], r"True is not a value of column 'k' \(BIGINT\): a bool is not a number"),
    ([("k", "is null", 1)], r"'is null' takes no value"),
    ([("k", "<")], r"'<' needs a value"),
    ([("k", "like", "a%")], r"Bad filter term"),
    ([("k", "in", 5)], r"'in' on 'k' needs a list"),
])
def test_bad_filters(t, flt, match):
    with pytest.raises(FilterError, match=match):
        t.to_arrow(filter=flt)
    with pytest.raises(FilterError, match=match):
        list(t.to_batches(filter=flt))


def test_comparable_filters_still_work(t):
    assert t.to_arrow(filter=[("k", ">", 1.5)]).column("k").to_pylist() == [2]
    assert t.to_arrow(filter=[("v", "in", [2.5])]).num_rows == 1


@pytest.mark.parametrize("ts", [True, "yesterday-ish", "10000-01-01", object()])
def test_bad_time_travel_timestamps(t, ts):
    with pytest.raises(InvalidArgumentError, match="timestamp"):
        t.to_arrow(timestamp=ts)


def test_bad_stream_mode(t):
    with pytest.raises(InvalidArgumentError, match="bogus") as info:
        t.stream(mode="bogus").poll()
    assert isinstance(info.value, LakeError) and isinstance(info.value, ValueError)


def test_bad_maintenance_and_commit_arguments(t):
    with pytest.raises(InvalidArgumentError, match="retain_min must be at least 1"):
        t.expire_snapshots(retain_min=-1)
    with pytest.raises(LakeError):  # InvalidCommitMessageError: checked before anything is done
        t.new_committer("u").commit(["x"], 1)
    assert len(t.snapshots()) == 1
