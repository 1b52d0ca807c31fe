"""Deletion-vector tables keyed on a string and on composite keys, with Paimon Java 0.9.

Our compactions find such keys in the files above a unit through `lsm.key_ranks.KeyRanks` (codes
of 8 or 16 bytes, a candidate checked on the real keys unless its code holds every byte of the
key: (int64, DATE) and (short string, int32) keys, session 18) and merge a key's old row and its record column
by column (`lsm.merge_engine.pair_merge`). Java and we take turns writing and compacting one table
of random keys (empty strings, non-ASCII, shared prefixes, the same string under two tenants);
after each turn both read the same rows and our vectors mark exactly the positions Java reads.
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.lsm import key_ranks
from tests.java.oracle import PaimonJava

from .helpers import assert_same_rows
from .test_deletion_vectors_java import _assert_vectors_agree

KEYS = {
    "string": [pa.field("id", pa.string(), nullable=False)],
    "composite": [pa.field("tenant", pa.int32(), nullable=False), pa.field("id", pa.string(), nullable=False)],
    # fixed-width parts: exact order-preserving codes of 16 and 8 bytes (`lsm.key_codes`, session 18)
    "int64+date": [pa.field("tenant", pa.int64(), nullable=False), pa.field("day", pa.date32(), nullable=False)],
    "short-string+int32": [pa.field("code", pa.string(), nullable=False),
                           pa.field("n", pa.int32(), nullable=False)],
}
VALUES = [("a", pa.int64()), ("b", pa.string()), ("g", pa.int64())]
AGGREGATION = {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
               "fields.b.aggregate-function": "last_non_null_value", "fields.g.aggregate-function": "max"}
_PIECES = ["", "é", "日本", "user-0000", "user-0001", "z", "\U0001f600", "A"]


@pytest.mark.parametrize("kind", sorted(KEYS))
@pytest.mark.parametrize("options", [pytest.param({"merge-engine": "partial-update"}, id="partial-update"),
                                     pytest.param(AGGREGATION, id="aggregation")])
def test_turns_on_string_and_composite_keys_mark_the_rows_java_marks(
        java: PaimonJava, wh: str, lake: Catalog, kind: str, options: dict[str, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    located: list[int] = []
    kinds: set[str] = set()
    real = key_ranks.KeyRanks.locate

    def spy(self: key_ranks.KeyRanks, keys: pa.Table, codes: dict[str, np.ndarray] | None = None) -> np.ndarray:
        found = real(self, keys, codes)
        located.append(int(np.count_nonzero(found >= 0)))
        kinds.add(self.kind)
        return found

    monkeypatch.setattr(key_ranks.KeyRanks, "locate", spy)
    schema = pa.schema([*KEYS[kind], *VALUES])
    names = [f.name for f in KEYS[kind]]
    rng = random.Random(17)
    universe = sorted({(rng.randint(0, 2), "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 3))))
                       for _ in range(200)})
    if kind == "int64+date":  # tenants past 32 bits and below zero, days before and after the epoch
        universe = sorted({(rng.choice([-(1 << 40), -1, 0, 7, 1 << 40]), rng.randint(-400, 400)) for _ in range(200)})
    elif kind == "short-string+int32":  # codes of 0-2 characters ("" and "\0" apart), numbers of both signs
        universe = sorted({("".join(rng.choice(["", "a", "\x00", "é"]) for _ in range(rng.randint(0, 2))),
                            rng.randint(-60, 60)) for _ in range(200)})
    lake.create_table("db.ours", schema, primary_keys=names,
                      options={"deletion-vectors.enabled": "true", "bucket": "2", **options})
    marked = 0
    for step, who in enumerate(["ours", "ours", "java", "ours", "java-compact", "ours", "java", "ours"]):
        keys = rng.sample(universe, rng.randint(20, 60))
        if kind == "string":  # one row per string: the tenant is not part of this key
            keys = list({s: (t, s) for t, s in keys}.values())
        first, second = [k[0] for k in keys], [k[1] for k in keys]
        if kind in ("string", "composite"):
            columns = {"tenant": pa.array(first, pa.int32()), "id": second}
        elif kind == "int64+date":
            columns = {"tenant": pa.array(first, pa.int64()),
                       "day": pa.array(np.array(second, dtype=np.int32)).cast(pa.date32())}
        else:
            columns = {"code": pa.array(first, pa.string()), "n": pa.array(second, pa.int32())}
        data = pa.table({**{n: columns[n] for n in names},
                         "a": [rng.choice([None, step, -step]) for _ in keys],
                         "b": [rng.choice([None, f"s{step}"]) for _ in keys],
                         "g": [rng.randint(0, 9) for _ in keys]}, schema=schema)
        if who == "ours":
            lake.get_table("db.ours").write_arrow(data)
        elif who == "java":
            java.write(wh, "db.ours", data)
        else:
            java.compact(wh, "db.ours", full=False)
        table = lake.get_table("db.ours")
        assert_same_rows(table.to_arrow(), java.read(wh, "db.ours"))
        marked = max(marked, _assert_vectors_agree(java, wh, table))
    assert marked, "no turn left vectors: the turns tested no marks"
    assert located and max(located) > 0, "no key was found through KeyRanks"
    if kind in ("int64+date", "short-string+int32"):
        assert "exact" in kinds, kinds
