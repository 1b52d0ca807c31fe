"""The ``branch`` option a table's schema may carry (Paimon 0.9+ ``CoreOptions.BRANCH``).

Java 0.9's ``FileStoreTableFactory`` and ``AbstractFileStore.snapshotManager`` read a table whose
schema carries ``branch = b1`` from ``branch/branch-b1``'s snapshots, tags and consumers, with the
schema it was opened with; lake_assets opens a branch by its identifier only, so such a table is
refused for every operation, naming the option, and nothing changes. ``branch = main`` (Java's
``isMainBranch``: ``equals("main")``, untrimmed, case-sensitive) is the main branch.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time

import pyarrow as pa
import pytest

from lake_assets import Catalog, UnsupportedFeatureError


def _table(catalog: Catalog, **options: str):
    t = catalog.create_table("db.kv", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "1", **options})
    t.write_arrow(pa.table({"k": [1, 2], "v": [1, 1]}, schema=t.arrow_schema))
    return t


def _carry(t, value: str) -> None:
    """A schema that carries ``branch`` as another engine's ALTER would leave it."""
    schema = json.loads(t.file_io.read_bytes(t.paths.schema_file(0)))
    schema["id"] = 1
    schema["options"]["branch"] = value
    t.file_io.write_bytes(t.paths.schema_file(1), json.dumps(schema).encode())


def _files(t) -> dict[str, bytes]:
    return {s.path: t.file_io.read_bytes(s.path) for s in t.file_io.walk_files(t.paths.root)}


@pytest.mark.parametrize("value", ["b1", " main", "MAIN"])
def test_a_table_carrying_another_branch_is_refused_for_everything(catalog: Catalog, value: str) -> None:
    _carry(_table(catalog), value)
    t = catalog.get_table("db.kv")
    before = _files(t)
    calls = {
        "read": t.to_arrow,
        "stream from": lambda: t.read_changes(1, 1),
        "write to": lambda: t.write_arrow(pa.table({"k": [3], "v": [3]}, schema=t.arrow_schema)),
        "compact": lambda: t.compact(full=True),
        "expire snapshots of": lambda: t.expire_snapshots(retain_max=1, retain_min=1),
        "remove orphan files of": lambda: t.remove_orphan_files(dry_run=True),
        "tag": lambda: t.create_tag("x", 1),
        "roll back": lambda: t.rollback_to(snapshot_id=1),
    }
    for verb, call in calls.items():
        with pytest.raises(UnsupportedFeatureError, match=rf"Cannot {verb} db\.kv: .*option branch = {value!r}"):
            call()
    assert _files(t) == before


def test_branch_main_is_the_main_branch(catalog: Catalog) -> None:
    t = _table(catalog, branch="main")
    t.write_arrow(pa.table({"k": [3], "v": [2]}, schema=t.arrow_schema))
    assert sorted(t.to_arrow()["k"].to_pylist()) == [1, 2, 3]


def test_creating_or_altering_a_table_onto_another_branch_is_refused(catalog: Catalog) -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"branch='b1' is not supported"):
        _table(catalog, branch="b1")
    t = _table(catalog)
    with pytest.raises(UnsupportedFeatureError, match=r"branch='b1' is not supported"):
        t.update_schema().set_option("branch", "b1").commit()
    assert t.schema.id == 0


# ---------------------------------------------------------------- writes and compaction on a branch
# (tests/differential/test_branch_writes_java.py has Java 0.9 read what these write, and write after them)

def _kv(catalog: Catalog, name: str = "db.t", **options: str):
    t = catalog.create_table(name, pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "2", **options})
    _put(t, [1, 2, 3], 1)  # 1
    t.create_tag("base", 1)
    t.create_branch("dev", "base")
    return t


def _put(t, ks, v):
    return t.write_arrow(pa.table({"k": ks, "v": [v] * len(ks)}, schema=t.arrow_schema))


def _rows(t, **kw) -> list[tuple[int, int]]:
    return sorted(zip(*t.to_arrow(**kw).select(["k", "v"]).to_pydict().values(), strict=True))


def test_a_write_and_a_compaction_of_a_branch_commit_to_the_branch_only(catalog: Catalog) -> None:
    main = _kv(catalog)
    dev = catalog.get_table("db.t$branch_dev")
    main_snapshots = sorted(main.file_io.list_names(main.paths.snapshot_dir))
    _put(dev, [2, 4], 2)
    _put(main, [9], 9)  # main moves on meanwhile: the branch does not see it
    _put(dev, [3], 3)
    dev.compact(full=True)
    assert _rows(dev) == [(1, 1), (2, 2), (3, 3), (4, 2)]
    assert _rows(main) == [(1, 1), (2, 1), (3, 1), (9, 9)]
    assert [s.id for s in dev.snapshots()] == [1, 2, 3, 4]
    assert dev.latest_snapshot().commit_kind == "COMPACT"
    # the branch's snapshots are its own; its data files and manifests are the table's
    assert sorted(main.file_io.list_names(main.paths.snapshot_dir)) == [*main_snapshots, "snapshot-2"]
    branch_files = {f.path[len(dev.paths.meta_root) + 1:] for f in main.file_io.walk_files(dev.paths.meta_root)}
    assert {p.split("/")[0] for p in branch_files} == {"schema", "snapshot", "tag"}
    assert _rows(dev, snapshot_id=2) == [(1, 1), (2, 2), (3, 1), (4, 2)]


def test_a_writer_of_a_branch_commits_twice(catalog: Catalog) -> None:
    main = _kv(catalog)
    dev = catalog.get_table("db.t$branch_dev")
    w, c = dev.new_writer("u"), dev.new_committer("u")
    for i in (1, 2):
        w.write_arrow(pa.table({"k": [4 + i], "v": [i]}, schema=dev.arrow_schema))
        c.commit(w.prepare_commit(), i)
    assert _rows(dev) == [(1, 1), (2, 1), (3, 1), (5, 1), (6, 2)]
    assert [s.id for s in dev.snapshots()] == [1, 2, 3] and [s.id for s in main.snapshots()] == [1]


@pytest.mark.parametrize("options, named", [
    ({"tag.automatic-creation": "process-time"}, "tag.automatic-creation"),
    ({"tag.default-time-retained": "1 d"}, "tag.default-time-retained"),
])
def test_what_a_branch_write_does_not_do_is_refused_naming_it(catalog: Catalog, options, named) -> None:
    main = _kv(catalog, **options)
    dev = catalog.get_table("db.t$branch_dev")
    before = {f.path for f in main.file_io.walk_files(main.paths.root)}
    for call in (lambda: _put(dev, [7], 7), lambda: dev.compact(full=True)):
        with pytest.raises(UnsupportedFeatureError, match=rf"db\.t\$branch_dev: .*{named}"):
            call()
    assert {f.path for f in main.file_io.walk_files(main.paths.root)} == before


def test_main_expiry_and_orphan_removal_keep_what_a_branch_wrote(catalog: Catalog) -> None:
    main = _kv(catalog, **{"snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    dev = catalog.get_table("db.t$branch_dev")
    _put(dev, [2, 4], 2)
    dev.compact(full=True)
    for v in (5, 6):
        _put(main, [1, 2, 3], v)
    main.compact(full=True)
    # main's commits expired its snapshots 1-3 (1 stays tagged), as Paimon's committer does
    assert [s.id for s in main.snapshots()] == [4]
    assert main.expire_snapshots().expired_snapshots == []
    orphan = f"{main.paths.root}/bucket-0/data-orphan.parquet"
    main.file_io.write_bytes(orphan, b"x")
    os.utime(orphan, (time.time() - 60, time.time() - 60))  # older than the bound below (a local warehouse)
    removed = main.remove_orphan_files(older_than=dt.timedelta(0), dry_run=False, allow_recent=True)
    assert [p.rsplit("/", 1)[1] for p in removed.paths] == ["data-orphan.parquet"]
    assert _rows(dev) == [(1, 1), (2, 2), (3, 1), (4, 2)]
    assert _rows(main) == [(1, 6), (2, 6), (3, 6)]


def test_an_append_table_branch_is_written(catalog: Catalog) -> None:
    main = catalog.create_table("db.a", pa.schema([("k", pa.int64()), ("v", pa.int64())]),
                                options={"bucket": "1", "bucket-key": "k"})
    _put(main, [1], 1)
    main.create_branch("dev")  # empty: the latest schema only
    dev = catalog.get_table("db.a$branch_dev")
    for v in (2, 3):
        _put(dev, [v], v)
    dev.compact(full=True)  # allowed; what it does is main's (a fixed-bucket append table's compaction)
    assert _rows(dev) == [(2, 2), (3, 3)] and _rows(main) == [(1, 1)]
    assert [s.id for s in dev.snapshots()][:2] == [1, 2] and [s.id for s in main.snapshots()] == [1]

