"""A branch opened as a table (`lake_assets.store.branch_table`), on branches laid out as Paimon's
``BranchManager.createBranch(name, tag)`` lays them out: the tag's snapshot, tag and schema files
copied into ``branch/branch-<name>`` (tests/differential/test_branch_tables_java.py has Java 0.9
write the branch and read what we read)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog, InvalidIdentifierError, NoSuchTableError, UnsupportedFeatureError
from lake_assets.errors import SnapshotNotFoundError
from lake_assets.paths import TablePaths
from lake_assets.store.branch_table import split_branch


@pytest.fixture
def kv(catalog: Catalog):
    t = catalog.create_table("db.kv", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "1", "changelog-producer": "input"})
    _write(t, [1, 2], 1)  # 1
    _write(t, [2, 3], 2)  # 2
    t.create_tag("base", 2)
    _branch_from_tag(t, "dev", "base")
    _write(t, [4], 3)  # main's 3: not the branch's
    return t


def _write(t, ks, v):
    return t.write_arrow(pa.table({"k": ks, "v": [v] * len(ks)}, schema=t.arrow_schema))


def _branch_from_tag(t, name: str, tag: str) -> str:
    """Paimon 0.9's createBranch(name, tag): the tag, its snapshot and the snapshot's schema copied."""
    branch = f"{t.paths.root}/branch/branch-{name}"
    fio, snap = t.file_io, t.tags()[tag]
    fio.write_bytes(f"{branch}/tag/tag-{tag}", fio.read_bytes(t.paths.tag_file(tag)))
    fio.write_bytes(f"{branch}/snapshot/snapshot-{snap.id}", fio.read_bytes(t.paths.snapshot_file(snap.id)))
    fio.write_bytes(f"{branch}/schema/schema-{snap.schema_id}", fio.read_bytes(t.paths.schema_file(snap.schema_id)))
    return branch


def _rows(t, **kw) -> list[tuple[int, int]]:
    return sorted(zip(*t.to_arrow(**kw).select(["k", "v"]).to_pydict().values(), strict=True))


def _files(t) -> dict[str, bytes]:
    return {s.path: t.file_io.read_bytes(s.path) for s in t.file_io.walk_files(t.paths.root)}


def test_branch_paths_put_metadata_under_the_branch_and_files_in_the_table() -> None:
    main, dev = TablePaths("/wh/db.db/t"), TablePaths("/wh/db.db/t", branch="dev")
    for d in ("schema_dir", "snapshot_dir", "tag_dir", "consumer_dir", "changelog_dir"):
        assert getattr(dev, d) == getattr(main, d).replace("/t/", "/t/branch/branch-dev/")
    for d in ("manifest_dir", "index_dir", "statistics_dir", "data_root"):
        assert getattr(dev, d) == getattr(main, d)
    assert dev.data_file("", 0, "f.parquet") == main.data_file("", 0, "f.parquet")


def test_split_branch() -> None:
    assert split_branch("t") == ("t", None)
    assert split_branch("t$branch_dev") == ("t", "dev")
    assert split_branch("t$branch_main") == ("t", None)  # Paimon's main branch
    for bad in ("t$branch_", "$branch_dev", "t$branch_12", "t$branch_a$branch_b"):
        with pytest.raises(InvalidIdentifierError, match="Invalid branch identifier"):
            split_branch(bad)


def test_the_branch_reads_its_own_history(catalog: Catalog, kv) -> None:
    dev = catalog.get_table("db.kv$branch_dev")
    assert dev.name == "db.kv$branch_dev" and dev.branches() == ["dev"]
    assert [s.id for s in dev.snapshots()] == [2] and list(dev.tags()) == ["base"]
    assert _rows(dev) == [(1, 1), (2, 2), (3, 2)]  # the tag's rows, not main's snapshot 3
    assert _rows(dev, tag="base") == _rows(dev, snapshot_id=2) == _rows(kv, tag="base")
    assert _rows(kv) == [(1, 1), (2, 2), (3, 2), (4, 3)]
    assert _rows(catalog.get_table("db.kv$branch_main")) == _rows(kv)
    with pytest.raises(SnapshotNotFoundError):
        dev.to_arrow(snapshot_id=3)  # main's snapshot 3 is not the branch's
    assert dev.health().num_rows == 1


def test_a_missing_branch_or_table_is_named(catalog: Catalog, kv) -> None:
    with pytest.raises(NoSuchTableError, match=r"Branch 'nope' of db\.kv does not exist"):
        catalog.get_table("db.kv$branch_nope")
    with pytest.raises(NoSuchTableError, match=r"Table db\.gone does not exist \(asked for its branch 'dev'\)"):
        catalog.get_table("db.gone$branch_dev")


def test_a_table_literally_named_like_a_branch_opens_as_itself(catalog: Catalog, kv) -> None:
    odd = catalog.create_table("db.x$branch_y", pa.schema([("a", pa.int64())]))
    odd.write_arrow(pa.table({"a": [7]}))
    assert catalog.get_table("db.x$branch_y").to_arrow().column("a").to_pylist() == [7]


def test_a_tag_of_the_branch_goes_to_its_tag_directory(catalog: Catalog, kv) -> None:
    dev = catalog.get_table("db.kv$branch_dev")
    dev.create_tag("mine")
    assert kv.file_io.exists(f"{kv.paths.root}/branch/branch-dev/tag/tag-mine")
    assert "mine" not in kv.tags() and sorted(dev.tags()) == ["base", "mine"]
    assert _rows(dev, tag="mine") == _rows(dev)


def test_a_consumer_of_the_branch_is_the_branchs(catalog: Catalog, kv) -> None:
    dev = catalog.get_table("db.kv$branch_dev")
    stream = dev.stream(mode="latest-full", consumer_id="c1")
    reader = stream.change_reader()
    got = [r for b in stream.poll(5) for s in b.splits for r in reader.read(s).to_pylist()]
    assert sorted((r["k"], r["v"]) for r in got) == [(1, 1), (2, 2), (3, 2)]
    stream.commit()
    assert kv.file_io.exists(f"{kv.paths.root}/branch/branch-dev/consumer/consumer-c1")
    assert not kv.file_io.list_names(f"{kv.paths.root}/consumer")  # never main's
    assert dev.store.consumer_manager().get("c1").next_snapshot == 3


def test_orphan_removal_of_a_branch_is_refused_naming_it(catalog: Catalog, kv) -> None:
    """Writes and compaction of a branch: tests/unit/test_branch_writes.py; rollback, tag deletion
    and schema changes: tests/differential/test_branch_maintenance_java.py."""
    dev = catalog.get_table("db.kv$branch_dev")
    before = _files(kv)
    for dry_run in (True, False):
        with pytest.raises(UnsupportedFeatureError,
                           match=r"Cannot remove orphan files of db\.kv\$branch_dev: .*run it on the main branch"):
            dev.remove_orphan_files(dry_run=dry_run)
    assert _files(kv) == before


def test_the_spark_sources_branch_option_names_the_branch() -> None:
    from lake_assets.errors import OptionError
    from lake_assets.spark.source_options import with_branch

    assert with_branch("db.t", None) == with_branch("db.t", "main") == "db.t"
    assert with_branch("db.t", "b1") == with_branch("db.t$branch_b1", "b1") == "db.t$branch_b1"
    with pytest.raises(OptionError, match=r"Option 'branch' \('b2'\) contradicts"):
        with_branch("db.t$branch_b1", "b2")


def test_a_table_carrying_a_fallback_branch_refuses_streams_and_change_reads(catalog: Catalog, kv) -> None:
    """Paimon 0.9+'s scan.fallback-branch: batch reads take the partitions the table lacks from
    that branch (tests/differential/test_fallback_branch_java.py); Java's streams ignore it and its
    incremental reads pass unconverted snapshot ids, so streams and change reads are refused."""
    import json

    before = kv.to_arrow()
    schema = json.loads(kv.file_io.read_bytes(kv.paths.schema_file(0)))
    schema["id"] = 1
    schema["options"]["scan.fallback-branch"] = "dev"
    kv.file_io.write_bytes(kv.paths.schema_file(1), json.dumps(schema).encode())
    t = catalog.get_table("db.kv")
    for read in (t.stream, lambda: t.read_changes(1, 2)):
        with pytest.raises(UnsupportedFeatureError, match=r"scan\.fallback-branch = 'dev'"):
            read()
    # no partition keys: one partition, which main has, so the branch adds nothing
    assert t.to_arrow().sort_by("k").equals(before.sort_by("k"))


def test_create_branch_refusals_change_nothing(catalog: Catalog, kv) -> None:
    from lake_assets import AlreadyExistsError, InvalidArgumentError
    from lake_assets.errors import SnapshotNotFoundError as Missing

    before = _files(kv)
    for name, tag, error, message in (
        ("main", None, InvalidArgumentError, "cannot be the main branch"),
        ("12", None, InvalidArgumentError, "cannot be a number"),
        ("dev", None, AlreadyExistsError, "already exists"),
        ("x", "nope", Missing, "no tag 'nope'"),
        ("../x", None, InvalidIdentifierError, "Invalid name"),
    ):
        with pytest.raises(error, match=message):
            kv.create_branch(name, tag)
    kv.expire_snapshots(retain_min=1, retain_max=1)  # the tag's snapshot 2 leaves main
    with pytest.raises(Missing, match=r"snapshot 2 is no longer retained"):
        kv.create_branch("late", "base")
    assert not kv.file_io.exists(f"{kv.paths.root}/branch/branch-late")
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot create a branch of db\.kv\$branch_dev: it is a branch"):
        catalog.get_table("db.kv$branch_dev").create_branch("y")
    with pytest.raises(NoSuchTableError, match="does not exist"):
        kv.delete_branch("nope")
    assert {p for p in _files(kv) if "/branch/" in p} == {p for p in before if "/branch/" in p}


def test_a_tag_deleted_while_a_branch_is_made_from_it_leaves_no_branch(catalog: Catalog, kv, monkeypatch) -> None:
    from lake_assets.errors import SnapshotNotFoundError as Missing
    from lake_assets.store.tags import TagManager

    calls = []

    def vanishing(self, name):  # the read after the copies finds the tag deleted (the first read,
        calls.append(name)      # whose bytes are copied, is not `try_get`'s)
        return None

    monkeypatch.setattr(TagManager, "try_get", vanishing)
    with pytest.raises(Missing, match="was deleted or replaced while the branch was created"):
        kv.create_branch("racy", "base")
    monkeypatch.undo()
    assert calls == ["base"]
    assert not kv.file_io.exists(f"{kv.paths.root}/branch/branch-racy")
    assert kv.branches() == ["dev"]
