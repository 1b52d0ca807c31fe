"""Merge engines through the table: writes, merge-on-read, compaction, changelog."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog, InvalidDataError, OptionError, UnsupportedFeatureError
from tests.conftest import rows


def _pu(catalog: Catalog, **opts: str):
    return catalog.create_table(
        "db.pu", pa.schema([("k", pa.int64()), ("a", pa.string()), ("b", pa.int64()), ("c", pa.float64())]),
        primary_keys=["k"], options={"bucket": "2", "merge-engine": "partial-update", "write-only": "true", **opts},
    )


def test_partial_update_merges_non_null_fields_across_commits_and_compaction(catalog):
    t = _pu(catalog)
    t.write_arrow(pa.table({"k": [1, 2], "a": ["x", None], "b": [None, 20], "c": [1.0, None]}, schema=t.arrow_schema))
    t.write_arrow(pa.table({"k": [1, 2], "a": [None, "y"], "b": [10, None], "c": [None, 2.0]}, schema=t.arrow_schema))
    t.write_arrow(pa.table({"k": [1], "a": ["x2"], "b": [None], "c": [None]}, schema=t.arrow_schema))
    expected = [{"k": 1, "a": "x2", "b": 10, "c": 1.0}, {"k": 2, "a": "y", "b": 20, "c": 2.0}]
    assert rows(t.to_arrow(), "k") == expected
    assert rows(t.to_arrow(columns=["k", "b"]), "k") == [{"k": 1, "b": 10}, {"k": 2, "b": 20}]
    t.compact()
    assert rows(t.to_arrow(), "k") == expected
    t.compact(full=True)
    assert rows(t.to_arrow(), "k") == expected


def test_partial_update_rejects_deletes_unless_configured(catalog):
    t = catalog.create_table(
        "db.pud", pa.schema([("k", pa.int64()), ("a", pa.string()), ("op", pa.string())]), primary_keys=["k"],
        options={"bucket": "1", "merge-engine": "partial-update", "rowkind.field": "op"},
    )
    t.write_arrow(pa.table({"k": [1], "a": ["x"], "op": ["+I"]}, schema=t.arrow_schema))
    with pytest.raises(InvalidDataError, match=r"ignore-delete|remove-record-on-delete"):
        t.write_arrow(pa.table({"k": [1], "a": [None], "op": ["-D"]}, schema=t.arrow_schema))
    assert t.to_arrow().num_rows == 1


def test_aggregation_engine_with_retractions(catalog):
    t = catalog.create_table(
        "db.agg", pa.schema([("k", pa.string()), ("total", pa.int64()), ("hi", pa.int64()), ("tags", pa.string()),
                             ("last", pa.string()), ("op", pa.string())]),
        primary_keys=["k"],
        options={"bucket": "2", "merge-engine": "aggregation", "rowkind.field": "op", "write-only": "true",
                 "fields.total.aggregate-function": "sum", "fields.hi.aggregate-function": "max",
                 "fields.hi.ignore-retract": "true", "fields.tags.aggregate-function": "listagg",
                 "fields.tags.ignore-retract": "true"},
    )
    t.write_arrow(pa.table({"k": ["a", "b"], "total": [5, 1], "hi": [5, 1], "tags": ["x", "y"], "last": ["1", "1"],
                            "op": ["+I", "+I"]}, schema=t.arrow_schema))
    t.write_arrow(pa.table({"k": ["a", "a"], "total": [3, 2], "hi": [3, 9], "tags": ["z", None], "last": ["2", None],
                            "op": ["+I", "-U"]}, schema=t.arrow_schema))
    expected = [{"k": "a", "total": 6, "hi": 5, "tags": "x,z", "last": "2", "op": "+I"},
                {"k": "b", "total": 1, "hi": 1, "tags": "y", "last": "1", "op": "+I"}]
    got = rows(t.to_arrow(), "k")
    assert [{**r, "op": "+I"} for r in got] == expected
    t.compact(full=True)
    assert [{**r, "op": "+I"} for r in rows(t.to_arrow(), "k")] == expected


def test_engine_options_are_checked_at_create(catalog):
    schema = pa.schema([("k", pa.int64()), ("s", pa.string())])
    with pytest.raises(OptionError):
        catalog.create_table("db.bad1", schema, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": "aggregation",
                                      "fields.s.aggregate-function": "sum"})
    with pytest.raises(UnsupportedFeatureError, match="count"):
        catalog.create_table("db.bad2", schema, primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": "aggregation",
                                      "fields.s.aggregate-function": "count"})
    with pytest.raises(OptionError, match="primary key"):
        catalog.create_table("db.bad3", schema, options={"merge-engine": "first-row"})
    assert catalog.list_tables("db") == []


def test_first_row_keeps_first_and_is_visible_after_compaction(catalog):
    t = catalog.create_table("db.fr", pa.schema([("k", pa.int64()), ("v", pa.string())]), primary_keys=["k"],
                             options={"bucket": "1", "merge-engine": "first-row", "write-only": "true"})
    t.write_arrow(pa.table({"k": [1, 2], "v": ["first", "first"]}, schema=t.arrow_schema))
    t.write_arrow(pa.table({"k": [1, 3], "v": ["second", "first"]}, schema=t.arrow_schema))
    # as in Paimon, batch reads skip level 0 of first-row tables: data shows after compaction
    assert t.to_arrow().num_rows == 0
    t.compact(full=True)
    assert rows(t.to_arrow(), "k") == [{"k": 1, "v": "first"}, {"k": 2, "v": "first"}, {"k": 3, "v": "first"}]


def test_sequence_group_partial_update_through_table(catalog):
    t = catalog.create_table(
        "db.sg", pa.schema([("k", pa.int64()), ("a", pa.string()), ("sa", pa.int64()), ("b", pa.string()),
                            ("sb", pa.int64())]),
        primary_keys=["k"],
        options={"bucket": "1", "merge-engine": "partial-update", "fields.sa.sequence-group": "a",
                 "fields.sb.sequence-group": "b", "write-only": "true"},
    )
    t.write_arrow(pa.table({"k": [1], "a": ["a2"], "sa": [2], "b": ["b1"], "sb": [1]}, schema=t.arrow_schema))
    t.write_arrow(pa.table({"k": [1], "a": ["a1-late"], "sa": [1], "b": ["b2"], "sb": [2]}, schema=t.arrow_schema))
    assert t.to_arrow().to_pylist() == [{"k": 1, "a": "a2", "sa": 2, "b": "b2", "sb": 2}]
    # a projection that omits the sequence columns still merges with them
    assert t.to_arrow(columns=["a", "b"]).to_pylist() == [{"a": "a2", "b": "b2"}]


def test_partial_update_random_against_model(catalog):
    t = _pu(catalog, **{"bucket": "3"})
    rng = np.random.default_rng(5)
    model: dict[int, dict] = {}
    for i in range(10):
        ks = rng.integers(0, 30, size=20)
        cols = {"a": [None if rng.random() < .5 else f"a{i}" for _ in ks],
                "b": [None if rng.random() < .5 else i for _ in ks],
                "c": [None if rng.random() < .5 else float(i) for _ in ks]}
        t.write_arrow(pa.table({"k": ks, **cols}, schema=t.arrow_schema))
        for j, k in enumerate(ks.tolist()):
            row = model.setdefault(k, {"k": k, "a": None, "b": None, "c": None})
            for c in "abc":
                if cols[c][j] is not None:
                    row[c] = cols[c][j]
        if i % 4 == 3:
            t.compact()
    assert rows(t.to_arrow(), "k") == sorted(model.values(), key=lambda r: r["k"])
