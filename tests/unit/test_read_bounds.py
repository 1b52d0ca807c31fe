"""The bounds of a streaming read are table options: ``read.batch-size`` (Paimon's) sets the rows
per batch and ``read.read-ahead`` (lake_assets') the batches each thread queues; arguments of
`Table.to_batches` override them, and bad values are refused at create and ALTER naming the key."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog, OptionError
from lake_assets.ops import streaming_read as streaming_mod
from lake_assets.ops.streaming_read import DEFAULT_BATCH_ROWS, DEFAULT_READ_AHEAD, stream_bounds
from lake_assets.options import CoreOptions

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _table(catalog: Catalog, rows: int = 6_000, **options: str):
    table = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                                 options={"bucket": "1", "write-only": "true", **options})
    rng = np.random.default_rng(5)
    for r in range(3):  # three overlapping sorted runs: the streaming k-way merge, not one file
        keys = rng.choice(rows * 2, rows, replace=False)
        table.write_arrow(pa.table({"k": keys, "v": np.full(rows, r)}, schema=SCHEMA))
    return table


def test_read_batch_size_option_sets_the_batches_to_batches_yields(catalog: Catalog) -> None:
    table = _table(catalog, **{"read.batch-size": "500"})
    want = table.to_arrow().sort_by("k")
    batches = list(table.to_batches())
    assert max(b.num_rows for b in batches) == 500
    assert pa.Table.from_batches(batches).sort_by("k").equals(want)
    # the argument overrides the option
    assert max(b.num_rows for b in table.to_batches(batch_size=1_200)) == 1_200
    # ALTER changes the next read
    table.update_schema().set_option("read.batch-size", "300").commit()
    assert max(b.num_rows for b in catalog.get_table("db.t").to_batches()) == 300


def test_read_ahead_option_reaches_the_read_ahead_threads(catalog: Catalog, monkeypatch) -> None:
    table = _table(catalog, rows=500, **{"read.read-ahead": "5"})
    seen: list[tuple[int, int]] = []
    original = streaming_mod.stream_splits

    def spy(reader, splits, *, batch_rows: int, read_ahead: int, workers: int | None = None):
        seen.append((batch_rows, read_ahead))
        return original(reader, splits, batch_rows=batch_rows, read_ahead=read_ahead, workers=workers)

    monkeypatch.setattr(streaming_mod, "stream_splits", spy)  # Table._tables imports it at the call
    list(table.to_batches())
    list(table.to_batches(read_ahead=1, batch_size=7))
    assert seen == [(DEFAULT_BATCH_ROWS, 5), (7, 1)]


def test_stream_bounds_defaults_options_and_arguments() -> None:
    assert stream_bounds(CoreOptions({})) == (DEFAULT_BATCH_ROWS, DEFAULT_READ_AHEAD)
    opts = CoreOptions({"read.batch-size": "2048", "read.read-ahead": "3"})
    assert stream_bounds(opts) == (2048, 3)
    assert stream_bounds(opts, 10, None) == (10, 3)
    assert stream_bounds(opts, None, 1) == (2048, 1)


@pytest.mark.parametrize("key", ["read.batch-size", "read.read-ahead"])
@pytest.mark.parametrize("value", ["0", "-4", "many", "3000000000"])
def test_bad_bounds_are_refused_at_create_and_alter_naming_the_key(catalog: Catalog, key: str, value: str) -> None:
    pattern = key.replace(".", r"\.")
    with pytest.raises(OptionError, match=pattern):
        catalog.create_table("db.bad", SCHEMA, primary_keys=["k"], options={"bucket": "1", key: value})
    t = catalog.create_table("db.ok", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    with pytest.raises(OptionError, match=pattern):
        t.update_schema().set_option(key, value).commit()
    assert catalog.get_table("db.ok").schema.id == 0


def test_full_change_splits_stream_in_read_batch_size(catalog: Catalog) -> None:
    table = _table(catalog, **{"read.batch-size": "400"})
    want = table.to_arrow().sort_by("k")
    stream = table.stream(mode="latest-full")
    reader = table.change_reader()
    parts = [part for batch in stream.poll(max_snapshots=10) for split in batch.splits
             for part in reader.read_batches(split)]
    assert parts and max(p.num_rows for p in parts) <= 400
    got = pa.concat_tables(parts)
    assert set(got.column("_row_kind").to_pylist()) == {"+I"}
    assert got.drop_columns(["_row_kind"]).sort_by("k").equals(want)
