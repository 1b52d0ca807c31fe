"""Tables other engines write with properties lake_assets does not implement are refused per
operation, before anything on storage changes; the reads that stay allowed agree with Paimon's.

The tables are written by the real engines (pypaimon 2.1 and pypaimon-rust, both in ``.venv-paimon``),
each once per session when a test first needs it; each test works on its own copy.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, InvalidArgumentError, UnsupportedFeatureError
from lake_assets.table import Table
from tests.interop.paimon import Pypaimon, PypaimonRust, canonical

pytestmark = pytest.mark.interop

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def batch(ids: range, tag: str) -> pa.Table:
    return pa.table({"id": list(ids), "v": [f"{tag}{i}" for i in ids]}, schema=SCHEMA)


# table name -> (primary keys, options) of the pypaimon-written tables
PYPAIMON_TABLES: dict[str, tuple[list[str], dict[str, str]]] = {
    "postpone_avro": (["id"], {"bucket": "-2"}),  # pypaimon writes postpone files as Avro
    "postpone_parquet": (["id"], {"bucket": "-2", "file.format": "parquet"}),
    "orc": (["id"], {"bucket": "2", "file.format": "orc"}),
    "avro_append": ([], {"file.format": "avro"}),
    "append_fixed": ([], {"bucket": "2", "bucket-key": "id"}),
    "dv": (["id"], {"bucket": "2", "deletion-vectors.enabled": "true"}),
    "row_tracking": ([], {"row-tracking.enabled": "true"}),
    "data_evolution": ([], {"row-tracking.enabled": "true", "data-evolution.enabled": "true"}),
    "dynamic": (["id"], {}),  # a PK table without 'bucket': dynamic bucket mode with a HASH index
    "future": (["id"], {"bucket": "2", "paimon.future-feature": "on"}),
    "mixed_formats": (["id"], {"bucket": "2", "file.format": "parquet"}),
}


class EngineTables:
    """The tables, each written by its engine on first use (two commits each; the second updates
    half the keys) into one session warehouse."""

    def __init__(self, pypaimon: Pypaimon, rust: PypaimonRust, root: Path) -> None:
        self.pypaimon, self.rust, self.root = pypaimon, rust, root
        self.built: set[str] = set()

    def build(self, name: str) -> None:
        wh, ident = self.root, f"db.{name}"
        if name in PYPAIMON_TABLES:
            pks, options = PYPAIMON_TABLES[name]
            self.pypaimon.create_table(wh, ident, SCHEMA, primary_keys=pks, options=options)
            self.pypaimon.write(wh, ident, batch(range(30), "a"))
            # one engine writing with a dynamic file.format: the schema says Parquet, a commit adds Avro
            extra = {"file.format": "avro"} if name == "mixed_formats" else None
            self.pypaimon.write(wh, ident, batch(range(15, 45), "b"), options=extra)
        elif name == "branched":
            self.pypaimon.create_table(wh, ident, SCHEMA, primary_keys=["id"], options={"bucket": "1"})
            self.pypaimon.write(wh, ident, batch(range(10), "a"))
            self.pypaimon.create_tag(wh, ident, "t1")
            self.pypaimon.create_branch(wh, ident, "b1", tag="t1")
            self.pypaimon.write(wh, f"{ident}$branch_b1", batch(range(5, 15), "b"))
            self.pypaimon.write(wh, ident, batch(range(20, 25), "c"))
        elif name == "rust_postpone":
            self.rust.sql(
                wh,
                "CREATE SCHEMA IF NOT EXISTS paimon.db",
                "CREATE TABLE paimon.db.rust_postpone (id BIGINT NOT NULL, v STRING, PRIMARY KEY (id) NOT ENFORCED) "
                "WITH ('bucket' = '-2')",
                "INSERT INTO paimon.db.rust_postpone VALUES " + ", ".join(f"({i}, 'a{i}')" for i in range(30)),
                "INSERT INTO paimon.db.rust_postpone VALUES " + ", ".join(f"({i}, 'b{i}')" for i in range(15, 45)),
            )
        elif name == "rust_postpone_fixed":
            self.rust.sql(
                wh,
                "CREATE SCHEMA IF NOT EXISTS paimon.db",
                "CREATE TABLE paimon.db.rust_postpone_fixed (id BIGINT NOT NULL, v STRING, "
                "PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '-2', 'postpone.default-bucket-num' = '3')",
            )
            # rows in real buckets (written through the fixed-bucket writer), then more in bucket-postpone
            self.rust.write_fixed_bucket(wh, ident, batch(range(30), "a"))
            self.rust.write_fixed_bucket(wh, ident, batch(range(15, 45), "b"))
            rows = ", ".join(f"({i}, 'c{i}')" for i in range(40, 50))
            self.rust.sql(wh, f"INSERT INTO paimon.{ident} VALUES {rows}")
        else:
            raise KeyError(name)

    def copy(self, name: str, dest: Path) -> Path:
        """A fresh warehouse at ``dest`` holding a copy of table ``name``."""
        if name not in self.built:
            self.build(name)
            self.built.add(name)
        shutil.copytree(self.root / "db.db" / name, dest / "db.db" / name)
        return dest


@pytest.fixture(scope="session")
def engine_tables(pypaimon: Pypaimon, rust: PypaimonRust, tmp_path_factory) -> EngineTables:
    root = tmp_path_factory.mktemp("engines") / "warehouse"
    root.mkdir()
    return EngineTables(pypaimon, rust, root)


@pytest.fixture
def table_copy(engine_tables: EngineTables, tmp_path: Path) -> Callable[[str], Path]:
    """``table_copy(name)``: a warehouse of this test's own holding a copy of the engine's table."""
    return lambda name: engine_tables.copy(name, tmp_path / "warehouse")


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def open_table(warehouse: Path, name: str) -> tuple[Table, Path]:
    return Catalog(str(warehouse)).get_table(f"db.{name}"), warehouse / "db.db" / name


OPERATIONS: dict[str, Callable[[Table], object]] = {
    "read": lambda t: t.to_arrow(),
    "read_batches": lambda t: list(t.to_batches()),
    "read_changes": lambda t: t.read_changes(1),
    "stream": lambda t: list(t.stream(mode="latest-full").poll(max_snapshots=2)),
    "write": lambda t: t.write_arrow(batch(range(100, 103), "c")),
    "writer": lambda t: t.new_writer("other-user"),
    "compact": lambda t: t.compact(),
    "compact_full": lambda t: t.compact(full=True),
    "expire": lambda t: t.expire_snapshots(retain_min=1, older_than=timedelta(0)),
    "orphans": lambda t: t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True),
    "rollback": lambda t: t.rollback_to(snapshot_id=1),
}


def assert_refused(warehouse: Path, name: str, ops: list[str], match: str) -> None:
    """Each operation raises naming the property, and the table's files are byte-identical after."""
    t, table_dir = open_table(warehouse, name)
    before = tree(table_dir)
    for op in ops:
        with pytest.raises(UnsupportedFeatureError, match=match):
            OPERATIONS[op](t)
        assert tree(table_dir) == before, f"{op} changed {name}"


def assert_reads_like_paimon(warehouse: Path, name: str, pypaimon: Pypaimon) -> pa.Table:
    t, _ = open_table(warehouse, name)
    ours = t.to_arrow()
    theirs = pypaimon.read(warehouse, f"db.{name}")
    assert canonical(ours, ["id"]) == canonical(theirs.select(ours.column_names), ["id"])
    return ours


# ------------------------------------------------------------------------------------- postpone
@pytest.mark.parametrize("name", ["postpone_avro", "postpone_parquet", "rust_postpone"])
def test_postpone_bucket_tables(table_copy, name, pypaimon, rust):
    """Rows in bucket-postpone wait for a Paimon compaction to assign their buckets: Paimon readers
    do not see them (pypaimon skips bucket -2 in batch scans, and so does pypaimon-rust), so a batch
    read returns exactly that (compaction: test_postpone.py; writes: test_postpone_write_interop.py;
    change reads: test_postpone_stream_interop.py)."""
    warehouse = table_copy(name)
    table_dir = warehouse / "db.db" / name
    assert any((table_dir / "bucket-postpone").iterdir())
    ours = assert_reads_like_paimon(warehouse, name, pypaimon)
    assert ours.num_rows == 0
    assert rust.read_rows(warehouse, f"db.{name}") == []
    # expiring and orphan removal keep what the table needs: the postpone files are referenced
    t, _ = open_table(warehouse, name)
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []
    assert canonical(t.to_arrow(), ["id"]) == canonical(pypaimon.read(warehouse, f"db.{name}"), ["id"])


def test_postpone_table_with_real_buckets_reads_like_paimon(table_copy, pypaimon, rust):
    """Rows a Paimon writer put in real buckets are visible and merged per key; the newer rows still in
    bucket-postpone are not (yet): the same rows pypaimon and pypaimon-rust return."""
    warehouse = table_copy("rust_postpone_fixed")
    table_dir = warehouse / "db.db" / "rust_postpone_fixed"
    assert (table_dir / "bucket-postpone").is_dir() and (table_dir / "bucket-0").is_dir()
    ours = assert_reads_like_paimon(warehouse, "rust_postpone_fixed", pypaimon)
    expected = [{"id": i, "v": f"{'a' if i < 15 else 'b'}{i}"} for i in range(45)]
    assert canonical(ours, ["id"]) == expected
    assert sorted(rust.read_rows(warehouse, "db.rust_postpone_fixed"), key=lambda r: r["id"]) == expected


# ---------------------------------------------------------------------------------- file formats
@pytest.mark.parametrize(("name", "fmt"), [("orc", "orc"), ("avro_append", "avro")])
def test_orc_and_avro_tables_read_write_and_compact_like_paimon(table_copy, pypaimon, name, fmt):
    """pypaimon's ORC and Avro files read as pypaimon reads them; ours (a write and a compaction
    on top) read back by pypaimon alike."""
    warehouse = table_copy(name)
    rows = 45 if name == "orc" else 60  # keys merged / an append table keeps every row
    assert assert_reads_like_paimon(warehouse, name, pypaimon).num_rows == rows
    t, table_dir = open_table(warehouse, name)
    t.write_arrow(batch(range(100, 103), "c"))
    t.compact(full=True)
    assert assert_reads_like_paimon(warehouse, name, pypaimon).num_rows == rows + 3
    assert {p.suffix for p in table_dir.rglob("data-*")} == {f".{fmt}"}


def test_table_with_files_of_several_formats_reads_each_as_its_own(table_copy, pypaimon):
    """The schema says Parquet but a commit wrote Avro files (one engine with a dynamic file.format):
    Paimon readers pick each file's format by its extension, and so do we."""
    warehouse = table_copy("mixed_formats")
    table_dir = warehouse / "db.db" / "mixed_formats"
    assert {p.suffix for p in table_dir.rglob("data-*")} == {".parquet", ".avro"}
    t, _ = open_table(warehouse, "mixed_formats")
    for snapshot_id in (1, 2):
        theirs = pypaimon.read(warehouse, "db.mixed_formats", snapshot_id=snapshot_id)
        assert canonical(t.to_arrow(snapshot_id=snapshot_id), ["id"]) == canonical(theirs, ["id"])
    t.compact(full=True)
    assert assert_reads_like_paimon(warehouse, "mixed_formats", pypaimon).num_rows == 45


def test_fixed_bucket_append_table_is_read_written_and_compacted(table_copy, pypaimon):
    """pypaimon's fixed-bucket append table: we append to it and compact it (Paimon's full pick:
    each bucket's small files at once), and pypaimon reads every row, each bucket in write order
    (more against Java 0.9: tests/differential/test_fixed_bucket_append_java.py)."""
    warehouse = table_copy("append_fixed")
    assert assert_reads_like_paimon(warehouse, "append_fixed", pypaimon).num_rows == 60
    t, _ = open_table(warehouse, "append_fixed")
    t.write_arrow(batch(range(100, 103), "c"))
    t.refresh().compact(full=True)
    ours = assert_reads_like_paimon(warehouse, "append_fixed", pypaimon)
    assert ours.num_rows == 63
    assert all(len(s.files) == 1 for s in t.refresh().plan())  # every bucket had 3 small files
    theirs = pypaimon.read(warehouse, "db.append_fixed")
    ours_by_bucket, theirs_by_bucket = _by_bucket(ours), _by_bucket(theirs)
    assert ours_by_bucket == theirs_by_bucket and set(ours_by_bucket) == {0, 1}
    for rows in ours_by_bucket.values():  # a bucket's rows: pypaimon's two writes, then ours
        assert rows == sorted(rows, key=lambda r: ("abc".index(r[1][0]), r[0]))


def _by_bucket(rows: pa.Table) -> dict[int, list[tuple[int, str]]]:
    """(id, v) of ``rows`` per bucket of ``bucket-key = id`` with 2 buckets, in ``rows``' order."""
    from lake_assets.lsm.bucket import assign_buckets
    from lake_assets.spec.data_types import BigIntType

    out: dict[int, list[tuple[int, str]]] = {}
    buckets = assign_buckets([rows.column("id")], [BigIntType()], 2)
    for b, r in zip(buckets.tolist(), zip(rows.column("id").to_pylist(), rows.column("v").to_pylist(), strict=True),
                    strict=True):
        out.setdefault(b, []).append(r)
    return out


# ----------------------------------------------------------------------- deletion vectors, rows ids
def test_deletion_vector_table_reads_and_compacts_like_paimon(table_copy, pypaimon):
    warehouse = table_copy("dv")
    # pypaimon returns no rows (level 0 is invisible until a compaction writes deletion vectors),
    # and so do we
    assert pypaimon.read(warehouse, "db.dv").num_rows == 0
    assert assert_reads_like_paimon(warehouse, "dv", pypaimon).num_rows == 0
    t, _ = open_table(warehouse, "dv")
    t.compact()
    assert assert_reads_like_paimon(warehouse, "dv", pypaimon).num_rows == 45


def test_row_tracking_table_is_read_written_and_compacted(table_copy, pypaimon):
    """Writes assign row ids at commit and compaction keeps each row's ids in its outputs, as Paimon
    HEAD (test_row_tracking_interop.py checks both against pypaimon); pypaimon reads the rows of
    the compacted table as before."""
    warehouse = table_copy("row_tracking")
    ours = assert_reads_like_paimon(warehouse, "row_tracking", pypaimon)
    assert ours.num_rows == 60
    OPERATIONS["write"](open_table(warehouse, "row_tracking")[0])
    assert assert_reads_like_paimon(warehouse, "row_tracking", pypaimon).num_rows == 63
    # pypaimon's two files and ours: a full compaction takes all three
    assert OPERATIONS["compact_full"](open_table(warehouse, "row_tracking")[0]).files_in == 3
    assert assert_reads_like_paimon(warehouse, "row_tracking", pypaimon).num_rows == 63


def test_data_evolution_table_is_read_compacted_and_streamed(table_copy, pypaimon):
    """Compaction merges whole row-id ranges into one file, as Paimon HEAD (test_row_tracking_interop.py
    checks the ids against pypaimon); a change stream's full phase reads the merged rows
    (test_data_evolution_updates.py: its deltas as HEAD's)."""
    warehouse = table_copy("data_evolution")
    assert assert_reads_like_paimon(warehouse, "data_evolution", pypaimon).num_rows == 60
    t = open_table(warehouse, "data_evolution")[0]
    OPERATIONS["write"](t)
    # pypaimon's two files and ours hold contiguous row ids: one unit once 3 files are enough
    t.update_schema().set_option("compaction.min.file-num", "3").commit()
    assert OPERATIONS["compact_full"](t.refresh()).files_in == 3
    assert assert_reads_like_paimon(warehouse, "data_evolution", pypaimon).num_rows == 63
    t = open_table(warehouse, "data_evolution")[0]
    stream = t.stream(mode="latest-full")
    reader = t.change_reader(["id", "_ROW_ID"], stream=stream)
    got = [(r["id"], r["_ROW_ID"]) for b in stream.poll(max_snapshots=5) for s in b.splits
           for r in reader.read(s).to_pylist()]
    assert sorted(got) == sorted((r["id"], r["_ROW_ID"]) for r in t.to_arrow(columns=["id", "_ROW_ID"]).to_pylist())
    assert len(got) == 63


# ------------------------------------------------------------------------------- dynamic bucket
def test_dynamic_bucket_table_reads_compacts_and_is_written(table_copy, pypaimon):
    warehouse = table_copy("dynamic")
    t, table_dir = open_table(warehouse, "dynamic")
    index_files = sorted((table_dir / "index").iterdir())
    assert index_files  # pypaimon's HASH index
    assert_reads_like_paimon(warehouse, "dynamic", pypaimon)
    assert t.compact(full=True).snapshot_id is not None
    assert_reads_like_paimon(warehouse, "dynamic", pypaimon)
    # the snapshots' index manifest names the hash index files: orphan removal keeps them
    removed = t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths
    assert not [p for p in removed if "/index/" in p]
    assert sorted((table_dir / "index").iterdir()) == index_files
    assert_reads_like_paimon(warehouse, "dynamic", pypaimon)
    # we write on top with pypaimon's hash index: its keys are updated in place, new keys added
    t.refresh().write_arrow(batch(range(40, 50), "c"))
    assert_reads_like_paimon(warehouse, "dynamic", pypaimon)
    got = pypaimon.read(warehouse, "db.dynamic")
    assert sorted(got.column("id").to_pylist()) == list(range(50))
    pypaimon.write(warehouse, "db.dynamic", batch(range(45, 55), "d"))  # and pypaimon on top of ours
    assert_reads_like_paimon(warehouse, "dynamic", pypaimon)
    assert sorted(pypaimon.read(warehouse, "db.dynamic").column("id").to_pylist()) == list(range(55))


# ------------------------------------------------------------------------------ unknown options
def test_future_option_is_refused_for_maintenance_not_rewritten(table_copy, pypaimon):
    """A table carrying an option no lake_assets knows (a future Paimon's): we cannot know what it
    means for the files we would write or delete, so no maintenance runs and nothing is rewritten."""
    warehouse = table_copy("future")
    assert pypaimon.read(warehouse, "db.future").num_rows == 45
    assert_refused(warehouse, "future", ["compact", "compact_full", "expire", "orphans", "rollback", "write",
                                         "writer", "read"],
                   r"option paimon\.future-feature = 'on' is not supported")
    # tagging only copies a snapshot: allowed
    t, _ = open_table(warehouse, "future")
    t.create_tag("before-upgrade")
    assert "before-upgrade" in pypaimon.snapshots(warehouse, "db.future")["tags"]


# ------------------------------------------------------------------------------------- branches
def test_branches_keep_their_files_through_expiry_and_orphan_removal(table_copy, pypaimon):
    """A branch's data and manifest files sit in the table's directories but only its own snapshots
    name them: expiry and orphan removal of the main branch keep them (pypaimon 2.1 made the branch
    from tag t1 and wrote to it), and the tag the branch was made from is not deleted."""
    warehouse = table_copy("branched")
    branch_rows = pypaimon.read(warehouse, "db.branched$branch_b1")
    assert branch_rows.num_rows == 15
    t, _ = open_table(warehouse, "branched")
    assert t.branches() == ["b1"]
    assert t.expire_snapshots(retain_min=1, retain_max=1, older_than=timedelta(0)).expired_snapshots == [1]
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True).paths == []
    with pytest.raises(InvalidArgumentError, match=r"branch 'b1' was created from its snapshot 1"):
        t.delete_tag("t1")
    assert canonical(pypaimon.read(warehouse, "db.branched$branch_b1"), ["id"]) == canonical(branch_rows, ["id"])
    # the main branch is still read and written as usual
    assert_reads_like_paimon(warehouse, "branched", pypaimon)
    t.write_arrow(batch(range(30, 32), "d"))
    assert_reads_like_paimon(warehouse, "branched", pypaimon)
