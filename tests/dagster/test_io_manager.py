"""`LakeIOManager` and `LakeTableResource` with real Dagster runs on a real local warehouse (no Spark):
assets return pandas/Arrow data written as overwrite of their partitions or upsert; downstream
assets load a table, their partitions, a snapshot or the changes since one, as Arrow or pandas."""

from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa
import pytest

from lake_assets.defs.io_manager import LakeIOManager
from lake_assets.defs.resources import LocalStorage, WarehouseResource
from lake_assets.defs.resources.tables import LakeTableResource
from lake_assets.errors import InvalidArgumentError

DAYS = dg.DailyPartitionsDefinition(start_date="2024-01-01", end_date="2024-01-04")
SOURCE: dict[str, list[int]] = {}  # day -> ids the "landing system" delivers for it


def _frame(day: str) -> pd.DataFrame:
    ids = SOURCE[day]
    return pd.DataFrame({"id": pd.Series(ids, dtype="int64"), "dt": pd.Series([day] * len(ids), dtype=object),
                         "amount": pd.Series(ids, dtype="float64")})


@dg.asset(key=["shop", "orders"], partitions_def=DAYS, backfill_policy=dg.BackfillPolicy.single_run(),
          metadata={"lake/write_mode": "overwrite", "lake/primary_keys": ["id", "dt"],
                    "lake/partition_keys": ["dt"], "lake/options": {"bucket": 2}})
def orders(context: dg.AssetExecutionContext) -> pd.DataFrame:
    return pd.concat([_frame(day) for day in context.partition_keys], ignore_index=True)


@dg.asset(partitions_def=DAYS, ins={"orders": dg.AssetIn(key=["shop", "orders"])})
def day_total(orders: pd.DataFrame) -> None:
    SEEN["day_total"] = orders


@dg.asset(ins={"orders": dg.AssetIn(key=["shop", "orders"], metadata={"lake/snapshot_id": 1})})
def first_snapshot(orders: pa.Table) -> None:
    SEEN["first_snapshot"] = orders


@dg.asset(ins={"prices": dg.AssetIn(key=["shop", "prices"], metadata={"lake/changes_since": 1,
                                                                     "lake/columns": ["sku", "price"]})})
def price_changes(prices: pa.Table) -> None:
    SEEN["changes"] = prices


PRICES = {"a": 1.0, "b": 2.0}


@dg.asset(key=["shop", "prices"], metadata={"lake/write_mode": "upsert", "lake/primary_keys": ["sku"],
                                            "lake/options": {"bucket": 1}})
def prices() -> pa.Table:
    return pa.table({"sku": list(PRICES), "price": list(PRICES.values())})


SEEN: dict[str, object] = {}


@pytest.fixture
def warehouse(tmp_path: Path) -> WarehouseResource:
    return WarehouseResource(storage=LocalStorage(path=str(tmp_path / "wh")))


def _run(assets, warehouse, **kwargs) -> dg.ExecuteInProcessResult:
    return dg.materialize(assets, resources={"io_manager": LakeIOManager(warehouse=warehouse)}, **kwargs)


def _ids_per_day(warehouse: WarehouseResource) -> dict[str, list[int]]:
    rows = warehouse.table("shop.orders").to_arrow().to_pylist()
    out: dict[str, list[int]] = {}
    for r in rows:
        out.setdefault(r["dt"], []).append(r["id"])
    return {k: sorted(v) for k, v in sorted(out.items())}


def test_partition_overwrite_is_idempotent_and_downstream_loads(warehouse: WarehouseResource) -> None:
    SOURCE.update({"2024-01-01": [1, 2], "2024-01-02": [3], "2024-01-03": [4, 5]})
    first = _run([orders], warehouse, partition_key="2024-01-01")  # creates the table (snapshot 1)
    assert first.success
    md = first.get_asset_materialization_events()[0].materialization.metadata
    assert md["dagster/table_name"].value == "shop.orders" and md["rows_written"].value == 2
    table = warehouse.table("shop.orders")
    assert table.primary_keys == ("id", "dt") and table.options["bucket"] == "2"
    # a range in one run: one overwrite commit per day; day 1 again (redelivered with one row less)
    SOURCE["2024-01-01"] = [1]
    tags = {"dagster/asset_partition_range_start": "2024-01-01", "dagster/asset_partition_range_end": "2024-01-03"}
    for _ in range(2):  # retried: the same table, nothing duplicated
        assert _run([orders], warehouse, tags=tags).success
        assert _ids_per_day(warehouse) == {"2024-01-01": [1], "2024-01-02": [3], "2024-01-03": [4, 5]}
    # a day delivered empty is emptied, not left as it was
    SOURCE["2024-01-02"] = []
    assert _run([orders], warehouse, partition_key="2024-01-02").success
    assert "2024-01-02" not in _ids_per_day(warehouse)

    result = _run([orders, day_total, first_snapshot], warehouse, partition_key="2024-01-03",
                  selection=[day_total.key])
    assert result.success
    day = SEEN["day_total"]
    assert isinstance(day, pd.DataFrame) and sorted(day["id"]) == [4, 5] and set(day["dt"]) == {"2024-01-03"}
    assert _run([orders, first_snapshot], warehouse, selection=[first_snapshot.key]).success
    snap1 = SEEN["first_snapshot"]
    assert isinstance(snap1, pa.Table) and sorted(snap1["id"].to_pylist()) == [1, 2]


def test_rows_outside_the_partitions_are_refused_before_writing(warehouse: WarehouseResource) -> None:
    SOURCE.update({"2024-01-01": [1]})
    assert _run([orders], warehouse, partition_key="2024-01-01").success

    @dg.asset(key=["shop", "orders"], partitions_def=DAYS, metadata={"lake/write_mode": "overwrite"})
    def stray(context: dg.AssetExecutionContext) -> pa.Table:
        return pa.table({"id": [7, 8], "dt": ["2024-01-02", "2024-01-03"], "amount": [1.0, 2.0]})

    before = warehouse.table("shop.orders").snapshot_manager.latest_id()
    with pytest.raises(InvalidArgumentError, match=r"dt values \['2024-01-03'\] outside the partitions"):
        _run([stray], warehouse, partition_key="2024-01-02")
    assert warehouse.table("shop.orders").snapshot_manager.latest_id() == before


def test_upsert_and_mode_errors(warehouse: WarehouseResource) -> None:
    PRICES.update({"a": 1.0, "b": 2.0})
    assert _run([prices], warehouse).success  # snapshot 1
    PRICES.update({"b": 2.5, "c": 3.0})
    assert _run([prices], warehouse).success  # upserted: one row per key, b replaced
    assert sorted(map(tuple, (r.values() for r in warehouse.table("shop.prices").to_arrow().to_pylist()))) == [
        ("a", 1.0), ("b", 2.5), ("c", 3.0)]
    assert _run([prices, price_changes], warehouse, selection=[price_changes.key]).success
    delta = SEEN["changes"]  # the changes since snapshot 1: the second upsert's rows
    assert delta.column_names == ["sku", "price", "_row_kind"]
    assert sorted((r["sku"], r["price"], r["_row_kind"]) for r in delta.to_pylist()) == [
        ("a", 1.0, "+I"), ("b", 2.5, "+I"), ("c", 3.0, "+I")]

    @dg.asset(key=["shop", "prices"], metadata={"lake/write_mode": "append"})
    def appended() -> pa.Table:
        return pa.table({"sku": ["c"], "price": [3.0]})

    with pytest.raises(InvalidArgumentError, match=r"Cannot append to shop\.prices: it has primary keys"):
        _run([appended], warehouse)

    @dg.asset(key=["shop", "prices"], metadata={"lake/write_mode": "merge"})
    def unknown() -> pa.Table:
        return pa.table({"sku": ["c"], "price": [3.0]})

    with pytest.raises(InvalidArgumentError, match="lake/write_mode 'merge' is not one of"):
        _run([unknown], warehouse)

    @dg.asset(key=["shop", "prices"])
    def not_a_frame() -> dict:
        return {"sku": "c"}

    with pytest.raises(InvalidArgumentError, match="return a pyarrow Table, a pandas DataFrame"):
        _run([not_a_frame], warehouse)


def test_table_resource(warehouse: WarehouseResource) -> None:
    catalog = warehouse.catalog()
    catalog.create_database("shop")
    catalog.create_table("shop.events", pa.schema([("n", pa.int64()), ("dt", pa.string())]), partition_keys=["dt"])
    events = LakeTableResource(warehouse=warehouse, table="shop.events")

    @dg.asset(partitions_def=DAYS)
    def load_events(context: dg.AssetExecutionContext, events: LakeTableResource) -> None:
        day = context.partition_key
        events.write(pd.DataFrame({"n": [1, 2], "dt": [day, day]}), "overwrite", partitions=[day])
        events.write(pa.table({"n": [3], "dt": [day]}), "append", partitions=[day])

    for day in ("2024-01-01", "2024-01-02", "2024-01-01"):
        assert dg.materialize([load_events], resources={"events": events}, partition_key=day).success
    assert sorted(events.read(partitions=["2024-01-01"])["n"].to_pylist()) == [1, 2, 3]
    frame = events.read("pandas", filter=[("n", ">", 1)], columns=["n"])
    assert isinstance(frame, pd.DataFrame) and sorted(frame["n"]) == [2, 2, 3, 3]
    with pytest.raises(InvalidArgumentError, match=r"Cannot upsert into shop\.events: it has no primary key"):
        events.write(pa.table({"n": [1], "dt": ["2024-01-01"]}), "upsert")


def test_polars_frames_are_stored_and_loaded(warehouse: WarehouseResource) -> None:
    """An asset returning a polars DataFrame is written (overwrite of its partition, then upsert);
    a downstream asset annotated with ``pl.DataFrame`` loads its partition as one."""
    pl = pytest.importorskip("polars", reason="polars is a dev dependency (pyproject.toml)")

    @dg.asset(key=["shop", "visits"], partitions_def=DAYS,
              metadata={"lake/write_mode": "overwrite", "lake/primary_keys": ["id", "dt"],
                        "lake/partition_keys": ["dt"], "lake/options": {"bucket": 1}})
    def visits(context: dg.AssetExecutionContext) -> pl.DataFrame:
        day = context.partition_key
        return pl.DataFrame({"id": [1, 2], "dt": [day, day], "page": ["home", "cart"]})

    @dg.asset(partitions_def=DAYS, ins={"visits": dg.AssetIn(key=["shop", "visits"])})
    def day_pages(visits: pl.DataFrame) -> None:
        SEEN["day_pages"] = visits

    @dg.asset(key=["shop", "visits"], partitions_def=DAYS, metadata={"lake/write_mode": "upsert"})
    def corrected(context: dg.AssetExecutionContext) -> pl.DataFrame:
        return pl.DataFrame({"id": [2], "dt": [context.partition_key], "page": ["checkout"]})

    for day in ("2024-01-01", "2024-01-02", "2024-01-01"):  # day 1 twice: replaced, not duplicated
        assert _run([visits], warehouse, partition_key=day).success
    assert _run([corrected], warehouse, partition_key="2024-01-02").success
    stored = sorted((r["dt"], r["id"], r["page"]) for r in warehouse.table("shop.visits").to_arrow().to_pylist())
    assert stored == [("2024-01-01", 1, "home"), ("2024-01-01", 2, "cart"),
                      ("2024-01-02", 1, "home"), ("2024-01-02", 2, "checkout")]

    assert _run([visits, day_pages], warehouse, partition_key="2024-01-02", selection=[day_pages.key]).success
    loaded = SEEN["day_pages"]
    assert isinstance(loaded, pl.DataFrame)
    assert sorted(loaded.select("id", "page").rows()) == [(1, "home"), (2, "checkout")]
    assert loaded["dt"].unique().to_list() == ["2024-01-02"]
