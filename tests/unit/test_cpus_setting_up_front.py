"""A bad ``LAKE_ASSETS_CPUS`` fails an operation on data files as it starts (`FileStore.require`).

The pools are sized lazily: before the check moved up front, a writer found the bad value only when
its first pool was sized (after a one-bucket flush had written a file), and work that never sized a
pool (a write to one bucket, a read of one split) ran as if the value were fine.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, InvalidArgumentError
from lake_assets.parallelism import CPUS_ENV
from lake_assets.table import Table

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])
BAD = f"{CPUS_ENV} must be a positive integer, got 'two'"


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "v": ids}, schema=SCHEMA)


@pytest.fixture
def table(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> Table:
    monkeypatch.delenv(CPUS_ENV, raising=False)
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    t.write_arrow(_rows([1, 2, 3, 4]))
    return t


def _table_dir(table: Table) -> Path:
    return Path(table.store.paths.root.removeprefix("file://"))


def test_a_writer_fails_before_it_writes_a_file(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _table_dir(table)
    before = _files(root)
    # rows of one bucket first: they are written without a pool, the next (two buckets) sizes it
    one_bucket = _rows([i for i in range(64) if _bucket_of(table, i) == 0])
    monkeypatch.setenv(CPUS_ENV, "two")
    with pytest.raises(InvalidArgumentError, match=BAD):
        writer = table.new_writer("u", write_only=True)
        writer.write_arrow(one_bucket)
        writer.prepare_commit()
        writer.write_arrow(_rows(list(range(100, 164))))
        writer.prepare_commit()
    assert _files(root) == before


def _bucket_of(table: Table, key: int) -> int:
    """The bucket a key of ``table`` goes to, as its writer routes it (with a valid setting)."""
    writer = table.new_writer("probe")
    writer.write_arrow(_rows([key]))
    messages = writer.prepare_commit()
    writer.abort(messages)
    writer.close()
    return messages[0].bucket


@pytest.mark.parametrize("work", [
    pytest.param(lambda t: t.write_arrow(_rows([1])), id="write of one row"),
    pytest.param(lambda t: t.to_arrow(filter=[("id", "=", 1)]), id="read of one split"),
    pytest.param(lambda t: list(t.to_batches()), id="batches"),
    pytest.param(lambda t: t.compact(full=True), id="compact"),
    pytest.param(lambda t: t.read_changes(1, 1), id="changes"),
])
def test_every_data_operation_fails_up_front(
    table: Table, monkeypatch: pytest.MonkeyPatch, work: Callable[[Table], object]
) -> None:
    root = _table_dir(table)
    before = _files(root)
    monkeypatch.setenv(CPUS_ENV, "two")
    with pytest.raises(InvalidArgumentError, match=BAD):
        work(table)
    assert _files(root) == before
    monkeypatch.setenv(CPUS_ENV, "2")
    work(table)  # a good value: the same work runs


def test_maintenance_that_sizes_no_pool_does_not_check_it(table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CPUS_ENV, "two")
    table.expire_snapshots()
    table.create_tag("t1")
    assert "t1" in table.tags()
