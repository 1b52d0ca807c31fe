"""Public API arguments of the wrong type or value raise `InvalidArgumentError` naming the
argument, before anything happens; Python's silent coercions (a string iterated as letters, any
non-empty string taken as true, a bool taken as an int) never reach the table."""

from __future__ import annotations

import datetime
import hashlib
import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidArgumentError, LakeError, NoSuchTableError

SCHEMA = pa.schema([("k", pa.int64()), ("kk", pa.int64()), ("v", pa.string())])


@pytest.fixture
def t(catalog: Catalog):
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    table.write_arrow(pa.table({"k": [1, 2], "kk": [3, 4], "v": ["a", "b"]}, schema=table.arrow_schema))
    table.write_arrow(pa.table({"k": [3], "kk": [5], "v": ["c"]}, schema=table.arrow_schema))
    return table


def _fingerprint(root: str) -> dict[str, str]:
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def test_string_columns_are_not_split_into_letters(t):
    # "kk" used to read as columns ["k", "k"]; "k" as ["k"], silently the right answer by luck
    for call in (lambda: t.to_arrow(columns="kk"), lambda: t.to_batches(columns="k"),
                 lambda: t.read_changes(0, columns="k"), lambda: t.change_reader(columns="v")):
        with pytest.raises(InvalidArgumentError, match=r"columns must be a list of column names \(e.g. \['"):
            call()


def test_duplicate_columns_are_refused(t):
    with pytest.raises(InvalidArgumentError, match=r"columns names \['k'\] more than once"):
        t.to_arrow(columns=["k", "k"])


@pytest.mark.parametrize("kw", ["primary_keys", "partition_keys"])
def test_create_table_string_keys(catalog: Catalog, kw):
    with pytest.raises(InvalidArgumentError, match=f"{kw} must be a list of column names"):
        catalog.create_table("db.x", pa.schema([("a", pa.int64()), ("b", pa.int64())]),
                             **{kw: "a"}, options={"bucket": "1"} if kw == "primary_keys" else None)
    assert not catalog.table_exists("db.x")


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"options": [("bucket", "1")]}, "options must be a dict"),
    ({"options": {1: "x"}}, "options must have string keys"),
    ({"comment": 5}, "comment must be a string"),
    ({"ignore_if_exists": "no"}, "ignore_if_exists must be True or False"),
    ({"primary_keys": ["a", ""]}, "primary_keys must hold non-empty strings"),
])
def test_create_table_other_arguments(catalog: Catalog, kwargs, match):
    with pytest.raises(InvalidArgumentError, match=match):
        catalog.create_table("db.x", pa.schema([("a", pa.int64())]), **kwargs)
    assert not catalog.table_exists("db.x")


@pytest.mark.parametrize(("call", "match"), [
    (lambda t: t.compact(full="yes"), "full must be True or False, got 'yes'"),
    (lambda t: t.compact(full=1), "full must be True or False"),
    (lambda t: t.compact(max_units=0), "max_units must be at least 1"),
    (lambda t: t.compact(parallelism=2.5), "parallelism must be an integer"),
    (lambda t: t.compact(partitions={"dt": "x"}), "partitions must be a list of dicts"),
    (lambda t: t.expire_snapshots(older_than="yesterday"), "older_than must be a datetime or a timedelta"),
    (lambda t: t.expire_snapshots(older_than=86400), "older_than must be a datetime or a timedelta"),
    (lambda t: t.expire_snapshots(retain_max="1"), "retain_max must be an integer"),
    (lambda t: t.expire_snapshots(retain_max=True), "retain_max must be an integer"),
    (lambda t: t.expire_snapshots(retain_max=1, dry_run="false"), "dry_run must be True or False"),
    (lambda t: t.expire_snapshots(retain_max=1, limit=2**64), "limit must fit in a 64-bit"),
    (lambda t: t.remove_orphan_files(older_than=0, dry_run=False, allow_recent=True),
     "older_than must be a datetime.timedelta"),
    (lambda t: t.remove_orphan_files(older_than=datetime.timedelta(days=-1), dry_run=False, allow_recent=True),
     "older_than must not be negative"),
    (lambda t: t.remove_orphan_files(dry_run="no"), "dry_run must be True or False"),
    (lambda t: t.rollback_to(snapshot_id="1"), "snapshot_id must be an integer"),
    (lambda t: t.rollback_to(snapshot_id=True), "snapshot_id must be an integer"),
    (lambda t: t.rollback_to(), "exactly one of snapshot_id or tag"),
    (lambda t: t.create_tag("t1", snapshot_id=1.0), "snapshot_id must be an integer"),
    (lambda t: t.create_tag("t1", time_retained=3600), "time_retained must be a datetime.timedelta"),
    (lambda t: t.to_arrow(snapshot_id="1"), "snapshot_id must be an integer"),
    (lambda t: t.to_arrow(snapshot_id=1, tag="x"), "at most one of"),
    (lambda t: t.to_arrow(timestamp=2**70), "timestamp must fit"),
    (lambda t: t.to_arrow(tag=5), "tag must be a string"),
    (lambda t: t.snapshot(True), "snapshot_id must be an integer"),
    (lambda t: t.health(small_file_threshold=-1), "small_file_threshold must be at least 0"),
    (lambda t: t.read_changes(1, source="changelogs"), "source must be one of"),
    (lambda t: t.read_changes(1.5), "start must be an integer"),
    (lambda t: t.read_changes(None), "start is required"),
    (lambda t: t.stream(position=-1), "position must be at least 0"),
    (lambda t: t.stream(consumer_id=7), "consumer_id must be a string"),
    (lambda t: t.stream().poll(max_snapshots="2"), "max_snapshots must be an integer"),
    (lambda t: t.stream().poll(max_snapshots=0), "max_snapshots must be at least 1"),
    (lambda t: t.new_writer(None), "commit_user is required"),
    (lambda t: t.new_writer("u", write_only="yes"), "write_only must be True or False"),
    (lambda t: t.new_committer(""), "commit_user must not be empty"),
    (lambda t: t.new_committer("u").commit([], "7"), "commit_identifier must be an integer"),
    (lambda t: t.new_committer("u").commit("msgs", 7), "messages must be a list"),
    (lambda t: t.update_schema().add_column("n", pa.int64(), nullable="no").commit(), "nullable must be True"),
    (lambda t: t.update_schema().set_option("bucket", None).commit(), "must be text, got None"),
    (lambda t: t.update_schema().drop_column(["v"]).commit(), "name must be a string"),
])
def test_bad_arguments_change_nothing(t, call, match):
    before = _fingerprint(t.paths.root)
    with pytest.raises(InvalidArgumentError, match=match) as info:
        call(t)
    assert isinstance(info.value, LakeError)
    assert _fingerprint(t.paths.root) == before


@pytest.mark.parametrize(("call", "match"), [
    (lambda c: c.create_database("db2", ignore_if_exists="no"), "ignore_if_exists must be True or False"),
    (lambda c: c.drop_database("db", cascade="yes"), "cascade must be True or False"),
    (lambda c: c.drop_table("db.t", ignore_if_not_exists=1), "ignore_if_not_exists must be True or False"),
])
def test_catalog_flags(catalog: Catalog, t, call, match):
    before = _fingerprint(catalog.root)
    with pytest.raises(InvalidArgumentError, match=match):
        call(catalog)
    assert _fingerprint(catalog.root) == before


def test_valid_calls_behave_as_before(t):
    assert t.to_arrow(columns=("k",)).column_names == ["k"]
    assert t.to_arrow(columns=[]).num_columns == 0
    assert sorted(t.to_arrow(snapshot_id=1).column("k").to_pylist()) == [1, 2]
    assert [b.num_rows for b in t.to_batches(columns=["v"])]
    assert t.read_changes(1, 2, source="delta").num_rows == 1
    assert t.compact(full=True).snapshot_id is not None
    t.create_tag("t1", time_retained=datetime.timedelta(hours=1))
    assert t.rollback_to(tag="t1").id == t.latest_snapshot().id
    assert t.expire_snapshots(retain_max=1, retain_min=1, older_than=datetime.timedelta(0), dry_run=True) is not None
    assert t.remove_orphan_files(older_than=datetime.timedelta(hours=1)) is not None


# ---------------------------------------------------------------- raw errors found by trying
@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda t: t.to_arrow(filter=[[]]), "FilterError", "empty list"),
    (lambda t: t.to_arrow(filter=pc.field("zz") > 1), "FilterError", "No match for FieldRef"),
    (lambda t: t.plan(filter=[("zz", "=", 1)]), "FilterError", "no column 'zz'"),
    (lambda t: t.read_changes(0, columns=["zz"]), "SchemaError", r"no columns \['zz'\]"),
    (lambda t: t.change_reader(columns=["zz"]), "SchemaError", r"no columns \['zz'\]"),
    (lambda t: t.stream(mode="from-snapshot").poll(), "InvalidArgumentError", "needs snapshot_id"),
    (lambda t: t.expire_snapshots(limit=0), "InvalidArgumentError", "limit must be at least 1"),
    (lambda t: t.expire_snapshots(retain_min=5, retain_max=2), "InvalidArgumentError",
     r"retain_max \(2\) must not be less than retain_min \(5\)"),
    (lambda t: t.expire_snapshots(older_than=datetime.datetime(1, 1, 1)), "InvalidArgumentError", "out of range"),
    # a filter on a non-partition column would compact some files of a bucket only
    (lambda t: t.compact(partitions=[{"kk": 3}]), "InvalidArgumentError", r"\['kk'\] are not partition keys"),
])
def test_raw_errors_are_lake_errors(t, call, error, match):
    before = _fingerprint(t.paths.root)
    with pytest.raises(LakeError, match=match) as info:
        call(t)
    assert type(info.value).__name__ == error
    assert _fingerprint(t.paths.root) == before


def test_a_dropped_table_is_not_an_empty_table(catalog: Catalog, t):
    catalog.drop_table("db.t")
    for call in (t.to_arrow, lambda: list(t.to_batches()), t.compact, t.expire_snapshots, t.health,
                 lambda: t.remove_orphan_files(dry_run=False), lambda: t.create_tag("x")):
        with pytest.raises(NoSuchTableError, match="does not exist"):
            call()


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"mode": "overwrite", "dynamic": "yes"}, "dynamic must be True or False"),
    ({"num_partitions": 0}, "num_partitions must be at least 1"),
    ({"num_partitions": "4"}, "num_partitions must be an integer"),
    ({"storage_options": "key=secret"}, "storage_options must be a dict"),
    ({"mode": "overwrite", "overwrite_partitions": "dt=2024-01-01"}, "overwrite_partitions must be a dict"),
    ({"mode": "overwrite", "partition_overwrite_mode": "dynamik"}, "partition_overwrite_mode must be one of"),
])
def test_spark_write_table_arguments(t, kwargs, match):
    from lake_assets.spark.shuffle import write_table  # pyspark is a dev dependency

    before = _fingerprint(t.paths.root)
    # checked before the DataFrame is touched: no Spark session is needed to see the refusal
    with pytest.raises(InvalidArgumentError, match=match):
        write_table(None, os.path.dirname(os.path.dirname(t.paths.root)), "db.t", **kwargs)  # type: ignore[arg-type]
    assert _fingerprint(t.paths.root) == before


@pytest.mark.parametrize(("warehouse", "match"), [
    (None, "warehouse is required"),
    (5, "warehouse must be a string"),
    ("nosuchproto://x", "Cannot open warehouse 'nosuchproto://x'"),
])
def test_catalog_warehouse(warehouse, match):
    with pytest.raises(InvalidArgumentError, match=match):
        Catalog(warehouse)


def test_empty_struct_column_is_refused_at_create(catalog: Catalog):
    # Parquet cannot store it: the first write used to fail with pyarrow's own error
    from lake_assets.errors import SchemaError

    with pytest.raises(SchemaError, match="a ROW needs at least one"):
        catalog.create_table("db.es", pa.schema([("k", pa.int64()), ("s", pa.struct([]))]))
    assert not catalog.table_exists("db.es")


def test_two_phase_commit_pieces_refuse_junk(t):
    from lake_assets.errors import InvalidCommitMessageError

    before = _fingerprint(t.paths.root)
    with pytest.raises(InvalidCommitMessageError, match="int is not a CommitMessage"):
        t.new_writer("u").abort([5])  # used to fail half-way with AttributeError
    with pytest.raises(InvalidArgumentError, match="split must be a ChangeSplit"):
        t.change_reader().read(t.plan()[0])
    with pytest.raises(InvalidArgumentError, match="commit_identifier must be an integer"):
        t.new_committer("u").is_committed("7")
    assert _fingerprint(t.paths.root) == before


def test_read_changes_range_is_checked_as_java_does(t):
    # Java 0.9: "Starting snapshotId 2 must less than ending snapshotId 1" and "The specified scan
    # snapshotId range [1, 9] is out of available snapshotId range [1, 2]"; we used to return no rows
    # for the first and blame expiry for the second.
    from lake_assets.errors import SnapshotNotFoundError

    with pytest.raises(InvalidArgumentError, match=r"end 1 \(snapshot 1\) is before start 2"):
        t.read_changes(2, 1)
    with pytest.raises(SnapshotNotFoundError, match="up to snapshot 9: the latest is 2"):
        t.read_changes(1, 9)
    assert t.read_changes(1, 1).num_rows == 0
    with pytest.raises(InvalidArgumentError, match="retain_max must be at least 1"):
        t.expire_snapshots(retain_max=0)


def test_stream_arguments_the_mode_would_ignore(t):
    with pytest.raises(InvalidArgumentError, match="snapshot_id needs mode 'from-snapshot'"):
        t.stream(snapshot_id=1)  # latest-full would have ignored it
    with pytest.raises(InvalidArgumentError, match="timestamp needs mode 'from-timestamp'"):
        t.stream(mode="latest", timestamp=0)
    with pytest.raises(InvalidArgumentError, match="mode must be one of"):
        t.stream(mode="bogus", position=1)  # a position used to skip the mode check
    assert t.stream(mode="from-snapshot", snapshot_id=1).poll()
