"""Ambiguous outcomes on a real S3 API: a fault-injecting proxy in front of moto loses responses.

A lost response to a put-if-absent makes the client retry, and the retry gets 412 for the object
its first attempt created. That is not a lost race: the commit landed. Every publisher (snapshot,
tag, schema, table creation) must find out by looking, never report a wrong error, and never
commit the same files twice.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CommitStateUnknownError
from lake_assets.io.file_io import FileIO
from tests.reliability.fault_proxy import Fault

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def _table(wh: str, opts: dict, **options: str):
    cat = Catalog(wh, **opts)
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", **options})


def _rows(t) -> list[tuple]:
    return sorted((r["k"], r["v"]) for r in t.to_arrow().to_pylist())


@pytest.mark.parametrize("action", ["drop", "fail_after"])
def test_put_if_absent_recognises_its_own_object(faulty_s3, action):
    wh, opts, proxy = faulty_s3
    fio, root = FileIO.for_url(wh, **opts)
    proxy.add(Fault(action, path=r"/snapshot-1$"))
    assert fio.try_create(f"{root}/snapshot/snapshot-1", b"mine") is True
    puts = [r for r in proxy.requests if r[0] == "PUT" and r[1].endswith("snapshot-1")]
    assert len(puts) >= 2 and puts[0][2] == action  # the first answer was lost; the retry saw 412
    # and someone else's object is still someone else's
    assert fio.try_create(f"{root}/snapshot/snapshot-1", b"theirs") is False


@pytest.mark.parametrize("action", ["drop", "fail_after"])
def test_lost_response_of_snapshot_put_commits_once(faulty_s3, action):
    wh, opts, proxy = faulty_s3
    t = _table(wh, opts, **{"write-only": "true"})
    t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"]}, schema=SCHEMA))
    proxy.add(Fault(action, path=r"/snapshot/snapshot-2$"))
    sid = t.write_arrow(pa.table({"k": [3], "v": ["c"]}, schema=SCHEMA))
    assert sid == 2
    fresh = Catalog(wh, **opts).get_table("db.t")
    assert [s.id for s in fresh.snapshots()] == [1, 2]  # not committed again as snapshot 3
    assert _rows(fresh) == [(1, "a"), (2, "b"), (3, "c")]
    fresh.compact(full=True)
    assert _rows(fresh) == [(1, "a"), (2, "b"), (3, "c")]


def test_lost_response_of_two_phase_commit_is_exactly_once(faulty_s3):
    wh, opts, proxy = faulty_s3
    t = _table(wh, opts, **{"write-only": "true"})
    w = t.new_writer("job-1")
    w.write_arrow(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    msgs = w.prepare_commit()
    proxy.add(Fault("drop", path=r"/snapshot/snapshot-1$"))
    assert t.new_committer("job-1").commit(msgs, 5) == [1]
    assert t.new_committer("job-1").commit(msgs, 5) == []  # replay: a no-op
    snap = t.latest_snapshot()
    assert (snap.id, snap.commit_user, snap.commit_identifier) == (1, "job-1", 5)


def test_unanswered_snapshot_put_is_state_unknown_and_deletes_nothing(faulty_s3):
    wh, opts, proxy = faulty_s3
    opts = {**opts, "config_kwargs": {"retries": {"max_attempts": 1}}}  # fail fast: no backoff
    t = _table(wh, opts, **{"write-only": "true"})
    t.write_arrow(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    # every attempt of snapshot-2 is answered 500 without reaching the store: the client cannot
    # know whether an earlier attempt is still on its way, so it must not guess
    proxy.add(Fault("fail", method="PUT", path=r"/snapshot/snapshot-2$", times=100))
    w = t.new_writer("job-2")
    w.write_arrow(pa.table({"k": [2], "v": ["b"]}, schema=SCHEMA))
    msgs = w.prepare_commit()
    committer = t.new_committer("job-2")
    with pytest.raises(CommitStateUnknownError, match="snapshot 2"):
        committer.commit(msgs, 1)
    proxy.clear()
    # nothing was deleted: the retry with the same identifier lands the very same files
    assert all(t.file_io.exists(t.store.data_file_path(m.partition, m.bucket, f)) for m in msgs for f in m.new_files)
    assert t.new_committer("job-2").commit(msgs, 1) == [2]
    assert _rows(Catalog(wh, **opts).get_table("db.t")) == [(1, "a"), (2, "b")]


@pytest.mark.parametrize("action", ["drop", "fail_after"])
def test_landed_tag_with_lost_response_succeeds(faulty_s3, action):
    wh, opts, proxy = faulty_s3
    t = _table(wh, opts, **{"write-only": "true"})
    t.write_arrow(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    proxy.add(Fault(action, path=r"/tag/tag-v1$"))
    tag = t.create_tag("v1")  # not AlreadyExistsError: the tag that exists is this one
    assert tag.snapshot.id == 1
    assert Catalog(wh, **opts).get_table("db.t").tags()["v1"].id == 1


@pytest.mark.parametrize("action", ["drop", "fail_after"])
def test_landed_schema_change_with_lost_response_succeeds(faulty_s3, action):
    wh, opts, proxy = faulty_s3
    t = _table(wh, opts)
    proxy.add(Fault(action, path=r"/schema/schema-1$"))
    new = t.update_schema().add_column("note", pa.string()).commit()
    assert new.id == 1 and "note" in new.field_names
    # exactly one new schema: not re-applied as schema-2 (nor a SchemaError "already exists")
    fresh = Catalog(wh, **opts).get_table("db.t")
    assert fresh.schema.id == 1
    assert not fresh.file_io.exists(fresh.paths.schema_file(2))


def test_landed_create_table_with_lost_response_succeeds(faulty_s3):
    wh, opts, proxy = faulty_s3
    cat = Catalog(wh, **opts)
    cat.create_database("db")
    proxy.add(Fault("drop", path=r"/schema/schema-0$"))
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    assert t.schema.id == 0
    assert cat.list_tables("db") == ["t"]


def test_delayed_and_failing_requests_are_retried(faulty_s3):
    wh, opts, proxy = faulty_s3
    t = _table(wh, opts, **{"write-only": "true"})
    proxy.add(Fault("delay", method="PUT", path=r"/manifest/", seconds=0.5))
    proxy.add(Fault("fail", method="GET", path=r"/snapshot/", times=1))
    t.write_arrow(pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"k": [2], "v": ["b"]}, schema=SCHEMA))
    assert _rows(Catalog(wh, **opts).get_table("db.t")) == [(1, "a"), (2, "b")]
