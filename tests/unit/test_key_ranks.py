"""`lsm.key_ranks.KeyRanks` (the deletion-vector lookup's search of string and composite keys)
against the general path (`lsm.key_membership.sorted_positions`) and a set model, on seeded random
keys: empty strings, non-ASCII, shared prefixes, keys the file lacks in one column only; and the
DV upsert rounds of partial-update and aggregation tables with such keys (the pair merge through
`KeyRanks`) against the same rounds on tables without deletion vectors."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.lsm.key_membership import sorted_positions
from lake_assets.lsm.key_ranks import KeyRanks, strictly_ascending
from lake_assets.ops import dv_old_values

_PIECES = ["", "a", "ab", "é", "日本", "\U0001f600", "z", "A", "\x00", "ab\x00", "Ω"]


def _string(rng: random.Random) -> str:
    return "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 4)))


def _key_order(key: tuple[object, ...]) -> tuple[object, ...]:
    """Paimon's order: strings by their UTF-8 bytes."""
    return tuple(v.encode() if isinstance(v, str) else v for v in key)


def _table(keys: list[tuple[object, ...]], types: list[pa.DataType]) -> pa.Table:
    names = [f"k{i}" for i in range(len(types))]
    return pa.table({n: pa.array([k[i] for k in keys], t) for i, (n, t) in enumerate(zip(names, types, strict=True))})


def _random_keys(rng: random.Random, types: list[pa.DataType], n: int) -> list[tuple[object, ...]]:
    def value(t: pa.DataType) -> object:
        return rng.randint(-3, 3) if pa.types.is_integer(t) else _string(rng)
    return sorted({tuple(value(t) for t in types) for _ in range(n)}, key=_key_order)


@pytest.mark.parametrize("types", [[pa.string()], [pa.large_string()], [pa.binary()], [pa.int32(), pa.string()],
                                   [pa.string(), pa.int64(), pa.string()]],
                         ids=["string", "large_string", "binary", "int32+string", "string+int64+string"])
def test_found_positions_are_the_general_paths(types: list[pa.DataType]) -> None:
    rng = random.Random(14)
    names = [f"k{i}" for i in range(len(types))]
    kinds = set()
    for _ in range(40):
        universe = _random_keys(rng, types, rng.randint(0, 120))
        if pa.types.is_binary(types[0]):
            universe = [tuple(v.encode() if isinstance(v, str) else v for v in k) for k in universe]
        file_keys = sorted(rng.sample(universe, rng.randint(0, len(universe))), key=_key_order)
        wanted = sorted(rng.sample(universe, rng.randint(0, len(universe))), key=_key_order)
        file_table, wanted_table = _table(file_keys, types), _table(wanted, types)
        ranks = KeyRanks.build(file_table)
        assert ranks is not None
        kinds.add(ranks.kind if file_keys else "")
        expected = sorted(i for i, k in enumerate(file_keys) if k in set(wanted))
        assert ranks.find(wanted_table).tolist() == expected
        if wanted:
            assert sorted_positions(file_table, wanted_table, names).tolist() == expected
        # per row, in any order, repeats included
        shuffled = wanted * 2
        rng.shuffle(shuffled)
        where = {k: i for i, k in enumerate(file_keys)}
        assert ranks.locate(_table(shuffled, types)).tolist() == [where.get(k, -1) for k in shuffled]
    assert "hash" in kinds and kinds & {"prefix", "exact"}  # both codings were checked


def test_a_key_twice_a_null_or_a_float_gets_no_index() -> None:
    assert KeyRanks.build(pa.table({"k": ["a", "a"]})) is None
    assert KeyRanks.build(pa.table({"k": ["a", None]})) is None
    assert KeyRanks.build(pa.table({"k": [1.0, 2.0]})) is None  # floats: Java's equality is not Arrow's
    assert KeyRanks.build(pa.table({"t": [1, 1], "k": ["a", "a"]})) is None
    # out of order or with shared prefixes: hashed, still exact
    for keys in ({"k": ["b", "a"]}, {"k": ["user-0000000000000001", "user-0000000000000002"]},
                 {"t": pa.array([1, 0], pa.int32()), "k": ["", "\x00"]}):
        table = pa.table(keys)
        ranks = KeyRanks.build(table)
        assert ranks is not None and ranks.kind == "hash"
        assert ranks.locate(table.take([1, 0])).tolist() == [1, 0]
    assert KeyRanks.build(pa.table({"k": ["a", "b"]})).kind == "exact"  # type: ignore[union-attr]
    # 16 bytes hold these whole (session 18; 8 bytes held their shared prefix only)
    assert KeyRanks.build(pa.table({"k": ["user-000001", "user-000002"]})).kind == "exact"  # type: ignore[union-attr]
    assert KeyRanks.build(pa.table({"k": ["user-00001-tail-of-the-id", "user-00002-tail-of-the-id"]})  # type: ignore[union-attr]
                          ).kind == "prefix"


@pytest.mark.parametrize(("keys", "ascending"), [
    ({"k": ["z", "é", "日", "\U0001f600"]}, True),  # UTF-8 byte order, not UTF-16's
    ({"k": ["é", "z"]}, False),
    ({"k": ["", "a", "ab"]}, True),
    ({"k": ["a", "a"]}, False),
    ({"t": [1, 1, 2], "k": ["b", "c", "a"]}, True),
    ({"t": [1, 1, 2], "k": ["c", "b", "a"]}, False),
    ({"t": [1, 2], "k": ["b", "b"]}, True),
    ({"t": [2, 1], "k": ["a", "b"]}, False),
])
def test_strictly_ascending_is_paimons_key_order(keys: dict[str, list[object]], ascending: bool) -> None:
    assert strictly_ascending(pa.table(keys)) is ascending


KEYS = {
    "string": [("id", pa.string())],
    "composite": [("tenant", pa.int32()), ("order_id", pa.string())],
}


def _rows(kind: str, numbers: np.ndarray, round_: int) -> pa.Table:
    names = [f"é{n % 5}-{'x' * (n % 4)}{n:04d}" if n % 3 else f"{n:04d}" for n in numbers.tolist()]
    keys = {"id": pa.array(names)} if kind == "string" else {
        "tenant": pa.array((numbers % 3).astype(np.int32)), "order_id": pa.array(names)}
    amount = pa.array([None if (n + round_) % 7 == 0 else float(n + round_) for n in numbers.tolist()], pa.float64())
    return pa.table({**keys, "amount": amount, "qty": pa.array((numbers * round_ % 11).astype(np.int32))})


@pytest.mark.parametrize("kind", sorted(KEYS))
@pytest.mark.parametrize("engine", ["partial-update", "aggregation"])
def test_dv_rounds_with_string_and_composite_keys_match_plain_tables(
        tmp_path: Path, kind: str, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    paired: list[int] = []
    real = dv_old_values.OldValues._pair_positions

    def spy(self: dv_old_values.OldValues, records: pa.Table, sources: list) -> np.ndarray | None:  # type: ignore[type-arg]
        at = real(self, records, sources)
        paired.append(-1 if at is None else at.size)
        return at

    monkeypatch.setattr(dv_old_values.OldValues, "_pair_positions", spy)
    schema = pa.schema([*KEYS[kind], ("amount", pa.float64()), ("qty", pa.int32())])
    keys = [name for name, _ in KEYS[kind]]
    tables = []
    for dv in (False, True):
        options = {"bucket": "2", "merge-engine": engine}
        if engine == "aggregation":
            options.update({"fields.amount.aggregate-function": "sum", "fields.qty.aggregate-function": "max"})
        if dv:
            options["deletion-vectors.enabled"] = "true"
        cat = Catalog(str(tmp_path / ("dv" if dv else "plain")))
        cat.create_database("db")
        tables.append(cat.create_table("db.t", schema, primary_keys=keys, options=options))
    rng = np.random.default_rng(3)
    for round_ in range(4):
        numbers = np.sort(rng.choice(300, 120, replace=False))
        batch = _rows(kind, numbers, round_)
        for table in tables:
            table.write_arrow(batch)
    plain, dv = (t.to_arrow().sort_by([(k, "ascending") for k in keys]) for t in tables)
    assert dv.equals(plain)
    assert paired and max(paired) > 0  # the pair merge took old rows found through KeyRanks
