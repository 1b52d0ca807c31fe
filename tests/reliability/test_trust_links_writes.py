"""Nothing the core writes, renames or deletes goes through a symbolic link out of the table
(`lake_assets.io.table_confinement`): data and changelog files, index files, manifests,
snapshots, tags, consumers, branches and schema files (with their temporary files), on every
write path. Each test links one directory of the table out of it, runs one operation, and checks
that it raises `UnsafePathError` naming the path while nothing appeared or changed behind the
link. Links that stay inside the table keep working, and so does a table whose root itself is a
link (the root is resolved once)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import UnsafePathError
from lake_assets.store.consumers import ConsumerManager
from lake_assets.table import Table

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def _rows(keys: list[int], dt: str = "d1", v: str = "a") -> pa.Table:
    return pa.table({"k": keys, "dt": [dt] * len(keys), "v": [v] * len(keys)}, schema=SCHEMA)


def _table(tmp_path: Path, **options: str) -> Table:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                 options={"bucket": "1", **options})
    table.write_arrow(_rows([1, 2]))
    return table


def _files(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()}


def _link_out(table: Table, tmp_path: Path, relative: str) -> tuple[Path, dict[str, bytes]]:
    """Move the table's directory ``relative`` (made if missing) out of the table and leave a link
    to it in its place; the moved directory and what it holds now."""
    inside = Path(table.paths.root) / relative
    outside = tmp_path / "outside" / f"{table.name}.{relative.replace('/', '_')}"
    outside.parent.mkdir(parents=True, exist_ok=True)
    if inside.exists():
        shutil.move(str(inside), str(outside))
    else:
        outside.mkdir()
        inside.parent.mkdir(parents=True, exist_ok=True)
    inside.symlink_to(outside, target_is_directory=True)
    return outside, _files(outside)


def _refused(act: Callable[[], object], outside: Path, before: dict[str, bytes], relative: str) -> None:
    with pytest.raises(UnsafePathError, match=rf"{relative}.*symbolic link.*outside the table"):
        act()
    assert _files(outside) == before  # nothing made, changed or removed behind the link


def test_data_and_changelog_files_are_not_written_through_a_linked_partition(tmp_path: Path) -> None:
    table = _table(tmp_path, **{"changelog-producer": "input"})
    outside, before = _link_out(table, tmp_path, "dt=d2")
    _refused(lambda: table.write_arrow(_rows([3], dt="d2")), outside, before, "dt=d2")
    assert table.snapshot_manager.latest_id() == 1
    assert table.to_arrow().num_rows == 2


def test_a_linked_bucket_directory_is_refused_and_the_table_still_reads(tmp_path: Path) -> None:
    table = _table(tmp_path)
    outside, before = _link_out(table, tmp_path, "dt=d1/bucket-0")
    # the files already there are read through the link; a new one is not written through it
    assert table.to_arrow().num_rows == 2
    _refused(lambda: table.write_arrow(_rows([3])), outside, before, "bucket-0")


def test_compaction_writes_no_file_through_a_linked_bucket(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.write_arrow(_rows([1, 3], v="b"))
    outside, before = _link_out(table, tmp_path, "dt=d1/bucket-0")
    _refused(lambda: table.compact(full=True), outside, before, "bucket-0")
    assert table.snapshot_manager.latest_id() == 2


def test_postpone_writer_writes_nothing_through_a_linked_partition(tmp_path: Path) -> None:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                 options={"bucket": "-2"})
    outside, before = _link_out(table, tmp_path, "dt=d1")
    _refused(lambda: table.write_arrow(_rows([1])), outside, before, "dt=d1")
    assert table.snapshot_manager.latest_id() is None


def test_manifests_are_not_written_through_a_linked_manifest_directory(tmp_path: Path) -> None:
    table = _table(tmp_path)
    outside, before = _link_out(table, tmp_path, "manifest")
    _refused(lambda: table.write_arrow(_rows([3])), outside, before, "manifest")
    assert table.snapshot_manager.latest_id() == 1


def test_a_snapshot_is_not_put_through_a_linked_snapshot_directory(tmp_path: Path) -> None:
    """The commit's put is refused before its temporary file is made: nothing is committed."""
    table = _table(tmp_path)
    outside, before = _link_out(table, tmp_path, "snapshot")
    _refused(lambda: table.write_arrow(_rows([3])), outside, before, "snapshot")
    assert not list(outside.glob(".*tmp"))


def test_index_files_are_not_written_through_a_linked_index_directory(tmp_path: Path) -> None:
    """A dynamic-bucket table writes its HASH index with each commit; a deletion-vector table
    its vectors: neither through a link."""
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    dynamic = catalog.create_table("db.dyn", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"])
    outside, before = _link_out(dynamic, tmp_path, "index")
    _refused(lambda: dynamic.write_arrow(_rows([1])), outside, before, "index")
    vectors = catalog.create_table("db.dv", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                   options={"bucket": "1", "deletion-vectors.enabled": "true"})
    vectors.write_arrow(_rows([1, 2]))
    outside, before = _link_out(vectors, tmp_path, "index")
    _refused(lambda: vectors.write_arrow(_rows([1], v="b")), outside, before, "index")  # a vector for row 1
    assert vectors.to_arrow().column("v").to_pylist() == ["a", "a"]


def test_tags_are_neither_written_nor_deleted_through_a_linked_tag_directory(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.create_tag("kept")
    outside, before = _link_out(table, tmp_path, "tag")
    _refused(lambda: table.create_tag("new"), outside, before, "tag")
    _refused(lambda: table.delete_tag("kept"), outside, before, "tag")


def test_consumers_are_not_written_through_a_linked_consumer_directory(tmp_path: Path) -> None:
    table = _table(tmp_path)
    outside, before = _link_out(table, tmp_path, "consumer")
    _refused(lambda: ConsumerManager(table.file_io, table.paths).record("reader", 1), outside, before, "consumer")


def test_branches_are_not_made_through_a_linked_branch_directory(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.create_tag("base")
    outside, before = _link_out(table, tmp_path, "branch")
    _refused(lambda: table.create_branch("b1", tag="base"), outside, before, "branch")


def test_schema_changes_and_new_tables_write_no_schema_through_a_link(tmp_path: Path) -> None:
    table = _table(tmp_path)
    outside, before = _link_out(table, tmp_path, "schema")
    _refused(lambda: table.update_schema().add_column("w", pa.int32()).commit(), outside, before, "schema")
    catalog = Catalog(str(tmp_path / "wh"))
    fresh = Path(catalog.table_path("db.fresh"))
    elsewhere = tmp_path / "outside" / "fresh_schema"
    elsewhere.mkdir(parents=True)
    fresh.mkdir()
    (fresh / "schema").symlink_to(elsewhere, target_is_directory=True)
    _refused(lambda: catalog.create_table("db.fresh", SCHEMA), elsewhere, {}, "schema")


def test_rollback_and_fast_forward_write_nothing_through_a_link(tmp_path: Path) -> None:
    table = _table(tmp_path)
    table.create_tag("base")
    table.create_branch("b1", tag="base")
    table.write_arrow(_rows([3]))
    outside, before = _link_out(table, tmp_path, "snapshot")
    _refused(lambda: table.rollback_to(snapshot_id=1), outside, before, "snapshot")
    _refused(lambda: table.fast_forward("b1"), outside, before, "snapshot")


def test_links_inside_the_table_and_a_linked_table_root_keep_working(tmp_path: Path) -> None:
    """A partition directory linked to another directory of the table is written through; a
    table whose own directory is a link elsewhere is written, tagged and expired as any other."""
    table = _table(tmp_path)
    root = Path(table.paths.root)
    (root / "relocated").mkdir()
    (root / "dt=d2").symlink_to(root / "relocated", target_is_directory=True)
    table.write_arrow(_rows([3], dt="d2"))
    assert list((root / "relocated" / "bucket-0").glob("data-*"))
    assert table.to_arrow().num_rows == 3

    elsewhere = tmp_path / "elsewhere" / "t2"
    elsewhere.parent.mkdir()
    catalog = Catalog(str(tmp_path / "wh"))
    elsewhere.mkdir()
    Path(catalog.table_path("db.t2")).symlink_to(elsewhere, target_is_directory=True)
    linked = catalog.create_table("db.t2", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                  options={"bucket": "1"})
    for keys in ([1], [2], [3]):
        linked.write_arrow(_rows(keys))
    linked.create_tag("t")
    linked.expire_snapshots(retain_max=1, retain_min=1)
    assert (elsewhere / "snapshot" / "snapshot-3").is_file() and (elsewhere / "tag" / "tag-t").is_file()
    assert sorted(linked.to_arrow().column("k").to_pylist()) == [1, 2, 3]


def test_a_spark_jobs_executor_deletes_nothing_through_a_link(tmp_path: Path) -> None:
    """A job's deletes spread over executors (`JobContext.delete_files`) open a new FileIO there:
    it is held to the table too, whatever changed since the driver's check."""
    from lake_assets.spark.jobs.context import _delete_batch

    table = _table(tmp_path)
    outside, before = _link_out(table, tmp_path, "dt=d1/bucket-0")
    [name] = [n for n in before if n.startswith("data-")]
    path = f"{table.paths.root}/dt=d1/bucket-0/{name}"
    _refused(lambda: _delete_batch(str(tmp_path / "wh"), (), table.paths.root, [path]), outside, before, "bucket-0")
