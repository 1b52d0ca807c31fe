"""The streaming reader and the batch reader decide alike which buckets skip the merge.

Both take it from `SplitReader.raw_files` (one definition): append tables, deletion-vector buckets
whose visible files are all above level 0 (not with ``deletion-vectors.merge-on-read``), with the
files a filter's value stats exclude left out. Over random layouts the two readers open the same
files of each split, without a merge exactly where `raw_files` says so, and return the same rows.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog
from lake_assets.ops.read import SplitReader
from lake_assets.ops.scan import Split
from lake_assets.predicate import Predicate
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.table import Table

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])
KINDS = {
    "append": ({}, False),
    "pk": ({"bucket": "2"}, True),
    "dv": ({"bucket": "2", "deletion-vectors.enabled": "true"}, True),
    "dv-merge-on-read": ({"bucket": "2", "deletion-vectors.enabled": "true",
                          "deletion-vectors.merge-on-read": "true"}, True),
    "postpone": ({"bucket": "-2"}, True),
}


class RecordingReader(SplitReader):
    """A `SplitReader` that records, per split, the files it opens and whether it merged them
    (read them with system columns), and what `raw_files` answered."""

    def __init__(self, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.opened: dict[tuple[bytes, int], list[tuple[str, bool]]] = {}
        self.raw: dict[tuple[bytes, int], list[str] | None] = {}

    def raw_files(self, split: Split) -> list[DataFileMeta] | None:
        got = super().raw_files(split)
        self.raw[(split.partition, split.bucket)] = None if got is None else [f.file_name for f in got]
        return got

    def _note(self, split: Split, meta: DataFileMeta, with_system: bool) -> None:
        self.opened.setdefault((split.partition, split.bucket), []).append((meta.file_name, with_system))

    def read_file(self, split: Split, meta: DataFileMeta, with_system: bool,
                  columns: Sequence[str] | None = None, **kw: Any) -> pa.Table:
        self._note(split, meta, with_system)
        return super().read_file(split, meta, with_system, columns, **kw)

    def iter_file(self, split: Split, meta: DataFileMeta, with_system: bool = True,
                  columns: Sequence[str] | None = None, batch_rows: int | None = None) -> Iterator[pa.Table]:
        self._note(split, meta, with_system)
        return super().iter_file(split, meta, with_system, columns, batch_rows)


def _build(catalog: Catalog, kind: str, writes: list[tuple[int, int]], compact: str) -> Table:
    options, pk = KINDS[kind]
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"] if pk else [], options=options)
    for i, (lo, n) in enumerate(writes):
        ks = list(range(lo, lo + n))
        table.write_arrow(pa.table({"k": ks, "v": [i * 1000 + k for k in ks]}, schema=SCHEMA))
        if compact == "each" or (kind == "postpone" and i == len(writes) - 1):
            table.compact()
    if compact == "full":
        table.compact(full=True)
    return table


def _reads(table: Table, filter: Any) -> tuple[RecordingReader, RecordingReader, pa.Table, pa.Table]:
    pred = Predicate.of(filter)
    splits = table.plan(filter=filter)
    batch = RecordingReader(table.store, table.schema, None, pred)
    batch_rows = [t for s in splits for t in batch.read_split(s)]
    stream = RecordingReader(table.store, table.schema, None, pred)
    stream_rows = [t for s in splits for t in stream.stream_split(s, 7)]
    empty = batch.output_schema.empty_table()
    return (batch, stream, pa.concat_tables([empty, *batch_rows]), pa.concat_tables([empty, *stream_rows]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(sorted(KINDS)),
    writes=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30)), min_size=1, max_size=3),
    compact=st.sampled_from(["none", "each", "full"]),
    bound=st.none() | st.integers(0, 4000),
)
def test_streaming_and_batch_readers_skip_the_merge_alike(
    kind: str, writes: list[tuple[int, int]], compact: str, bound: int | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Catalog(tmp)
        catalog.create_database("db")
        table = _build(catalog, kind, writes, compact)
        filter = None if bound is None else [("v", ">=", bound)]
        batch, stream, got_batch, got_stream = _reads(table, filter)
        assert stream.raw == batch.raw  # consulted for every split, and the same answer
        for key, names in batch.raw.items():
            if names is not None:  # no merge in either: exactly these files, unmerged, in this order
                assert [n for n, _ in batch.opened.get(key, [])] == names
                assert stream.opened.get(key, []) == [(n, False) for n in names]
            else:  # both merge the same visible files
                assert sorted(n for n, _ in stream.opened.get(key, [])) == sorted(
                    n for n, _ in batch.opened.get(key, []))
        assert got_stream.sort_by("k").to_pylist() == got_batch.sort_by("k").to_pylist()


def test_the_streaming_reader_takes_the_merge_decision_from_raw_files(tmp_path: Any) -> None:
    """A reader whose `raw_files` says "merge" is merged by the streaming read too."""
    catalog = Catalog(str(tmp_path))
    catalog.create_database("db")
    table = _build(catalog, "dv", [(0, 20), (5, 20)], "full")

    class MergingReader(RecordingReader):
        def raw_files(self, split: Split) -> list[DataFileMeta] | None:
            super().raw_files(split)
            return None

    reader = MergingReader(table.store, table.schema)
    splits = table.plan()
    assert any(SplitReader(table.store, table.schema).raw_files(s) for s in splits)
    got = pa.concat_tables([t for s in splits for t in reader.stream_split(s, 7)])
    assert got.num_rows == 25
    assert set(reader.raw) == {(s.partition, s.bucket) for s in splits}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(KINDS)), compact=st.sampled_from(["none", "each", "full"]))
def test_spark_divides_a_split_by_the_same_decision(kind: str, compact: str) -> None:
    """Spark's planner cuts a large split into files where the readers read file by file, and
    into whole key sections where they merge."""
    from lake_assets.lsm.run_partition import sections
    from lake_assets.spark.reader import divide_split

    with tempfile.TemporaryDirectory() as tmp:
        catalog = Catalog(tmp)
        catalog.create_database("db")
        table = _build(catalog, kind, [(0, 30), (10, 30), (50, 5)], compact)
        for split in table.plan():
            parts = divide_split(table, split, 1)  # every unit its own part
            raw = SplitReader(table.store, table.schema).raw_files(split)
            if raw is not None:
                assert [[f.file_name for f in p.files] for p in parts] == [[f.file_name] for f in raw]
            else:
                visible = table.store.visible_files(split.files, table.schema)
                units = sections(visible, table.schema.types(list(table.schema.trimmed_primary_keys)))
                assert [[f.file_name for f in p.files] for p in parts] == [[f.file_name for f in u] for u in units]
