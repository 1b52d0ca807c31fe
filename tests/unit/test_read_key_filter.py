"""Filters on primary-key columns are applied to each file before the merge (bounded memory)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lake_assets import Catalog
from lake_assets.ops import read as read_mod
from lake_assets.ops.key_filter import key_predicate
from lake_assets.predicate import Predicate

SCHEMA = pa.schema([("a", pa.int64()), ("b", pa.int64()), ("v", pa.int64()), ("op", pa.string())])


@pytest.fixture()
def table(catalog: Catalog):
    t = catalog.create_table("db.kf", SCHEMA, primary_keys=["a", "b"],
                             options={"bucket": "2", "rowkind.field": "op", "write-only": "true"})
    rng = np.random.default_rng(5)
    for i in range(6):  # overlapping runs with updates and deletes
        n = 400
        t.write_arrow(pa.table({"a": rng.integers(0, 60, n), "b": rng.integers(0, 3, n), "v": np.full(n, i),
                                "op": rng.choice(["+I", "+U", "-D"], n, p=[0.5, 0.3, 0.2])}, schema=SCHEMA))
    return t


FILTERS = [
    [("a", ">=", 10), ("a", "<", 20)],
    [("a", "=", 7), ("v", ">", 2)],
    [[("a", "<", 5)], [("a", ">", 50), ("b", "=", 1)]],
    [[("a", "<", 5)], [("v", "=", 3)]],  # one clause without a key term: no pre-merge filter
]


@pytest.mark.parametrize("filters", FILTERS)
def test_key_filtered_read_equals_filtering_the_full_read(table, filters):
    full = table.to_arrow()
    expected = full.filter(Predicate.of(filters).to_expression()).sort_by([("a", "ascending"), ("b", "ascending")])
    got = table.to_arrow(filter=filters).sort_by([("a", "ascending"), ("b", "ascending")])
    assert got.equals(expected)


def test_key_predicate_keeps_only_what_the_filter_implies():
    assert key_predicate(Predicate.of([("a", ">", 1), ("v", "=", 2)]), ["a", "b"]).equals(pc.field("a") > 1)
    assert key_predicate(Predicate.of([[("a", ">", 1)], [("v", "=", 2)]]), ["a", "b"]) is None
    assert key_predicate(Predicate.of([("v", "=", 2)]), ["a", "b"]) is None
    assert key_predicate(None, ["a"]) is None


def test_merge_sees_only_matching_keys(table, monkeypatch):
    seen: list[int] = []
    original = read_mod.winner_masks

    def spy(runs, *args, **kwargs):
        seen.append(sum(r.num_rows for r in runs))
        return original(runs, *args, **kwargs)

    monkeypatch.setattr(read_mod, "winner_masks", spy)
    table.to_arrow(filter=[("a", "=", 7)])
    assert seen and max(seen) <= 6 * 3  # at most every version of the 3 keys (7, b) in 6 runs
