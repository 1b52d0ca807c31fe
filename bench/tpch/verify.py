"""Content comparison against the reference: same rows, any order (pyarrow only, also pyarrow 19)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

KEYS = ("l_orderkey", "l_linenumber")  # not imported from `generate`: the pypaimon worker runs this too


def _plain(typ: pa.DataType) -> pa.DataType:
    return pa.string() if pa.types.is_large_string(typ) or pa.types.is_string_view(typ) else typ


def differences(result: pa.Table, reference: pa.Table) -> str | None:
    """None when ``result`` holds exactly the reference's rows and columns (extra columns such as the
    row-kind ``op`` are ignored), else a short description of the first difference."""
    missing = [n for n in reference.column_names if n not in result.column_names]
    if missing:
        return f"columns {missing} missing"
    if result.num_rows != reference.num_rows:
        return f"{result.num_rows:,} rows, expected {reference.num_rows:,}"
    got = result.select(reference.column_names)
    try:
        got = got.cast(pa.schema([pa.field(f.name, _plain(f.type)) for f in reference.schema]))
        ref = reference.cast(pa.schema([pa.field(f.name, _plain(f.type)) for f in reference.schema]))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        return f"schema {result.schema} does not cast to the reference's: {exc}"
    order = [(k, "ascending") for k in KEYS]
    got, ref = got.sort_by(order), ref.sort_by(order)
    for name in ref.column_names:
        a, b = got.column(name), ref.column(name)
        if not a.equals(b):
            unequal = pc.fill_null(pc.not_equal(a, b), True)
            return f"column {name!r} differs in {pc.sum(unequal).as_py():,} rows"
    return None


def reference(path: str, filter_terms: list | None = None) -> pa.Table:
    """The reference file, optionally restricted to rows matching (column, op, value) terms."""
    return pq.read_table(path, filters=[tuple(t) for t in filter_terms] if filter_terms else None)
