"""The read path's fast merge (winner masks, no sort of the data) equals the naive sort-merge.

`winner_masks` picks the rows a deduplicate / first-row merge keeps without sorting the runs; the
reference here is the plain stable sort by (key, sequence) followed by the merge function, over
the same concatenated runs. Rows carry a unique ``rid`` so that the comparison also checks which
of several equal-sequence versions wins.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError
from lake_assets.formats.data_file import SEQUENCE_NUMBER, VALUE_KIND
from lake_assets.lsm.merge import is_retract, sort_for_merge, winner_masks
from lake_assets.lsm.merge_engine.deduplicate import Deduplicate
from lake_assets.lsm.merge_engine.first_row import FirstRow
from lake_assets.lsm.merge_engine.registry import merge_engine
from lake_assets.options import CoreOptions
from lake_assets.spec.row_kind import RowKind

KINDS = np.array([RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.UPDATE_BEFORE, RowKind.DELETE], dtype=np.int8)


def _naive(runs: list[pa.Table], keys: list[str], fn: object) -> pa.Table:
    data = sort_for_merge(pa.concat_tables(runs), keys)  # stable: concatenation order breaks ties
    merged = fn.merge(data, keys)
    return merged.filter(pa.array(~is_retract(merged.column(VALUE_KIND).to_numpy())))


def _fast(runs: list[pa.Table], keys: list[str], fn: object) -> pa.Table | None:
    masks = winner_masks(runs, keys, fn)
    if masks is None:
        return None
    parts = [r if m is None else r.filter(pa.array(m)) for r, m in zip(runs, masks, strict=True)]
    return pa.concat_tables(parts)


def _rids(t: pa.Table) -> list[int]:
    return sorted(t.column("rid").to_pylist())


def _runs(rng: np.random.Generator, key_kind: str, n_runs: int, retract_share: float,
          sorted_runs: bool) -> list[pa.Table]:
    """Random runs over a small key domain: duplicates across and within runs, sequence ties."""
    runs = []
    rid = 0
    seq_base = 0
    for _ in range(n_runs):
        n = int(rng.integers(0, 40))
        k1 = rng.integers(-3, 4, n)
        k2 = rng.integers(0, 3, n)
        # mostly increasing sequence numbers per run, with deliberate ties across runs
        seq = seq_base + rng.integers(0, 6, n)
        seq_base += int(rng.integers(0, 4))
        kinds = np.where(rng.random(n) < retract_share, KINDS[rng.integers(2, 4, n)], KINDS[rng.integers(0, 2, n)])
        cols: dict[str, pa.Array] = {}
        if key_kind == "int":
            cols["k1"] = pa.array(k1, pa.int64())
            cols["k2"] = pa.array(k2, pa.int32())
        elif key_kind == "str":
            cols["k1"] = pa.array([f"key-{v}" for v in k1], pa.string())
            cols["k2"] = pa.array(k2, pa.int8())
        elif key_kind == "date":
            cols["k1"] = pa.array([dt.date(2024, 1, 10) + dt.timedelta(days=int(v)) for v in k1], pa.date32())
            cols["k2"] = pa.array([f"{v}" * 3 for v in k2], pa.string())
        else:  # uint64 near the top of the range: codes must shift before narrowing to int64
            cols["k1"] = pa.array(np.uint64(2**64 - 10) + (k1 + 3).astype(np.uint64), pa.uint64())
            cols["k2"] = pa.array(k2, pa.uint8())
        t = pa.table({
            **cols,
            SEQUENCE_NUMBER: pa.array(seq, pa.int64()),
            VALUE_KIND: pa.array(kinds, pa.int8()),
            "v": pa.array(rng.random(n)),
            "rid": pa.array(np.arange(rid, rid + n), pa.int64()),
        })
        rid += n
        if sorted_runs:
            t = sort_for_merge(t, ["k1", "k2"])
        runs.append(t)
    return runs


@pytest.mark.parametrize("key_kind", ["int", "str", "date", "uint64"])
@pytest.mark.parametrize("engine", ["dedupe", "dedupe-ignore-delete", "first-row", "first-row-ignore-delete"])
def test_winner_masks_equal_naive_sort_merge(key_kind, engine):
    rng = np.random.default_rng(abs(hash((key_kind, engine))) % 2**32)
    fn = {
        "dedupe": Deduplicate(),
        "dedupe-ignore-delete": Deduplicate(ignore_delete=True),
        "first-row": FirstRow(),
        "first-row-ignore-delete": FirstRow(ignore_delete=True),
    }[engine]
    retracts = 0.0 if engine == "first-row" else 0.3
    for trial in range(150):
        runs = _runs(rng, key_kind, n_runs=int(rng.integers(1, 6)), retract_share=retracts,
                     sorted_runs=trial % 2 == 0)
        got = _fast(runs, ["k1", "k2"], fn)
        assert got is not None
        assert _rids(got) == _rids(_naive(runs, ["k1", "k2"], fn)), f"trial {trial}"


def test_winner_masks_first_row_rejects_retracts():
    t = pa.table({"k": [1, 1], SEQUENCE_NUMBER: pa.array([0, 1], pa.int64()),
                  VALUE_KIND: pa.array([RowKind.INSERT, RowKind.DELETE], pa.int8())})
    with pytest.raises(InvalidDataError):
        winner_masks([t], ["k"], FirstRow())


def test_winner_masks_keep_retracts_for_compaction():
    t1 = pa.table({"k": [1, 2], SEQUENCE_NUMBER: pa.array([0, 1], pa.int64()),
                   VALUE_KIND: pa.array([RowKind.INSERT, RowKind.INSERT], pa.int8())})
    t2 = pa.table({"k": [2], SEQUENCE_NUMBER: pa.array([5], pa.int64()),
                   VALUE_KIND: pa.array([RowKind.DELETE], pa.int8())})
    masks = winner_masks([t1, t2], ["k"], Deduplicate(), drop_retract=False)
    assert [None if m is None else m.tolist() for m in masks] == [[True, False], None]
    masks = winner_masks([t1, t2], ["k"], Deduplicate())
    assert [None if m is None else m.tolist() for m in masks] == [[True, False], [False]]


def test_winner_masks_decline_what_they_cannot_do():
    t = pa.table({"a": pa.array([0, 2**62], pa.int64()), "b": pa.array([0, 2**62], pa.int64()),
                  SEQUENCE_NUMBER: pa.array([0, 1], pa.int64()), VALUE_KIND: pa.array([0, 0], pa.int8())})
    assert winner_masks([t], ["a", "b"], Deduplicate()) is None  # keys do not pack into 63 bits
    assert winner_masks([t], ["a"], Deduplicate(), sequence_fields=["b"]) is None
    partial = merge_engine("partial-update").create([("a", pa.int64()), ("b", pa.int64())], ["a"], CoreOptions({}))
    assert winner_masks([t], ["a"], partial) is None
    nulls = t.set_column(0, "a", pa.array([None, 1], pa.int64()))
    assert winner_masks([nulls], ["a"], Deduplicate()) is None
    empty = t.slice(0, 0)
    assert winner_masks([empty, empty], ["a"], Deduplicate()) == [None, None]


# ------------------------------------------------------------------ through the table


def _model_apply(model: dict, batch: pa.Table) -> None:
    for r in batch.to_pylist():
        key = (r["k1"], r["k2"])
        if r["op"] in ("-D", "-U"):
            model.pop(key, None)
        else:
            model[key] = r


@pytest.mark.parametrize("buckets", [1, 3])
def test_merge_on_read_equals_model_with_many_runs(tmp_path, buckets):
    """Many level-0 runs per bucket (write-only), updates, deletes, projection and filters."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("k1", pa.int64()), ("k2", pa.string()), ("v", pa.float64()), ("s", pa.string()),
                        ("op", pa.string())])
    table = cat.create_table("db.t", schema, primary_keys=["k1", "k2"],
                             options={"bucket": str(buckets), "rowkind.field": "op", "write-only": "true"})
    rng = np.random.default_rng(buckets)
    model: dict = {}
    for _ in range(8):
        n = int(rng.integers(1, 300))
        k1 = rng.integers(0, 200, n)
        ops = np.where(rng.random(n) < 0.15, "-D", np.where(rng.random(n) < 0.5, "+U", "+I"))
        batch = pa.table({
            "k1": pa.array(k1, pa.int64()),
            "k2": pa.array([f"p{v % 3}" for v in k1 // 7], pa.string()),
            "v": pa.array(rng.random(n)),
            "s": pa.array([f"s{int(x)}" for x in rng.integers(0, 1000, n)]),
            "op": pa.array(ops.tolist(), pa.string()),
        })
        table.write_arrow(batch)
        _model_apply(model, batch)
    table = cat.get_table("db.t")
    assert max(len(s.files) for s in table.plan()) > 1  # several runs really overlap
    want = sorted((r["k1"], r["k2"], r["v"], r["s"]) for r in model.values())
    got = table.to_arrow()
    assert sorted(zip(*(got.column(c).to_pylist() for c in ("k1", "k2", "v", "s")), strict=True)) == want
    got = table.to_arrow(columns=["s", "k1"], filter=[("k1", ">=", 100)])
    assert got.schema.names == ["s", "k1"]
    assert sorted(zip(got.column("k1").to_pylist(), got.column("s").to_pylist(), strict=True)) == sorted(
        (k1, s) for k1, _, _, s in want if k1 >= 100)
    got = table.to_arrow(filter=[("v", "<", 0.5)], columns=["k1", "k2"])
    assert sorted(zip(got.column("k1").to_pylist(), got.column("k2").to_pylist(), strict=True)) == sorted(
        (k1, k2) for k1, k2, v, _ in want if v < 0.5)


def test_merge_on_read_across_schema_evolution(tmp_path):
    """Runs written under an older schema (narrower type, missing column) merge with newer ones."""
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("k", pa.int32()), ("v", pa.int32()), ("op", pa.string())])
    table = cat.create_table("db.t", schema, primary_keys=["k"],
                             options={"bucket": "1", "rowkind.field": "op", "write-only": "true"})
    table.write_arrow(pa.table({"k": pa.array([1, 2, 3, 4], pa.int32()), "v": pa.array([10, 20, 30, 40], pa.int32()),
                                "op": ["+I"] * 4}))
    table.update_schema().add_column("w", pa.string()).update_column_type("v", pa.int64()).commit()
    table = cat.get_table("db.t")
    table.write_arrow(pa.table({"k": pa.array([2, 3], pa.int32()), "v": pa.array([200, 0], pa.int64()),
                                "op": ["+U", "-D"], "w": ["b", None]}))
    got = cat.get_table("db.t").to_arrow()
    assert got.schema.field("v").type == pa.int64()
    assert sorted(zip(*(got.column(c).to_pylist() for c in ("k", "v", "w")), strict=True)) == [
        (1, 10, None), (2, 200, "b"), (4, 40, None)]


def test_first_row_and_partial_update_tables_still_merge(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("a", pa.int64()), ("b", pa.string())])
    pu = cat.create_table("db.pu", schema, primary_keys=["k"],
                          options={"bucket": "1", "merge-engine": "partial-update", "write-only": "true"})
    pu.write_arrow(pa.table({"k": [1, 2], "a": [1, None], "b": [None, "x"]}, schema=schema))
    pu.write_arrow(pa.table({"k": [1, 2], "a": [None, 5], "b": ["y", None]}, schema=schema))
    got = cat.get_table("db.pu").to_arrow()
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) == [{"k": 1, "a": 1, "b": "y"}, {"k": 2, "a": 5, "b": "x"}]
    fr = cat.create_table("db.fr", schema, primary_keys=["k"], options={"bucket": "1", "merge-engine": "first-row"})
    fr.write_arrow(pa.table({"k": [1, 2], "a": [1, 2], "b": ["a", "b"]}, schema=schema))
    fr.write_arrow(pa.table({"k": [2, 3], "a": [20, 30], "b": ["bb", "c"]}, schema=schema))
    fr = cat.get_table("db.fr")
    fr.compact(full=True)
    got = cat.get_table("db.fr").to_arrow()
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "a": 1, "b": "a"}, {"k": 2, "a": 2, "b": "b"}, {"k": 3, "a": 30, "b": "c"}]


@pytest.mark.parametrize("ptype", [pa.string(), pa.int32(), pa.date32(), pa.float64(), pa.decimal128(9, 2)])
def test_partition_columns_come_back_as_their_values(tmp_path, ptype):
    """Output-only partition columns are filled from the partition value instead of decoded."""
    import decimal

    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    raw = {"pk": [0, 1, 3, 2], "append": [0, 1, None, 2]}  # primary keys are never null
    values = {
        pa.string(): lambda v: None if v is None else ("" if v == 2 else f"p{v}"),
        pa.int32(): lambda v: v,
        pa.date32(): lambda v: None if v is None else dt.date(2024, 1, 1 + v),
        pa.float64(): lambda v: None if v is None else v + 0.5,
        pa.decimal128(9, 2): lambda v: None if v is None else decimal.Decimal(v) / 4,
    }[ptype]
    schema = pa.schema([("k", pa.int64()), ("p", ptype), ("v", pa.string())])
    for name, pk in (("pk", ["k", "p"]), ("append", [])):
        t = cat.create_table(f"db.{name}", schema, primary_keys=pk, partition_keys=["p"],
                             options={"bucket": "2" if pk else "-1", "write-only": "true"})
        rows = [{"k": i, "p": values(raw[name][i % 4]), "v": f"v{i}"} for i in range(40)]
        t.write_arrow(pa.Table.from_pylist(rows, schema=schema))
        if pk:
            t.write_arrow(pa.Table.from_pylist(rows[::3], schema=schema))
        got = cat.get_table(f"db.{name}").to_arrow()
        assert got.schema == cat.get_table(f"db.{name}").arrow_schema
        key = lambda r: r["k"]  # noqa: E731
        assert sorted(got.to_pylist(), key=key) == rows
        one = values(1)
        got = cat.get_table(f"db.{name}").to_arrow(columns=["v", "p"], filter=[("p", "=", one)])
        assert got.schema.names == ["v", "p"]
        assert sorted(got.column("v").to_pylist()) == sorted(r["v"] for r in rows if r["p"] == one)
        assert set(got.column("p").to_pylist()) == {one}
