"""Spliced files of deletion-vector compactions (`ops.compact.splice_rewrite`) with Paimon Java 0.9.

Our DV compaction writes a level-0 file whose merge keeps every row but changes value columns as
the old file's unchanged column chunks plus the changed columns encoded alone, under a footer we
write. An aggregation and a partial-update table go through several rounds of ours (each splicing),
then Java reads them and agrees (rows and vectors), writes and compacts on top of them (reading
every spliced file), and we read Java's files and splice again after it. A level-0 file Java wrote
(``write-only``) is not spliced when we compact it (its footer is not our writer's): written whole."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.compact import rewrite
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows
from .test_deletion_vectors_java import _assert_vectors_agree

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("name", pa.string()), ("qty", pa.int32()),
                    ("amount", pa.float64()), ("day", pa.date32()), ("note", pa.string())])
AGGREGATION = {"merge-engine": "aggregation", "fields.qty.aggregate-function": "sum",
               "fields.amount.aggregate-function": "sum", "fields.day.aggregate-function": "max",
               "fields.note.aggregate-function": "last_non_null_value"}


def _rows(ids: list[int], step: int, partial: bool) -> pa.Table:
    gap = [partial and (i + step) % 3 == 0 for i in ids]
    return pa.table({
        "k": pa.array(ids, pa.int64()),
        "name": [f"n{i % 5}" for i in ids],
        "qty": pa.array([None if g else i % 7 + step for i, g in zip(ids, gap, strict=True)], pa.int32()),
        "amount": [None if i % 4 == 0 else i * 0.5 + step for i in ids],
        "day": [dt.date(2025, 1, 1) + dt.timedelta(days=(i + step) % 30) for i in ids],
        "note": [None if g or i % 3 else f"s{step}" for i, g in zip(ids, gap, strict=True)],
    }, schema=SCHEMA)


@pytest.mark.parametrize(("options", "partial"), [pytest.param(AGGREGATION, False, id="aggregation"),
                                                  pytest.param({"merge-engine": "partial-update"}, True,
                                                               id="partial-update")])
def test_java_reads_and_compacts_spliced_files_and_we_read_its_files(
        java: PaimonJava, wh: str, lake: Catalog, options: dict[str, str], partial: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = rewrite.spliced_rewrite
    counts: Counter[str] = Counter()

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(*args, **kwargs)
        counts["spliced" if out is not None else "whole"] += 1
        return out

    monkeypatch.setattr(rewrite, "spliced_rewrite", spy)
    lake.create_table("db.ours", SCHEMA, primary_keys=["k"],
                      options={"deletion-vectors.enabled": "true", "bucket": "2", **options})
    rng = np.random.default_rng(23)
    turns = ["ours", "ours", "ours", "java-read", "java", "ours", "java-level-0", "our-compact", "ours",
             "java-compact", "ours", "java-full", "ours"]
    spliced_by_us = 0
    for step, who in enumerate(turns):
        ids = sorted(rng.choice(400, 120, replace=False).tolist()) if step else list(range(400))
        if who == "ours":
            before = counts["spliced"]
            lake.get_table("db.ours").write_arrow(_rows(ids, step, partial))
            spliced_by_us += counts["spliced"] - before
        elif who == "java":
            java.write(wh, "db.ours", _rows(ids, step, partial))
        elif who == "java-level-0":  # left at level 0 for our next compaction to merge
            java.write(wh, "db.ours", _rows(ids, step, partial), options={"write-only": "true"})
        elif who == "our-compact":
            before = counts["whole"]
            lake.get_table("db.ours").compact(full=False)
            assert counts["whole"] > before, counts  # Java's level-0 file: not our writer's footer
        elif who == "java-compact":
            java.compact(wh, "db.ours", full=False)
        elif who == "java-full":
            java.compact(wh, "db.ours", full=True)
        table = lake.get_table("db.ours")
        assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))
        _assert_vectors_agree(java, wh, table)
    # our rounds after the first spliced (two buckets each)
    assert spliced_by_us >= 10, counts
