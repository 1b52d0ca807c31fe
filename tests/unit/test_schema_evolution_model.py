"""Schema evolution against a model: random sequences of adds, drops, renames, moves and widenings,
with writes between them; every snapshot reads as the model says (its own schema, old files cast)."""

from __future__ import annotations

import decimal
import tempfile
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog
from lake_assets.ops.schema_change import (
    SchemaUpdate,
)
from lake_assets.table import Table

D = decimal.Decimal


# ----------------------------------------------------------------------------------- property test
# Kinds of value columns the model knows, their Arrow types and lossless widenings.
KINDS: dict[str, pa.DataType] = {
    "i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64(),
    "f32": pa.float32(), "f64": pa.float64(), "d10": pa.decimal128(10, 2), "d12": pa.decimal128(12, 3),
    "str": pa.string(),
}
WIDER = {
    "i8": ["i16", "i32", "i64", "f64"], "i16": ["i32", "i64", "f64"], "i32": ["i64", "f64"],
    "f32": ["f64"], "d10": ["d12"],
}
NAMES = ["a", "b", "c", "d", "e"]


def _values(kind: str) -> st.SearchStrategy:
    base = {
        "i8": st.integers(-128, 127), "i16": st.integers(-(2**15), 2**15 - 1),
        "i32": st.integers(-(2**31), 2**31 - 1), "i64": st.integers(-(2**63), 2**63 - 1),
        # quarters are exact in float32, so the model can compare with ==
        "f32": st.integers(-4000, 4000).map(lambda x: x / 4), "f64": st.floats(allow_nan=False),
        "d10": st.integers(-(10**10) + 1, 10**10 - 1).map(lambda x: D(x).scaleb(-2)),
        "d12": st.integers(-(10**12) + 1, 10**12 - 1).map(lambda x: D(x).scaleb(-3)),
        "str": st.text(max_size=4),
    }[kind]
    return st.none() | base


@dataclass
class Model:
    """What the table should hold: column order and kinds, and the rows by key."""

    key: str = "k"
    columns: list[str] = field(default_factory=lambda: ["k", "a"])
    kinds: dict[str, str] = field(default_factory=lambda: {"k": "i64", "a": "i32"})
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    next_key: int = 0

    def rename(self, old: str, new: str) -> None:
        self.columns = [new if c == old else c for c in self.columns]
        self.kinds[new] = self.kinds.pop(old)
        for r in self.rows.values():
            r[new] = r.pop(old)
        if self.key == old:
            self.key = new


def _position(draw: Any, columns: list[str], exclude: str | None = None) -> Any:
    anchors = [c for c in columns if c != exclude]
    options: list[Any] = ["first", "last"] + [(w, c) for c in anchors for w in ("after", "before")]
    return draw(st.sampled_from(options))


def _place(columns: list[str], name: str, position: Any) -> list[str]:
    cols = [c for c in columns if c != name]
    if position == "first":
        return [name, *cols]
    if position in ("last", None):
        return [*cols, name]
    where, anchor = position
    i = cols.index(anchor) + (1 if where == "after" else 0)
    return [*cols[:i], name, *cols[i:]]


def _step(draw: Any, t: Table, m: Model) -> None:
    values = [c for c in m.columns if c != m.key]
    free = [n for n in NAMES if n not in m.columns]
    ops = ["write", "write"]
    if free:
        ops += ["add", "rename"]
    if len(values) > 1:
        ops.append("drop")
    if any(m.kinds[c] in WIDER for c in values):
        ops.append("widen")
    if len(m.columns) > 1:
        ops.append("move")
    op = draw(st.sampled_from(ops))
    if op == "write":
        keys = draw(st.lists(st.sampled_from(sorted(m.rows)), max_size=2, unique=True)) if m.rows else []
        n_new = draw(st.integers(1 if not keys else 0, 3))
        keys += list(range(m.next_key, m.next_key + n_new))
        m.next_key += n_new
        batch = []
        for k in keys:
            r = {c: k if c == m.key else draw(_values(m.kinds[c])) for c in m.columns}
            m.rows[k] = r
            batch.append(r)
        t.write_arrow(pa.Table.from_pylist(batch, schema=t.arrow_schema))
    elif op == "add":
        name, kind = draw(st.sampled_from(free)), draw(st.sampled_from(sorted(KINDS)))
        pos = _position(draw, m.columns)
        SchemaUpdate(t.store).add_column(name, KINDS[kind], position=pos).commit()
        m.columns = _place(m.columns, name, pos)
        m.kinds[name] = kind
        for r in m.rows.values():
            r[name] = None
    elif op == "rename":
        old, new = draw(st.sampled_from(m.columns)), draw(st.sampled_from(free))
        SchemaUpdate(t.store).rename_column(old, new).commit()
        m.rename(old, new)
    elif op == "drop":
        name = draw(st.sampled_from(values))
        SchemaUpdate(t.store).drop_column(name).commit()
        m.columns.remove(name)
        del m.kinds[name]
        for r in m.rows.values():
            del r[name]
    elif op == "widen":
        name = draw(st.sampled_from([c for c in values if m.kinds[c] in WIDER]))
        kind = draw(st.sampled_from(WIDER[m.kinds[name]]))
        SchemaUpdate(t.store).update_column_type(name, KINDS[kind]).commit()
        m.kinds[name] = kind  # old values are exact in the wider type: the model keeps them
    else:
        name = draw(st.sampled_from(m.columns))
        pos = _position(draw, m.columns, exclude=name)
        SchemaUpdate(t.store).move_column(name, pos).commit()
        m.columns = _place(m.columns, name, pos)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_evolution_matches_model(data):
    with tempfile.TemporaryDirectory() as wh:
        cat = Catalog(wh)
        cat.create_database("db")
        t = cat.create_table("db.m", pa.schema([("k", pa.int64()), ("a", pa.int32())]), primary_keys=["k"],
                             options={"bucket": "2"})
        m = Model()
        for _ in range(data.draw(st.integers(1, 10), label="steps")):
            _step(data.draw, t, m)
            got = t.to_arrow()
            assert got.schema.names == m.columns
            assert [got.schema.field(c).type for c in m.columns] == [KINDS[m.kinds[c]] for c in m.columns]
            assert got.sort_by(m.key).to_pylist() == [m.rows[k] for k in sorted(m.rows)]
        # ids are never reused, whatever the history
        ids = [f.id for f in t.schema.fields]
        assert len(set(ids)) == len(ids) and max(ids) <= t.schema.highest_field_id
