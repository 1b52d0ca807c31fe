"""Avro schema resolution done once per writer schema: a plan that projects plainly decoded records.

fastavro's reader-schema resolution checks every field of every record against the reader schema,
which makes decoding a foreign writer's manifest (Java 0.9's, pypaimon's manifest lists) ~60%
slower than decoding our own. Most writer schemas differ from ours only in ways that need no work
per value; :func:`projection_for` works those differences out once per distinct writer schema, and
:meth:`Projection.apply` then turns records decoded with the writer schema alone (no resolution)
into exactly what resolution would return:

* reader fields the writer lacks get their default (only fields with a default: else no plan);
* writer fields the reader does not know are dropped;
* a writer's ``["null", T]`` where the reader requires ``T`` is checked for null per value;
* ``int`` read as ``long`` and a writer ``T`` read as ``["null", T]`` need nothing.

Anything else (other type changes, unions of several types, enums, maps) gets no plan (None): the
caller resolves those files record by record, which also produces the error for a writer schema
that cannot be read. Both schemas are in the form ``avro_record_paths`` gives them: named types
inlined, records named by path, logical types dropped.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

__all__ = ["Projection", "UnexpectedNull", "projection_for"]

_NUMBERS = {("int", "int"), ("int", "long"), ("long", "long")}
_SAME = frozenset({"null", "boolean", "float", "double", "bytes", "string"})

# Turns one decoded value into the reader's value (raises UnexpectedNull).
_Step = Callable[[Any], Any]


class UnexpectedNull(Exception):
    """A null where the reader schema requires a value; the caller re-reads with resolution to
    name the record and field."""


class _NoPlan(Exception):
    """The difference between the schemas needs fastavro's per-record resolution."""


def _non_null(schema: Any) -> tuple[Any, bool]:
    """(the one non-null branch, whether null is allowed); _NoPlan for unions of several types."""
    if not isinstance(schema, list):
        return schema, False
    branches = [b for b in schema if b != "null"]
    if len(branches) != 1 or len(schema) != len(branches) + 1:
        raise _NoPlan
    return branches[0], True


def _kind(schema: Any) -> str:
    return str(schema["type"] if isinstance(schema, dict) else schema)


def _required(step: _Step | None) -> _Step:
    """``step`` (or nothing) after refusing a null."""

    def check(value: Any) -> Any:
        if value is None:
            raise UnexpectedNull
        return value if step is None else step(value)

    return check


def _optional(step: _Step) -> _Step:
    return lambda value: None if value is None else step(value)


def _plan(writer: Any, reader: Any) -> _Step | None:
    """The step from a value decoded by ``writer`` to ``reader``'s value; None when it is the same."""
    w, w_nullable = _non_null(writer)
    r, r_nullable = _non_null(reader)
    step = _plan_type(w, r)
    if w_nullable and not r_nullable:
        return _required(step)
    if step is None:
        return None
    return _optional(step) if w_nullable else step


def _plan_type(w: Any, r: Any) -> _Step | None:
    wk, rk = _kind(w), _kind(r)
    if wk == "record" and rk == "record":
        return _plan_record(w["fields"], r["fields"])
    if wk == "array" and rk == "array":
        item = _plan(w["items"], r["items"])
        if item is None:
            return None
        return lambda values: [item(v) for v in values]
    if (wk, rk) in _NUMBERS or (wk == rk and wk in _SAME):
        return None
    raise _NoPlan


def _plan_record(w_fields: list[dict[str, Any]], r_fields: list[dict[str, Any]]) -> _Step | None:
    by_name = {f["name"]: f["type"] for f in w_fields}
    known = {f["name"] for f in r_fields}
    drop = tuple(name for name in by_name if name not in known)
    defaults: dict[str, Any] = {}
    children: list[tuple[str, _Step]] = []
    for field in r_fields:
        name = field["name"]
        if name not in by_name:
            if "default" not in field:
                raise _NoPlan  # resolution reports the missing field
            defaults[name] = field["default"]
            continue
        child = _plan(by_name[name], field["type"])
        if child is not None:
            children.append((name, child))
    if not (drop or defaults or children):
        return None
    if any(isinstance(v, (dict, list)) for v in defaults.values()):
        raise _NoPlan  # a mutable default would be shared between records

    def project(rec: dict[str, Any]) -> dict[str, Any]:
        for name in drop:
            del rec[name]
        rec.update(defaults)
        for name, child in children:
            rec[name] = child(rec[name])
        return rec

    return project


class Projection:
    """Turns records decoded with a writer schema into the records resolution would return."""

    def __init__(self, step: _Step | None) -> None:
        self._step = step

    @property
    def identity(self) -> bool:
        """Whether records decoded with the writer schema already are the reader's records."""
        return self._step is None

    def apply(self, records: list[Any]) -> list[Any]:
        """``records`` projected in place; UnexpectedNull where the reader requires a value."""
        step = self._step
        if step is None:
            return records
        return [step(rec) for rec in records]


@functools.lru_cache(maxsize=64)
def _cached(writer_json: str, reader_json: str) -> Projection | None:
    try:
        return Projection(_plan(json.loads(writer_json), json.loads(reader_json)))
    except (_NoPlan, KeyError, TypeError):
        return None


def projection_for(writer: Any, reader_json: str) -> Projection | None:
    """The plan for reading ``writer``'s records as the reader schema ``reader_json`` (its JSON
    text), worked out once per distinct writer schema; None when only fastavro's per-record
    resolution can read them (or refuse them)."""
    return _cached(json.dumps(writer, sort_keys=True), reader_json)
