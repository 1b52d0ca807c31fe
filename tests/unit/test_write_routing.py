"""Routing of written rows (`lake_assets.ops.route`): every row reaches its (partition, bucket)
exactly once, each group in merge order (key, then arrival), and a key written twice in one batch
keeps its last version; checked against plain-Python models, with batches big enough to take the
parallel gather."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets.formats.data_file import VALUE_KIND
from lake_assets.lsm.bucket import assign_buckets
from lake_assets.ops.route import PARALLEL_GATHER_ROWS, RouteSpec, partition_groups, route
from lake_assets.spec.types import from_arrow


def _model_groups(data: pa.Table, keys: list[str]) -> tuple[list[int], list[tuple]]:
    seen: dict[tuple, int] = {}
    ids = []
    for row in zip(*(data.column(k).to_pylist() for k in keys), strict=True):
        ids.append(seen.setdefault(row, len(seen)))
    return ids, list(seen)


def test_partition_groups_of_several_columns_with_nulls_in_first_seen_order() -> None:
    rng = np.random.default_rng(1)
    n = 5000
    data = pa.table({
        "a": pa.array([None if x == 0 else f"a{x}" for x in rng.integers(0, 4, n)]),
        "b": pa.array([None if x == 0 else int(x) for x in rng.integers(0, 3, n)], pa.int32()),
        "c": pa.array(rng.integers(0, 5, n) > 2),
    })
    ids, values = partition_groups(data, ("a", "b", "c"))
    want_ids, want_values = _model_groups(data, ["a", "b", "c"])
    assert ids.tolist() == want_ids
    assert values == want_values
    one_ids, one_values = partition_groups(data, ("b",))
    assert (one_ids.tolist(), one_values) == _model_groups(data, ["b"])
    assert partition_groups(data, ())[1] == [()]


def _spec(data: pa.Table, primary: tuple[str, ...], parts: tuple[str, ...], buckets: int, **kw: object) -> RouteSpec:
    bucket_keys = tuple(k for k in primary if k not in parts)
    types = tuple(from_arrow(data.schema.field(k).type) for k in bucket_keys)
    return RouteSpec(partition_keys=parts, bucket_keys=bucket_keys, bucket_types=types, num_buckets=buckets,
                     primary_keys=bucket_keys, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("key_kind", ["int", "wide-int", "composite"])
def test_route_puts_every_row_in_its_group_in_key_then_arrival_order(key_kind: str) -> None:
    rng = np.random.default_rng(7)
    n = PARALLEL_GATHER_ROWS * 2 + 17
    keys = rng.integers(0, n // 3, n)  # about three versions per key
    if key_kind == "wide-int":  # a key range that does not fit the packed fast path
        keys = keys * (1 << 50) - (1 << 62)
    data = pa.table({
        "k": pa.array(keys, pa.int64()),
        "k2": pa.array((keys % 7).astype(str)),
        "p": pa.array(np.where(rng.integers(0, 3, n) == 0, None, (keys % 3).astype(str))),
        "arrival": pa.array(np.arange(n)),
    })
    primary = ("k", "k2", "p") if key_kind == "composite" else ("k", "p")
    spec = _spec(data, primary, ("p",), 4)
    kinds = rng.integers(0, 4, n).astype(np.int8)
    groups = route(data, kinds, spec)
    part_ids, part_values = partition_groups(data, ("p",))
    bucket_cols = [data.column(k) for k in spec.bucket_keys]
    buckets = assign_buckets(bucket_cols, spec.bucket_types, 4)
    assert sum(g.rows.num_rows for g in groups) == n
    seen = np.zeros(n, dtype=bool)
    for g in groups:
        arrival = np.asarray(g.rows.column("arrival").to_numpy())
        assert not seen[arrival].any()
        seen[arrival] = True
        assert (part_ids[arrival] == part_values.index(g.partition)).all()
        assert (buckets[arrival] == g.bucket).all()
        assert g.rows.column("p").to_pylist() == [g.partition[0]] * g.rows.num_rows
        assert g.rows.column(VALUE_KIND).to_numpy().tolist() == kinds[arrival].tolist()
        order = sorted(range(g.rows.num_rows), key=lambda i: (
            *(g.rows.column(k)[i].as_py() for k in spec.primary_keys), int(arrival[i])))
        assert order == list(range(g.rows.num_rows))
    assert seen.all()


def test_route_of_an_append_table_keeps_arrival_order_per_partition() -> None:
    n = PARALLEL_GATHER_ROWS + 5
    data = pa.table({"v": pa.array(np.arange(n)[::-1].copy()), "p": pa.array((np.arange(n) % 5).astype(str))})
    spec = RouteSpec(partition_keys=("p",), bucket_keys=(), bucket_types=(), num_buckets=1, primary_keys=())
    groups = route(data, np.zeros(n, dtype=np.int8), spec)
    assert [g.partition for g in groups] == [(str(i),) for i in range(5)]
    for i, g in enumerate(groups):
        assert g.rows.column("v").to_pylist() == [v for v in range(n - 1, -1, -1) if (n - 1 - v) % 5 == i]


def test_sequence_field_orders_a_keys_versions_before_arrival() -> None:
    data = pa.table({"k": [1, 1, 1, 2], "ts": [5, 3, 5, 1], "arrival": [0, 1, 2, 3]})
    spec = _spec(data, ("k",), (), 1, sequence_fields=("ts",))
    (group,) = route(data, np.zeros(4, dtype=np.int8), spec)
    assert group.rows.column("arrival").to_pylist() == [1, 0, 2, 3]


def test_a_key_written_twice_in_one_big_batch_keeps_its_last_version(catalog) -> None:
    t = catalog.create_table("db.routed", pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.int64())]),
                             primary_keys=["k", "p"], partition_keys=["p"], options={"bucket": "3"})
    rng = np.random.default_rng(3)
    n = PARALLEL_GATHER_ROWS * 2
    keys = rng.integers(0, n // 4, n)
    t.write_arrow(pa.table({"k": keys, "p": (keys % 2).astype(str), "v": np.arange(n)}))
    last = {int(k): i for i, k in enumerate(keys)}
    got = t.to_arrow()
    assert got.num_rows == len(last)
    assert dict(zip(got.column("k").to_pylist(), got.column("v").to_pylist(), strict=True)) == last


@pytest.mark.parametrize("buckets", [1, 3])
def test_input_already_in_key_order_is_routed_without_a_sort_or_copy(buckets: int) -> None:
    """Sorted unique keys (a sorted source, an upsert of sorted keys) skip the key sort; a group
    that is the whole batch is a zero-copy slice of it, the rest are still in key order."""
    n = PARALLEL_GATHER_ROWS + 5
    data = pa.table({"k": pa.array(np.arange(n, dtype=np.int64) * 3 - 7),
                     "v": pa.array([f"v{i}" for i in range(n)])})
    groups = route(data, np.zeros(n, np.int8), _spec(data, ("k",), (), buckets))
    assert sum(g.rows.num_rows for g in groups) == n
    for g in groups:
        ks = g.rows.column("k").to_numpy()
        assert (np.diff(ks) > 0).all()
        want = assign_buckets([pa.array(ks)], [from_arrow(pa.int64())], buckets)
        assert (want == g.bucket).all()
    if buckets == 1:
        (g,) = groups
        assert g.rows.column("v").chunk(0).buffers()[2].address == data.column("v").chunk(0).buffers()[2].address


def test_variable_width_columns_gathered_in_two_steps_equal_one_take() -> None:
    """Strings, binaries and nested columns (with nulls) come out of a group's two-step gather
    exactly as one ``take`` of the group's merge order would give them."""
    rng = np.random.default_rng(11)
    n = PARALLEL_GATHER_ROWS * 2 + 3
    keys = rng.permutation(n).astype(np.int64)
    words = np.array(["", "a", "bb", "héllo", None], dtype=object)[rng.integers(0, 5, n)]
    data = pa.table({
        "k": pa.array(keys),
        "s": pa.array(words, pa.string()),
        "b": pa.array([None if w is None else str(w).encode() for w in words], pa.binary()),
        "l": pa.array([None if i % 7 == 0 else list(range(i % 4)) for i in range(n)], pa.list_(pa.int32())),
        "st": pa.array([{"x": i, "y": str(i)} for i in range(n)]),
        "d": pa.array([None if i % 5 == 0 else i / 4 for i in range(n)], pa.float64()),
    })
    groups = route(data, np.zeros(n, np.int8), _spec(data, ("k",), (), 4))
    expected = data.append_column(VALUE_KIND, pa.array(np.zeros(n, np.int8)))
    by_key = {int(k): i for i, k in enumerate(keys)}
    for g in groups:
        rows = [by_key[int(k)] for k in g.rows.column("k").to_pylist()]
        assert g.rows.equals(expected.take(pa.array(rows)))
        assert g.rows.column("k").to_pylist() == sorted(g.rows.column("k").to_pylist())
