"""Seeded random operation sequences through both engines on one table, compared after each step.

Writes (upserts and deletes), compactions and snapshot expirations are drawn by hypothesis
(derandomized: the same sequences every run) and applied by lake_assets or Paimon Java at random;
after every step both engines read the latest snapshot and must agree with each other and with a
dict model of the deduplicate merge engine, and list the same snapshots.
"""

from __future__ import annotations

import itertools
import shutil
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog
from lake_assets.errors import MissingDataFileError
from lake_assets.spec.manifest import FileKind
from lake_assets.table import Table
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows, assert_same_table

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False),
                    ("v", pa.int64()), ("op", pa.string())])

ENGINE = st.sampled_from(["lake", "java"])
ROW = st.tuples(st.sampled_from(["+I", "+U", "-D"]), st.integers(0, 11), st.sampled_from(["p1", "p/2=x"]),
                st.integers(-1000, 1000) | st.none())
STEP = st.one_of(
    st.tuples(st.just("write"), ENGINE, st.lists(ROW, min_size=1, max_size=10)),
    st.tuples(st.just("compact"), ENGINE, st.booleans()),
    st.tuples(st.just("expire"), ENGINE, st.integers(1, 3)),
    st.tuples(st.just("rollback"), ENGINE, st.integers(0, 5)),
)

_counter = itertools.count()


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=2, max_size=8), buckets=st.sampled_from([1, 2]))
def test_random_operations_agree(java: PaimonJava, tmp_path: Path, steps: list, buckets: int) -> None:
    wh = str(tmp_path / f"wh{next(_counter)}")
    lake = Catalog(wh)
    lake.create_database("db")
    t = lake.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                          options={"bucket": str(buckets), "rowkind.field": "op"})
    model: dict[tuple[int, str], tuple[int | None, str]] = {}
    history: dict[int, dict] = {}  # snapshot id -> model as of it (for rollbacks)
    for step in steps:
        kind, engine = step[0], step[1]
        if kind == "write":
            batch = pa.table({"k": [r[1] for r in step[2]], "p": [r[2] for r in step[2]],
                              "v": [r[3] for r in step[2]], "op": [r[0] for r in step[2]]}, schema=SCHEMA)
            if engine == "lake":
                t.refresh().write_arrow(batch)
            else:
                java.write(wh, "db.t", batch)
            for op, k, p, v in step[2]:  # within a commit the last row of a key wins
                if op == "-D":
                    model.pop((k, p), None)
                else:
                    model[(k, p)] = (v, op)
        elif kind == "compact":
            if engine == "lake":
                t.refresh().compact(full=step[2])
            elif model or t.refresh().latest_snapshot() is not None:
                java.compact(wh, "db.t", full=step[2])
        elif kind == "expire":
            if engine == "lake":
                t.refresh().expire_snapshots(retain_min=1, retain_max=step[2])
            else:
                java.expire_snapshots(wh, "db.t", options={"snapshot.num-retained.min": "1",
                                                           "snapshot.num-retained.max": str(step[2])})
        else:
            live = [s.id for s in t.refresh().snapshots()]
            if not live:
                continue
            target = live[step[2] % len(live)]
            if engine == "java" and _java_rollback_deletes_upgraded_files(t, target):
                engine = "lake"  # Java 0.9 would break the table: test_java_rollback_over_an_upgrade
            if engine == "lake":
                t.refresh().rollback_to(snapshot_id=target)
            else:
                java.rollback(wh, "db.t", snapshot_id=target)
            model = dict(history[target])
        t = t.refresh()
        latest = t.latest_snapshot()
        if latest is not None:
            history[latest.id] = dict(model)
        ours = t.to_arrow()
        assert_same_table(ours, java.read(wh, "db.t"))
        expected = pa.Table.from_pylist(
            [{"k": k, "p": p, "v": v, "op": op} for (k, p), (v, op) in model.items()], schema=SCHEMA)
        assert_same_rows(ours, expected)
        assert [s["id"] for s in java.snapshots(wh, "db.t")] == [s.id for s in t.snapshots()]
    # Whatever happened, our orphan removal leaves a table Java reads alike.
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert_same_table(t.refresh().to_arrow(), java.read(wh, "db.t"))


def _java_rollback_deletes_upgraded_files(t: Table, target: int) -> bool:
    """Whether a later snapshot re-adds (upgrades: same file, another level) a file ``target`` holds.
    Java 0.9's rollback deletes every file the later snapshots' deltas ADD
    (`SnapshotDeletion.deleteAddedDataFiles`), the upgraded ones too, so its rollback over such a
    compaction leaves ``target`` naming a deleted file; lake_assets' rollback keeps them."""
    scan = t.store.file_store_scan()
    kept = {e.file.file_name for e in scan.live_entries(t.snapshot(target))}
    return any(e.kind == FileKind.ADD and e.file.file_name in kept
               for s in t.snapshots() if s.id > target for e in scan.delta_entries(s))


def test_java_rollback_over_an_upgrade_deletes_the_file_the_target_holds(java: PaimonJava, tmp_path: Path) -> None:
    """Pins Java 0.9's rollback over a compaction that upgraded a file (a lone level-0 file relabelled to
    the top level, as Java's own MergeTreeCompactTask does): Java deletes the file, which the target
    snapshot still names; lake_assets' rollback of a copy keeps it and reads the row."""
    wh = str(tmp_path / "wh")
    lake = Catalog(wh)
    lake.create_database("db")
    t = lake.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                          options={"bucket": "1", "rowkind.field": "op"})
    t.write_arrow(pa.table({"k": [0], "p": ["p1"], "v": [7], "op": ["+I"]}, schema=SCHEMA))
    t.refresh().compact(full=True)
    t = t.refresh()
    assert _java_rollback_deletes_upgraded_files(t, 1)  # the compaction upgraded the file
    copy = tmp_path / "copy"
    shutil.copytree(wh, copy)
    java.rollback(wh, "db.t", snapshot_id=1)
    with pytest.raises(MissingDataFileError):
        t.refresh().to_arrow()
    ours = Catalog(str(copy)).get_table("db.t")
    ours.rollback_to(snapshot_id=1)
    assert ours.refresh().to_arrow().to_pylist() == [{"k": 0, "p": "p1", "v": 7, "op": "+I"}]
    assert_same_table(ours.refresh().to_arrow(), java.read(str(copy), "db.t"))


APPEND_SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.string())])
APPEND_ROW = st.tuples(st.integers(0, 50) | st.none(), st.sampled_from(["a", "b=c"]), st.text(max_size=3) | st.none())
APPEND_STEP = st.one_of(
    st.tuples(st.just("write"), ENGINE, st.lists(APPEND_ROW, min_size=1, max_size=8)),
    st.tuples(st.just("overwrite"), ENGINE, st.sampled_from(["a", "b=c"]), st.lists(APPEND_ROW, max_size=4)),
    st.tuples(st.just("compact"), st.just("lake"), st.booleans()),  # Java compacts append tables in Flink only
    st.tuples(st.just("expire"), ENGINE, st.integers(1, 3)),
)


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(steps=st.lists(APPEND_STEP, min_size=2, max_size=7))
def test_random_append_operations_agree(java: PaimonJava, tmp_path: Path, steps: list) -> None:
    wh = str(tmp_path / f"wh{next(_counter)}")
    lake = Catalog(wh)
    lake.create_database("db")
    t = lake.create_table("db.a", APPEND_SCHEMA, partition_keys=["p"], options={"bucket": "-1"})
    model: list[tuple] = []
    for step in steps:
        kind, engine = step[0], step[1]
        if kind in ("write", "overwrite"):
            rows_ = step[2] if kind == "write" else [(k, step[2], v) for k, _, v in step[3]]
            batch = pa.table({"k": [r[0] for r in rows_], "p": [r[1] for r in rows_], "v": [r[2] for r in rows_]},
                             schema=APPEND_SCHEMA)
            overwrite = {"p": step[2]} if kind == "overwrite" else None
            if engine == "lake":
                t.refresh().write_arrow(batch, overwrite=overwrite or False)
            else:
                java.write(wh, "db.a", batch, overwrite=overwrite)
            if overwrite:
                model = [r for r in model if r[1] != step[2]]
            model += [tuple(r) for r in rows_]
        elif kind == "compact":
            t.refresh().compact(full=step[2])
        elif engine == "lake":
            t.refresh().expire_snapshots(retain_min=1, retain_max=step[2])
        else:
            java.expire_snapshots(wh, "db.a", options={"snapshot.num-retained.min": "1",
                                                       "snapshot.num-retained.max": str(step[2])})
        t = t.refresh()
        ours = t.to_arrow()
        assert_same_table(ours, java.read(wh, "db.a"))
        assert_same_rows(ours, pa.Table.from_pylist([dict(zip(("k", "p", "v"), r, strict=True)) for r in model],
                                                     schema=APPEND_SCHEMA))
        assert [s["id"] for s in java.snapshots(wh, "db.a")] == [s.id for s in t.snapshots()]


COMMIT = st.tuples(ENGINE, st.sampled_from(["job-a", "job-b"]), st.integers(1, 6), st.integers(0, 9))


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(commits=st.lists(COMMIT, min_size=2, max_size=8))
def test_random_exactly_once_commits_agree(java: PaimonJava, tmp_path: Path, commits: list) -> None:
    """Replayed and fresh identifiers from two commit users, committed by either engine through
    its recovery path (Java: filterAndCommit; ours: the committer's check): a commit lands exactly
    when its identifier is above the one in the user's latest snapshot, in both engines."""
    wh = str(tmp_path / f"wh{next(_counter)}")
    lake = Catalog(wh)
    lake.create_database("db")
    t = lake.create_table("db.t", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                          options={"bucket": "1", "rowkind.field": "op"})
    position: dict[str, int] = {}
    model: dict[tuple[int, str], tuple[int | None, str]] = {}
    for engine, user, ident, key in commits:
        batch = pa.table({"k": [key], "p": ["p1"], "v": [ident], "op": ["+I"]}, schema=SCHEMA)
        should_land = ident > position.get(user, 0)
        if engine == "java":
            res = java.write(wh, "db.t", batch, commit_identifier=ident, commit_user=user, filter_committed=True)
            landed = res["committed"] == 1
        else:
            writer = t.refresh().new_writer(user)
            writer.write_arrow(batch)
            messages = writer.prepare_commit()
            writer.close()
            landed = bool(t.refresh().new_committer(user).commit(messages, ident))
        assert landed == should_land, (engine, user, ident, position)
        if landed:
            position[user] = ident
            model[(key, "p1")] = (ident, "+I")
        expected = pa.Table.from_pylist(
            [{"k": k, "p": p, "v": v, "op": op} for (k, p), (v, op) in model.items()], schema=SCHEMA)
        assert_same_rows(t.refresh().to_arrow(), expected)
        assert_same_table(t.refresh().to_arrow(), java.read(wh, "db.t"))
