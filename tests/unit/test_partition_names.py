"""Partition directory names of ``partition.legacy-name`` (Paimon 1.0+): the texts Java's cast rules
give (vectors from Paimon's own tests, cited), the types refused, and a table with ``false``
written, read, compacted, expired, marked done and cleaned of orphans in its directories.
pypaimon and pypaimon-rust writing and reading them: tests/interop/test_partition_names_interop.py."""

from __future__ import annotations

import datetime as dt
import decimal
import os
import struct
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, UnsupportedFeatureError
from lake_assets.errors import SchemaError
from lake_assets.ops.mark_done import SUCCESS_FILE_NAME, mark_done_after_commit
from lake_assets.spec.data_types import (
    DateType,
    DecimalType,
    FloatType,
    LocalZonedTimestampType,
    TimestampType,
    TimeType,
    VarBinaryType,
    VarCharType,
)
from lake_assets.spec.partition import partition_path, partition_value_text

DEFAULT = "__DEFAULT_PARTITION__"


def text(value: object, dtype, legacy: bool) -> str:
    return partition_value_text(value, dtype, DEFAULT, legacy_name=legacy)


@pytest.mark.parametrize(("value", "dtype", "legacy", "cast"), [
    # DDLTestBase "Fix partition column generate wrong partition spec" (Paimon #4349): day=18628 / day=2021-01-01
    (dt.date(2021, 1, 1), DateType(), "18628", "2021-01-01"),
    # CastExecutorTest.testDateToString: 19516 -> 2023-06-08
    (dt.date(2023, 6, 8), DateType(), "19516", "2023-06-08"),
    (dt.date(1, 1, 1), DateType(), "-719162", "0001-01-01"),  # DateTimeUtils.int4 pads the year
    # CastExecutorTest.testTimeToString: TIME(2) 36115615 ms -> 10:01:55.61; legacy: Integer.toString
    (dt.time(10, 1, 55, 615000), TimeType(2), "36115615", "10:01:55.61"),
    (dt.time(10, 1, 55, 615000), TimeType(0), "36115615", "10:01:55"),
    (dt.time(0, 0, 0, 5000), TimeType(3), "5", "00:00:00.005"),
    (dt.time(0, 0, 1), TimeType(3), "1000", "00:00:01.0"),  # formatTimestampMillis stops after one zero
    # DateTimeUtils.formatTimestamp: 9 digits stripped of trailing zeros, down to the precision
    (dt.datetime(2024, 1, 5, 1, 2), TimestampType(6), "2024-01-05T01:02", "2024-01-05 01:02:00.000000"),
    (dt.datetime(2024, 1, 5, 1, 2, 3, 400000), TimestampType(3), "2024-01-05T01:02:03.400",
     "2024-01-05 01:02:03.400"),
    (dt.datetime(2024, 1, 5, 1, 2, 3, 120000), TimestampType(1), "2024-01-05T01:02:03.120",
     "2024-01-05 01:02:03.12"),
    (dt.datetime(2024, 1, 5, 1, 2, 3), TimestampType(0), "2024-01-05T01:02:03", "2024-01-05 01:02:03"),
    # CastExecutorTest.testBinaryToString and DDLTestBase: cast('2021' as binary) -> day=2021
    (b"2021", VarBinaryType(10), "2021", "2021"),
    # CastExecutorTest.testNumericToString: 1.23456F and DECIMAL(10, 5) 1.23456 -> 1.23456
    (struct.unpack("<f", struct.pack("<f", 1.23456))[0], FloatType(), "1.23456", "1.23456"),
    (decimal.Decimal("1.23456"), DecimalType(10, 5), "1.23456", "1.23456"),
    (struct.unpack("<f", struct.pack("<f", 1.1))[0], FloatType(), "1.1", "1.1"),  # not the widened 1.100000023841858
])
def test_names_as_java_spells_them(value, dtype, legacy: str, cast: str) -> None:
    assert text(value, dtype, True) == legacy
    assert text(value, dtype, False) == cast


def test_blank_is_java_whitespace_only() -> None:
    """StringUtils.isNullOrWhitespaceOnly (Character.isWhitespace): a no-break space is a value."""
    for legacy in (True, False):
        assert text("\u2003\t", VarCharType(10), legacy) == DEFAULT
        assert text(b" ", VarBinaryType(10), legacy) == DEFAULT
        assert text("\u00a0", VarCharType(10), legacy) == "\u00a0"
        assert text(None, DateType(), legacy) == DEFAULT


def test_names_no_reader_can_reproduce_are_refused() -> None:
    ts = dt.datetime(2024, 1, 5, 1, 2, tzinfo=dt.UTC)
    assert text(ts, LocalZonedTimestampType(3), True) == "2024-01-05T01:02"
    with pytest.raises(UnsupportedFeatureError, match="default time zone"):
        text(ts, LocalZonedTimestampType(3), False)
    with pytest.raises(UnsupportedFeatureError, match="0xeda080 is not valid UTF-8"):
        text(b"\xed\xa0\x80", VarBinaryType(10), False)


SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("d", pa.date32(), nullable=False),
                    pa.field("ts", pa.timestamp("ms"), nullable=False), ("v", pa.string())])
ROWS = pa.table({
    "id": [1, 2, 3, 4],
    "d": [dt.date(2024, 1, 5), dt.date(2024, 1, 5), dt.date(1969, 12, 31), dt.date(2024, 1, 6)],
    "ts": [dt.datetime(2024, 1, 5, 1, 2, 3, 400000), dt.datetime(2024, 1, 5, 1, 2, 3, 400000),
           dt.datetime(1969, 12, 31, 23, 59), dt.datetime(2024, 1, 6)],
    "v": ["a", "b", "c", "d"],
}, schema=SCHEMA)


def _data_dirs(root: str) -> set[str]:
    return {os.path.relpath(r, root) for r, _, files in os.walk(root) if any(f.startswith("data-") for f in files)}


def test_table_with_cast_names_lives_in_its_directories(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id", "d", "ts"], partition_keys=["d", "ts"],
                         options={"bucket": "1", "partition.legacy-name": "false", "snapshot.time-retained": "1 ms",
                                  "partition.end-input-to-done": "true"})
    t.write_arrow(ROWS.slice(0, 3))
    # an engine's batch write marks the partitions it touched done (SuccessFileMarkDoneAction)
    writer = t.new_writer("job-1", write_only=True)
    writer.write_arrow(ROWS.slice(1))
    messages = writer.prepare_commit()
    writer.close()
    t.new_committer("job-1").commit(messages, commit_identifier=1)
    marked = mark_done_after_commit(t.store, messages).marked
    root = t.paths.root
    assert _data_dirs(root) == {
        "d=2024-01-05/ts=2024-01-05 01%3A02%3A03.400/bucket-0",
        "d=1969-12-31/ts=1969-12-31 23%3A59%3A00.000/bucket-0",
        "d=2024-01-06/ts=2024-01-06 00%3A00%3A00.000/bucket-0",
    }
    assert sorted(marked) == sorted(d.removesuffix("/bucket-0") for d in _data_dirs(root))
    assert all(os.path.exists(os.path.join(root, d, SUCCESS_FILE_NAME)) for d in marked)
    assert t.refresh().to_arrow().sort_by("id").equals(ROWS)
    assert t.to_arrow(filter=[("d", "=", dt.date(2024, 1, 5))]).num_rows == 2
    t.compact(full=True)
    t.expire_snapshots(retain_min=1, older_than=dt.datetime.now() + timedelta(days=1))
    assert t.remove_orphan_files(older_than=timedelta(0), dry_run=True).paths == []
    assert t.refresh().to_arrow().sort_by("id").equals(ROWS)
    # the directories would move: the ALTER is refused once there is data
    with pytest.raises(SchemaError, match=r"partition\.legacy-name"):
        t.update_schema().set_option("partition.legacy-name", "true").commit()
    assert t.refresh().to_arrow().num_rows == 4


def test_alter_legacy_name_only_refused_when_names_move(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    strings = cat.create_table("db.s", pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_keys=["p"],
                               options={"bucket": "-1"})
    strings.write_arrow(pa.table({"id": [1], "p": ["x"]}, schema=strings.arrow_schema))
    strings.update_schema().set_option("partition.legacy-name", "false").commit()  # same names either way
    assert strings.refresh().to_arrow().num_rows == 1
    dates = cat.create_table("db.d", pa.schema([("id", pa.int64()), ("d", pa.date32())]), partition_keys=["d"],
                             options={"bucket": "-1"})
    dates.update_schema().set_option("partition.legacy-name", "false").commit()  # no data yet
    dates.write_arrow(pa.table({"id": [1], "d": [dt.date(2024, 1, 5)]}, schema=dates.arrow_schema))
    assert os.path.isdir(os.path.join(dates.paths.root, "d=2024-01-05"))
    with pytest.raises(SchemaError, match="already has data"):
        dates.update_schema().remove_option("partition.legacy-name").commit()


def test_local_zoned_timestamp_partitions_refused_before_anything_is_written(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("ms", tz="UTC"))])
    t = cat.create_table("db.t", schema, partition_keys=["ts"],
                         options={"bucket": "-1", "partition.legacy-name": "false"})
    rows = pa.table({"id": [1], "ts": [dt.datetime(2024, 1, 5, tzinfo=dt.UTC)]}, schema=schema)
    before = sorted(os.listdir(t.paths.root))
    with pytest.raises(UnsupportedFeatureError, match=r"partition key .ts..*default time zone"):
        t.write_arrow(rows)
    with pytest.raises(UnsupportedFeatureError, match=r"partition\.legacy-name = false"):
        t.to_arrow()
    assert sorted(os.listdir(t.paths.root)) == before
    # the legacy names of the same column are UTC date-times: written and read
    legacy = cat.create_table("db.l", schema, partition_keys=["ts"], options={"bucket": "-1"})
    legacy.write_arrow(rows)
    assert os.path.isdir(os.path.join(legacy.paths.root, "ts=2024-01-05T00%3A00"))
    assert legacy.to_arrow().num_rows == 1


def test_partition_path_joins_escaped_levels() -> None:
    path = partition_path(["a/b", "t"], ["x=y", dt.time(1, 2, 3)], [VarCharType(10), TimeType(0)], DEFAULT,
                          legacy_name=False)
    assert path == "a%2Fb=x%3Dy/t=01%3A02%3A03"


def test_binary_partition_value_that_is_not_utf8_is_refused_and_nothing_lands(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("b", pa.binary())])
    t = cat.create_table("db.t", schema, partition_keys=["b"],
                         options={"bucket": "-1", "partition.legacy-name": "false"})
    t.write_arrow(pa.table({"id": [1], "b": [b"2021"]}, schema=schema))
    assert os.path.isdir(os.path.join(t.paths.root, "b=2021"))  # DDLTestBase: cast('2021' as binary) -> day=2021
    before = _tree(t.paths.root)
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot write to db.t: partition column 'b': partition "
                                                      r"value 0xff61 is not valid UTF-8"):
        t.write_arrow(pa.table({"id": [2, 3, 4], "b": [b"2021", b"\xffa", b"2022"]}, schema=schema))
    # refused before a directory is named or a file written: the table directory is as it was
    assert _tree(t.paths.root) == before
    assert [s.id for s in t.refresh().snapshots()] == [1]
    assert t.to_arrow().to_pylist() == [{"id": 1, "b": b"2021"}]


def _tree(root: str) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, n), root) for d, dirs, files in os.walk(root) for n in dirs + files)


@pytest.mark.parametrize("bucket", ["-1", "2"])
def test_a_writer_refuses_the_whole_batch_before_writing_any_of_it(tmp_path: Path, bucket: str) -> None:
    # a write buffer so small that a batch is routed and flushed in slices: the valid partitions'
    # rows would be written (and left to the writer's next commit) before the bad value is met
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("b", pa.binary()), ("pad", pa.string())])
    t = cat.create_table("db.t", schema, partition_keys=["b"], primary_keys=["id", "b"] if bucket == "2" else [],
                         options={"bucket": bucket, "partition.legacy-name": "false", "write-buffer-size": "4 kb"})
    before = _tree(t.paths.root)
    n = 2000
    batch = pa.table({"id": list(range(n)), "b": [b"good"] * (n - 1) + [b"\xed\xa0\x80"], "pad": ["x" * 20] * n},
                     schema=schema)
    writer = t.new_writer("u")
    with pytest.raises(UnsupportedFeatureError, match=r"partition column 'b': partition value 0xeda080"):
        writer.write_arrow(batch)
    assert _tree(t.paths.root) == before
    assert writer.prepare_commit() == []  # nothing of the refused batch is left to commit
    writer.write_arrow(batch.slice(0, 10))
    t.new_committer("u").commit(writer.prepare_commit(), 1)
    writer.close()
    assert t.refresh().to_arrow().num_rows == 10
