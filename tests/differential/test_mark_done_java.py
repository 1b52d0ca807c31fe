"""Partition mark-done against Paimon Java 0.9's own ``SuccessFileMarkDoneAction`` and
``SuccessFile``: the ``_SUCCESS`` files lake_assets writes are read by Java with the same times and
are byte for byte what Java writes; each side keeps the other's creation time when it marks again.
Enum options parse as Java's ``Options.get`` parses them (case-insensitive, untrimmed), and orphan removal
keeps a file modified exactly at the bound, as Java's strict ``oldEnough``."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import OptionError
from lake_assets.ops.mark_done import SUCCESS_FILE_NAME, SuccessFile, mark_partitions_done
from lake_assets.option_rules import RULES
from lake_assets.option_types import parse_value
from tests.java.oracle import JavaError, PaimonJava

T0 = 1_700_000_000_000


def test_success_files_are_read_and_written_as_java_does(java: PaimonJava, tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    table = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("dt", pa.string()), ("h", pa.int32())]),
                             partition_keys=["dt", "h"], options={"partition.end-input-to-done": "true"})
    root = table.store.paths.root
    ours = "dt=2024-01-01/h=3"
    assert mark_partitions_done(table.store, [ours], now_ms=T0).marked == [ours]
    seen = java.success_file(root, ours)
    assert (seen["creation_time"], seen["modification_time"]) == (T0, T0)
    # Java marking our file again keeps its creation time, and writes the text we write
    again = java.success_file(root, ours, mark=True)
    assert again["creation_time"] == T0 and again["modification_time"] > T0
    assert (Path(root) / ours / SUCCESS_FILE_NAME).read_text() == SuccessFile(T0, again["modification_time"]).to_json()
    # a marker Java creates: we read it, and keep its creation time when we mark it
    theirs = "dt=2024-01-02/h=0"
    created = java.success_file(root, theirs, mark=True)
    assert created["creation_time"] == created["modification_time"]
    text = (Path(root) / theirs / SUCCESS_FILE_NAME).read_text()
    assert text == SuccessFile(created["creation_time"], created["creation_time"]).to_json()
    mark_partitions_done(table.store, [theirs], now_ms=created["creation_time"] + 1000)
    after = java.success_file(root, theirs)
    assert (after["creation_time"], after["modification_time"]) == (created["creation_time"],
                                                                   created["creation_time"] + 1000)


# enum options of Paimon 0.9's CoreOptions (not sequence.field.sort-order, 1.0+; incremental-between-scan-mode
# without diff, 1.0+); texts Java's convertToEnum takes or refuses
ENUM_KEYS = ["scan.mode", "merge-engine", "changelog-producer", "tag.automatic-creation",
             "tag.creation-period", "tag.period-formatter", "incremental-between-scan-mode",
             "partition.expiration-strategy"]
ENUM_TEXTS = ["full", "FULL", " full", "full ", "Latest-Full", "input", "\u0131nput", "INPUT\n", "deduplicate",
              "First-Row", " aggregation", "ascending", "DESCENDING", "process-time", "Watermark", "daily",
              "TWO-HOURS", "two_hours", "with_dashes", "WITHOUT_DASHES", "without-dashes", "delta", "ChangeLog",
              "values-time", "UPDATE-TIME", "update_time", "", "none", "None "]


@pytest.mark.parametrize("key", ENUM_KEYS)
def test_enum_options_parse_as_java(java: PaimonJava, key: str) -> None:
    differ = {}
    for text in ENUM_TEXTS:
        try:
            ours: str | None = str(parse_value(RULES[key], text))
        except OptionError:
            ours = None
        try:
            theirs: str | None = java.option_value(key, text)["value"]
        except JavaError:
            theirs = None
        if ours != theirs:
            differ[text] = (ours, theirs)
    assert differ == {}


def test_orphan_cutoff_is_strict_as_javas(java: PaimonJava, tmp_path: Path) -> None:
    """``OrphanFilesClean.oldEnough`` is ``modificationTime < olderThanMillis``: a stray file
    modified exactly at the bound stays with both engines, one a millisecond older goes."""
    from datetime import timedelta

    from lake_assets.ops.orphans import remove_orphan_files

    wh = tmp_path / "wh"
    cat = Catalog(str(wh))
    cat.create_database("db")
    table = cat.create_table("db.o", pa.schema([("id", pa.int64())]), options={"bucket": "-1"})
    table.write_arrow(pa.table({"id": [1]}))
    bucket = next(Path(table.store.paths.root).glob("bucket-*"))
    bound = T0
    strays = {}
    for name, offset in (("data-at-bound.parquet", 0), ("data-before-bound.parquet", -1)):
        path = bucket / name
        path.write_bytes(b"x")
        os.utime(path, ns=((bound + offset) * 1_000_000,) * 2)
        strays[name] = str(path)
    ours = remove_orphan_files(table.store, older_than=timedelta(days=1), now_ms=bound + 86_400_000).paths
    theirs = java.remove_orphan_files(str(wh), "db.o", older_than_ms=bound, dry_run=True)
    assert sorted(ours) == sorted(theirs) == [strays["data-before-bound.parquet"]]
