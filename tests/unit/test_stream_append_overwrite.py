"""``streaming-read-append-overwrite`` (Paimon 1.2+): a stream of an append table reads the files an
OVERWRITE snapshot added.

Java 0.9, pypaimon 2.1 (its ``DeltaFollowUpScanner`` scans APPEND snapshots only) and
pypaimon-rust 0.4 predate or lack the option; the facts are HEAD's source: ``AppendOnlyFileStoreTable
.supportStreamingReadOverwrite`` returns the option, ``DataTableStreamScan.nextPlan`` then plans an
OVERWRITE with ``FollowUpScanner.getOverwriteChangesPlan(snapshot, reader, isAppend=true)`` - the
snapshot's delta (its added files, as +I) - and ``IncrementalDeltaStartingScanner`` keeps ignoring
OVERWRITEs. The first case is HEAD's ``AppendOnlyTableITCase.testStreamReadOverwriteTable``.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import OptionError

SCHEMA = pa.schema([("id", pa.int32()), pa.field("p", pa.string(), nullable=False)])


def _streamed(table, stream) -> list[tuple[int, str, str]]:
    reader = stream.change_reader()
    rows = []
    for batch in stream.poll(max_snapshots=20):
        for split in batch.splits:
            rows += [(r["id"], r["p"], r["_row_kind"]) for r in reader.read(split).to_pylist()]
    return sorted(rows)


@pytest.mark.parametrize("enabled", [True, False])
def test_a_stream_of_an_append_table_reads_overwrites(catalog: Catalog, enabled: bool) -> None:
    options = {"streaming-read-append-overwrite": "true"} if enabled else {}
    t = catalog.create_table("db.t", SCHEMA, partition_keys=["p"],
                             options={**options, "deletion-vectors.enabled": "true"})
    stream = t.stream(mode="latest")
    assert _streamed(t, stream) == []
    t.write_arrow(pa.table({"id": [1], "p": ["2024"]}, schema=SCHEMA), overwrite={"p": "2024"})
    assert _streamed(t, stream) == ([(1, "2024", "+I")] if enabled else [])
    t.write_arrow(pa.table({"id": [2, 3], "p": ["2024", "2024"]}, schema=SCHEMA), overwrite={"p": "2024"})
    # the overwritten row 1 is not retracted (an append stream has no -D), as in Java
    assert _streamed(t, stream) == ([(2, "2024", "+I"), (3, "2024", "+I")] if enabled else [])
    t.write_arrow(pa.table({"id": [4], "p": ["2025"]}, schema=SCHEMA))
    overwrite_id = t.latest_snapshot().id - 1
    # a delete through deletion vectors commits an OVERWRITE that adds no data file: nothing to emit
    t.delete_where([("id", "=", 2)])
    assert t.latest_snapshot().commit_kind.name == "OVERWRITE"
    assert _streamed(t, stream) == [(4, "2025", "+I")]
    assert sorted(r["id"] for r in t.to_arrow().to_pylist()) == [3, 4]
    # incremental reads of snapshot ids skip OVERWRITEs either way (IncrementalDeltaStartingScanner)
    assert sorted(r["id"] for r in t.read_changes(overwrite_id - 1).to_pylist()) == [4]


def test_the_option_is_for_append_tables(catalog: Catalog) -> None:
    """A primary-key table's streams follow ``streaming-read-overwrite`` (Java ignores the append
    option there); an append table refuses that one and names this one."""
    pk = catalog.create_table("db.pk", pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string())]),
                              primary_keys=["k"], options={"bucket": "1", "streaming-read-append-overwrite": "true"})
    stream = pk.stream(mode="latest")
    stream.poll()
    pk.write_arrow(pa.table({"k": [1], "v": ["x"]}, schema=pk.arrow_schema), overwrite=True)
    assert [s for b in stream.poll() for s in b.splits] == []
    with pytest.raises(OptionError, match=r"needs a primary key.*'streaming-read-append-overwrite'"):
        catalog.create_table("db.app", SCHEMA, options={"streaming-read-overwrite": "true"})
