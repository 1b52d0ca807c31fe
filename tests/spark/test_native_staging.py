"""What the native write takes from Spark's staging directory (`native_files.staged_files`).

Every path built from the staging listing must be a file Spark's writer made, in the layout the
driver planned (partition copies, then the bucket), and nothing in the directory is followed
out of it: Spark's markers and checksums are skipped, anything else unexpected - a symbolic link
(to a file or a directory), a ``..``-like or stray directory, a file of another name, a bucket
the table does not have - fails the write before anything is committed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lake_assets import Catalog
from lake_assets.errors import UnsafePathError
from lake_assets.spark.native_files import NativeWriteError, StagedFile, move_into_table, staged_files

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

NAME = "part-00003-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0.c000.zstd.parquet"


def _staging(tmp_path: Path) -> Path:
    """A staging directory as Spark leaves it: one file per bucket directory, and its markers."""
    root = tmp_path / "_spark-staging-x"
    bucket = root / "__lake_part_0=2024-01-01" / "__lake_bucket=1"
    bucket.mkdir(parents=True)
    (bucket / NAME).write_bytes(b"PAR1")
    (bucket / f".{NAME}.crc").write_bytes(b"crc")  # Hadoop's checksum file
    (root / "_SUCCESS").write_bytes(b"")
    (root / "_temporary" / "0").mkdir(parents=True)  # an attempt's leftovers: never read
    (root / "_temporary" / "0" / NAME).write_bytes(b"PAR1")
    return root


def test_spark_layout_is_taken_and_its_markers_are_skipped(tmp_path):
    root = _staging(tmp_path)
    plain = "part-00000-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0.c000.parquet"  # codec none: no codec part
    uncompressed = root / "__lake_part_0=2024-01-02" / "__lake_bucket=0" / plain
    uncompressed.parent.mkdir(parents=True)
    uncompressed.write_bytes(b"PAR1")
    assert staged_files(str(root), 1) == [
        StagedFile(str(root / "__lake_part_0=2024-01-01" / "__lake_bucket=1" / NAME), 1, str(root)),
        StagedFile(str(uncompressed), 0, str(root))]


def _plant(root: Path, what: str, outside: Path) -> None:
    bucket = root / "__lake_part_0=2024-01-01" / "__lake_bucket=1"
    outside.mkdir(exist_ok=True)
    (outside / NAME).write_bytes(b"secret")
    if what == "symlinked file":
        (bucket / NAME.replace("00003", "00004")).symlink_to(outside / NAME)
    elif what == "symlinked marker":
        (root / "_SUCCESS").unlink()
        (root / "_SUCCESS").symlink_to(outside / NAME)
    elif what == "symlinked bucket":
        (root / "__lake_part_0=2024-01-01" / "__lake_bucket=2").symlink_to(outside)
    elif what == "symlinked partition":
        (root / "__lake_part_0=2024-01-09").symlink_to(outside)
    elif what == "symlinked staging":
        os.rename(root, root.with_name("moved"))
        root.symlink_to(root.with_name("moved"))
    elif what == "stray directory":
        (root / "__lake_part_0=2024-01-01" / "__lake_bucket=1" / "nested").mkdir()
    elif what == "bucket without partition":
        (root / "__lake_bucket=0").mkdir()
        (root / "__lake_bucket=0" / NAME).write_bytes(b"PAR1")
    elif what == "file beside the buckets":
        (root / "__lake_part_0=2024-01-01" / NAME).write_bytes(b"PAR1")
    elif what == "foreign name":
        (bucket / "evil.parquet").write_bytes(b"PAR1")
    elif what == "dot-dot-like name":
        (bucket / "..parquet").write_bytes(b"PAR1")  # a dot file: skipped, never taken
        (bucket / "part-00009-..-x.parquet").write_bytes(b"PAR1")
    elif what == "fifo":
        os.mkfifo(bucket / NAME.replace("00003", "00005"))


@pytest.mark.parametrize("what", ["symlinked file", "symlinked marker", "symlinked bucket", "symlinked partition",
                                  "symlinked staging", "stray directory", "bucket without partition",
                                  "file beside the buckets", "foreign name", "dot-dot-like name", "fifo"])
def test_anything_else_in_the_staging_directory_fails_the_write(tmp_path, what):
    root = _staging(tmp_path)
    _plant(root, what, tmp_path / "outside")
    with pytest.raises(NativeWriteError, match=r"staging directory|outside a bucket directory"):
        staged_files(str(root), 1)
    assert (tmp_path / "outside" / NAME).read_bytes() == b"secret"


def test_a_bucket_the_table_does_not_have_is_refused_before_a_move(tmp_path):
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    import pyarrow as pa

    table = catalog.create_table("db.t", pa.schema([pa.field("k", pa.int64(), nullable=False)]),
                                 primary_keys=["k"], options={"bucket": "2"})
    root = tmp_path / "_spark-staging-y" / "__lake_bucket=7"
    root.mkdir(parents=True)
    (root / NAME).write_bytes(b"PAR1")
    [staged] = staged_files(str(root.parent), 0)
    moved: list[str] = []
    with pytest.raises(NativeWriteError, match=r"into bucket 7; db\.t has 2 buckets"):
        move_into_table(table.store, [staged], "data-", moved)
    assert moved == [] and (root / NAME).exists()


def _keyed_staging(tmp_path: Path) -> tuple[object, StagedFile, Path]:
    """A table of bucket 2 and one real staged file of its layout (key copy, sequence, value)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lake_assets.formats.file_layout import KEY_PREFIX, SEQUENCE_NUMBER

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    table = catalog.create_table("db.t", pa.schema([pa.field("k", pa.int64(), nullable=False)]),
                                 primary_keys=["k"], options={"bucket": "2"})
    bucket = tmp_path / "_spark-staging-z" / "__lake_bucket=1"
    bucket.mkdir(parents=True)
    pq.write_table(pa.table({KEY_PREFIX + "k": [1, 2], SEQUENCE_NUMBER: [0, 1], "k": [1, 2]}), bucket / NAME)
    [staged] = staged_files(str(bucket.parent), 0)
    return table, staged, tmp_path / "outside.parquet"


def _swap_for_link(path: str, outside: Path) -> None:
    """Replace the staged entry by a symbolic link to a file outside (a valid Parquet file)."""
    os.replace(path, outside)
    os.symlink(outside, path)


def test_a_staged_file_swapped_for_a_link_after_the_scan_is_not_read(tmp_path):
    table, staged, outside = _keyed_staging(tmp_path)
    _swap_for_link(staged.path, outside)  # after the scan, before the footer is read
    moved: list[str] = []
    with pytest.raises(NativeWriteError, match=r"Cannot read Spark's staged file .*symbolic link"):
        move_into_table(table.store, [staged], "data-", moved)  # type: ignore[attr-defined]
    assert os.path.islink(staged.path) and outside.exists()
    assert not any(p.name.endswith(".parquet") for p in Path(table.store.paths.root).rglob("bucket-*/*"))


@pytest.mark.parametrize("swap", ["link", "other file"])
def test_a_staged_file_swapped_between_its_read_and_its_move_is_not_moved(tmp_path, monkeypatch, swap):
    """The entry is read (footer and keys through one descriptor), then swapped before the rename:
    os.rename would move the link itself (or a file the statistics do not describe) into the table."""
    from lake_assets.spark import native_files

    table, staged, outside = _keyed_staging(tmp_path)
    read = native_files.describe

    def describe_then_swap(staged: StagedFile, *args: object) -> object:
        got = read(staged, *args)  # type: ignore[arg-type]
        path = staged.path
        if swap == "link":
            _swap_for_link(path, outside)
        else:
            (tmp_path / "other").write_bytes(b"PAR1 not what was read")  # made while the read one lives:
            os.replace(tmp_path / "other", path)                          # another inode
        return got

    monkeypatch.setattr(native_files, "describe", describe_then_swap)
    moved: list[str] = []
    with pytest.raises(NativeWriteError, match=r"is now (a symbolic link|another file than the one read): not moved"):
        move_into_table(table.store, [staged], "data-", moved)  # type: ignore[attr-defined]
    assert len(moved) == 1 and not os.path.lexists(moved[0])  # nothing landed at the destination
    assert os.path.lexists(staged.path)
    if swap == "link":
        assert os.path.islink(staged.path) and outside.exists()


def test_an_unswapped_staged_file_is_moved_with_its_size(tmp_path):
    table, staged, _ = _keyed_staging(tmp_path)
    size = os.path.getsize(staged.path)
    moved: list[str] = []
    [message] = move_into_table(table.store, [staged], "data-", moved)  # type: ignore[attr-defined]
    assert len(moved) == 1 and os.path.isfile(moved[0]) and not os.path.lexists(staged.path)
    assert [f.file_size for f in message.new_files] == [size] and message.bucket == 1


def _partitioned_staging(tmp_path: Path) -> tuple[object, StagedFile, Path]:
    """A table partitioned by ``p`` and one real staged file of partition p=a, bucket 1."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lake_assets.formats.file_layout import KEY_PREFIX, SEQUENCE_NUMBER

    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("p", pa.string(), nullable=False)])
    table = catalog.create_table("db.t", schema, primary_keys=["k", "p"], partition_keys=["p"],
                                 options={"bucket": "2"})
    bucket = tmp_path / "_spark-staging-z" / "__lake_part_0=a" / "__lake_bucket=1"
    bucket.mkdir(parents=True)
    pq.write_table(pa.table({KEY_PREFIX + "k": [1, 2], SEQUENCE_NUMBER: [0, 1], "k": [1, 2], "p": ["a", "a"]}),
                   bucket / NAME)
    [staged] = staged_files(str(tmp_path / "_spark-staging-z"), 1)
    return table, staged, tmp_path / "outside"


def _files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*"))


@pytest.mark.parametrize("link", ["partition", "bucket"])
def test_a_table_directory_linked_out_of_the_table_gets_nothing(tmp_path, link):
    """A partition or bucket directory of the table that is a symbolic link out of it: the move
    neither makes a directory nor puts a file behind the link (os.makedirs would have followed it)."""
    table, staged, outside = _partitioned_staging(tmp_path)
    outside.mkdir()
    root = Path(table.store.paths.root)  # type: ignore[attr-defined]
    if link == "partition":
        (root / "p=a").symlink_to(outside)
    else:
        (root / "p=a").mkdir()
        (root / "p=a" / "bucket-1").symlink_to(outside)
    moved: list[str] = []
    with pytest.raises(UnsafePathError, match=r"outside the table directory"):
        move_into_table(table.store, [staged], "data-", moved)  # type: ignore[attr-defined]
    assert _files_under(outside) == [] and os.path.isfile(staged.path)


def test_a_table_directory_linked_inside_the_table_is_followed(tmp_path):
    """A link that stays inside the table is no escape: the file lands where it leads."""
    table, staged, _ = _partitioned_staging(tmp_path)
    root = Path(table.store.paths.root)  # type: ignore[attr-defined]
    (root / "elsewhere").mkdir()
    (root / "p=a").symlink_to(root / "elsewhere")
    moved: list[str] = []
    move_into_table(table.store, [staged], "data-", moved)  # type: ignore[attr-defined]
    [landed] = _files_under(root / "elsewhere" / "bucket-1")
    assert landed.name == os.path.basename(moved[0]) and not os.path.lexists(staged.path)


@pytest.mark.parametrize("swap", ["bucket", "partition", "staging"])
def test_a_staging_directory_swapped_for_a_link_after_the_scan_is_not_read(tmp_path, swap):
    """A parent of a staged file swapped for a link after the scan (O_NOFOLLOW on the file alone
    would read, then move, the file the link leads to)."""
    table, staged, outside = _partitioned_staging(tmp_path)
    staged_path = Path(staged.path)
    directory = {"bucket": staged_path.parent, "partition": staged_path.parent.parent,
                 "staging": staged_path.parent.parent.parent}[swap]
    os.replace(directory, outside)  # a valid Parquet file of the same name now lies outside
    os.symlink(outside, directory)
    moved: list[str] = []
    with pytest.raises(NativeWriteError, match=r"Cannot read Spark's staged file .*symbolic link"):
        move_into_table(table.store, [staged], "data-", moved)  # type: ignore[attr-defined]
    assert moved == [] and len([p for p in _files_under(outside) if p.name == NAME]) == 1
    assert not any(p.is_file() for p in _files_under(Path(table.store.paths.root) / "p=a"))  # type: ignore[attr-defined]
