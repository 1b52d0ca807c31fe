"""The full phase of a stream gives each row the kind Paimon Java's reader gives it
(`lake_assets.ops.full_phase_kinds`): the merged record's kind where Java merges - a deduplicate
key last written as ``+U`` is ``+U``, a key with one record keeps its kind, partial-update and
aggregation fold into ``+I`` - and ``+I`` where Java reads a split raw (one file; a bucket all
above level 0 of one level, or with deletion vectors). Java 0.9's batch read gives the same kinds."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.table import Table
from tests.java.oracle import PaimonJava

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.int64())])
Rows = list[tuple[int, int, str]]


def rows(ids: list[int], values: list[int]) -> pa.Table:
    return pa.table({"id": ids, "v": values}, schema=SCHEMA)


def kinds(table: pa.Table) -> Rows:
    return sorted(zip(table.column("id").to_pylist(), table.column("v").to_pylist(),
                      table.column("_row_kind").to_pylist(), strict=True))


def our_full_phase(t: Table) -> Rows:
    reader = t.change_reader()
    [full] = t.stream(mode="latest-full").poll(max_snapshots=1)
    return kinds(pa.concat_tables([reader.read(s) for s in full.splits] or [reader.schema.empty_table()]))


def java_full_phase(java: PaimonJava, wh: str) -> Rows:
    stream = java.stream(wh, "db.t", options={"scan.mode": "latest-full"})
    try:
        return kinds(stream.next())
    finally:
        stream.close()


def same_as_java(java: PaimonJava, wh: str, t: Table) -> Rows:
    """Our full phase, checked against Java's full phase and Java's batch read (with kinds)."""
    ours = our_full_phase(t)
    assert ours == java_full_phase(java, wh)
    assert ours == kinds(java.read(wh, "db.t", with_kinds=True))
    return ours


ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
}
# (first, second, compacted, over the top level) full phases per engine: key 3 is written +U
EXPECTED: dict[str, list[Rows]] = {
    "deduplicate": [
        [(1, 1, "+I"), (2, 2, "+I"), (3, 3, "+I")],   # one level-0 file: read raw
        [(1, 10, "+U"), (3, 3, "+U")],                # merged: the newest record's kind
        [(1, 10, "+I"), (3, 3, "+I")],                # one top-level file: raw again
        [(1, 10, "+U"), (3, 30, "+I")],               # merged: the top level stored +U for key 1
    ],
    "partial-update": [
        [(1, 1, "+I"), (2, 2, "+I"), (3, 3, "+I")],
        [(1, 10, "+I"), (2, 20, "+I"), (3, 3, "+U")],  # folded keys +I, a single record its kind
        [(1, 10, "+I"), (2, 20, "+I"), (3, 3, "+I")],
        [(1, 10, "+I"), (2, 20, "+I"), (3, 30, "+I")],
    ],
    "aggregation": [
        [(1, 1, "+I"), (2, 2, "+I"), (3, 3, "+I")],
        [(1, 11, "+I"), (2, 22, "+I"), (3, 3, "+U")],
        [(1, 11, "+I"), (2, 22, "+I"), (3, 3, "+I")],
        [(1, 11, "+I"), (2, 22, "+I"), (3, 33, "+I")],
    ],
}


@pytest.mark.parametrize("engine", list(ENGINES))
def test_full_phase_keeps_the_merged_row_kind(java: PaimonJava, wh: str, lake: Catalog, engine: str) -> None:
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", **ENGINES[engine]})
    t = lake.get_table("db.t")
    level0: dict[str, Any] = {"options": {"write-only": "true"}}
    seen = []
    java.write(wh, "db.t", rows([1, 2, 3], [1, 2, 3]), kinds=["+I", "+I", "+U"], **level0)
    seen.append(same_as_java(java, wh, t))
    second = ["+U", "+U"] if engine != "deduplicate" else ["+U", "-U"]  # -U deletes key 2 when deduplicating
    java.write(wh, "db.t", rows([1, 2], [10, 20]), kinds=second, **level0)
    seen.append(same_as_java(java, wh, t))
    java.compact(wh, "db.t", full=True)
    seen.append(same_as_java(java, wh, t))
    java.write(wh, "db.t", rows([3], [30]), kinds=["+I"], **level0)
    seen.append(same_as_java(java, wh, t))
    assert seen == EXPECTED[engine]


@pytest.mark.parametrize(("split_options", "expected"), [
    ({}, [(1, 10, "+U"), (100, 7, "+U")]),  # both sections in one split: merged, each keeps its +U
    # each section its own split of one file: read raw, +I
    ({"source.split.target-size": "1 b", "source.split.open-file-cost": "1 b"}, [(1, 10, "+I"), (100, 7, "+I")]),
])
def test_full_phase_kinds_follow_javas_split_packing(java: PaimonJava, wh: str, lake: Catalog,
                                                    split_options: dict[str, str], expected: Rows) -> None:
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", **split_options})
    t = lake.get_table("db.t")
    java.write(wh, "db.t", rows([1], [1]), options={"write-only": "true"})
    java.write(wh, "db.t", rows([1], [10]), kinds=["+U"], options={"write-only": "true"})
    java.compact(wh, "db.t", full=True)          # the top level stores key 1 as +U
    java.write(wh, "db.t", rows([100, 100], [0, 7]), kinds=["+I", "+U"], options={"write-only": "true"})
    assert same_as_java(java, wh, t) == expected


@pytest.mark.parametrize("options", [
    {"deletion-vectors.enabled": "true"},
    {"merge-engine": "first-row", "changelog-producer": "lookup"},
])
def test_full_phase_above_level_zero_is_read_raw(java: PaimonJava, wh: str, lake: Catalog,
                                                 options: dict[str, str]) -> None:
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1", **options})
    t = lake.get_table("db.t")
    java.write(wh, "db.t", rows([1, 2], [1, 2]), options={"write-only": "true"})
    java.write(wh, "db.t", rows([1], [10]), kinds=["+U"], options={"write-only": "true"})
    t.compact(full=True)                          # the top level stores key 1 as +U (deduplicate)
    java.write(wh, "db.t", rows([2, 3], [20, 3]), kinds=["+U", "+U"], options={"write-only": "true"})
    t.compact()                                   # maybe a second run above level 0
    ours = same_as_java(java, wh, t)
    assert ours and {kind for *_, kind in ours} == {"+I"}  # every split raw, whatever the files store
