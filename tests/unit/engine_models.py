"""Pure-Python models of the aggregation and partial-update engines (one record at a time, as
Paimon's field aggregators apply them), the Hypothesis strategies of record streams, and the
associativity checks that tests/unit/test_engines_models.py runs against the engines."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import pyarrow as pa
from hypothesis import event
from hypothesis import strategies as st

from lake_assets.errors import InvalidDataError
from lake_assets.lsm.merge_engine.function import MergeFunction
from tests.unit.engine_records import (
    DEL,
    INS,
    SEQ,
    UA,
    UB,
    Record,
    by_key,
    merge,
    raw_table,
    run,
)

# ---------------------------------------------------------------- pure-Python models


class CannotApply(Exception):
    """The model rejects the stream where the engine must raise InvalidDataError."""


class Acc:
    """One column's accumulator, applying records one at a time as Paimon's field aggregators do."""

    def __init__(self, func: str, ignore_retract: bool = False, delimiter: str = ",") -> None:
        self.func, self.ignore_retract, self.delimiter = func, ignore_retract, delimiter
        self.v: Any = None
        self.init = False

    def add(self, x: Any) -> None:
        f, v = self.func, self.v
        if f in ("sum", "product", "listagg", "bool_and", "bool_or", "min", "max"):
            if x is None:
                return
            if v is None:
                self.v = Fraction(x) if f == "product" else x
                return
            self.v = {
                "sum": lambda: v + x, "product": lambda: v * x, "listagg": lambda: v + self.delimiter + x,
                "bool_and": lambda: v and x, "bool_or": lambda: v or x,
                "min": lambda: min(v, x), "max": lambda: max(v, x),
            }[f]()
        elif f == "last_value":
            self.v = x
        elif f == "last_non_null_value":
            self.v = x if x is not None else v
        elif f == "first_value":
            if not self.init:
                self.init, self.v = True, x
        elif f == "first_non_null_value" and not self.init and x is not None:
            self.init, self.v = True, x

    def retract(self, x: Any) -> None:
        if self.ignore_retract:
            return
        f, v = self.func, self.v
        if f == "sum":
            self.v = (None if x is None else -x) if v is None else (v if x is None else v - x)
        elif f == "product":
            if x == 0 and v is not None:
                raise CannotApply(f)  # retracting a zero from a product: division by zero
            if x is not None:
                self.v = Fraction(x) if v is None else v / x
        elif f == "last_value":
            self.v = None
        elif f == "last_non_null_value":
            self.v = None if x is not None else v
        else:
            raise CannotApply(f)

    def value(self) -> Any:
        return int(self.v) if isinstance(self.v, Fraction) else self.v


def group_records(records: Sequence[Record]) -> dict[Any, list[Record]]:
    out: dict[Any, list[Record]] = {}
    for rec in records:
        out.setdefault(rec[1]["k"], []).append(rec)
    return out


def retracting(kind: int) -> bool:
    return kind in (UB, DEL)


def model_aggregation(records: Sequence[Record], funcs: Mapping[str, tuple[str, bool]], ignore_delete: bool,
                      remove_on_delete: bool) -> dict[Any, tuple[int, dict[str, Any]]]:
    out = {}
    for k, recs in group_records(records).items():
        if ignore_delete:
            recs = [r for r in recs if not retracting(r[0])]
        if not recs:
            continue
        accs = {c: Acc(f, ign) for c, (f, ign) in funcs.items()}
        deleted = False
        for kind, row in recs:
            if remove_on_delete and kind == DEL:
                # Paimon 1.4.1+ initRow: every column becomes the -D's image, which later records
                # aggregate onto; a first-value function's `initialized` flag is kept
                for c, acc in accs.items():
                    acc.v = Fraction(row[c]) if acc.func == "product" and row[c] is not None else row[c]
                deleted = True
                continue
            deleted = False
            for c, acc in accs.items():
                (acc.retract if retracting(kind) else acc.add)(row[c])
        out[k] = single_or(recs, (DEL if deleted else INS, {c: a.value() for c, a in accs.items()}))
    return out


def single_or(recs: Sequence[Record], folded: tuple[int, dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """A key's only record comes out as it is, kind included (Paimon's ReducerMergeFunctionWrapper);
    the fold still runs first, so a record the engine cannot apply is rejected either way."""
    if len(recs) == 1:
        kind, rec = recs[0]
        return kind, {c: rec[c] for c in folded[1]}
    return folded


def model_partial_update(records: Sequence[Record], cols: Sequence[str], ignore_delete: bool,
                         remove_on_delete: bool) -> dict[Any, tuple[int, dict[str, Any]]]:
    out = {}
    for k, recs in group_records(records).items():
        # Paimon 1.4.1+ PartialUpdateMergeFunction.add, record by record
        row: dict[str, Any] = dict.fromkeys(cols)
        deleted = seen_insert = False
        for i, (kind, rec) in enumerate(recs):
            deleted = False
            if retracting(kind):
                if i == 0:
                    row = {c: rec[c] for c in cols}  # initRow: before ignore-delete is looked at
                if ignore_delete:
                    continue
                if not remove_on_delete:
                    raise CannotApply("retract")
                if kind == DEL:
                    # the row becomes the -D's image (initRow) and is marked deleted
                    row, deleted = {c: rec[c] for c in cols}, True
                continue
            seen_insert = True
            row.update({c: rec[c] for c in cols if rec[c] is not None})
        out[k] = single_or(recs, (DEL if deleted or not seen_insert else INS, row))
    return out


def _seq_key(values: Sequence[Any]) -> tuple[tuple[Any, ...], ...]:
    return tuple((0,) if v is None else (1, v) for v in values)


def model_partial_update_groups(
    records: Sequence[Record], ungrouped: Sequence[str], groups: Sequence[tuple[tuple[str, ...], tuple[str, ...]]],
    funcs: Mapping[str, tuple[str, bool]], ignore_delete: bool = False,
) -> dict[Any, tuple[int, dict[str, Any]]]:
    """Plain grouped columns follow Paimon's record-at-a-time rule (a record not older than the
    group's current sequence wins); aggregated ones fold the group's records in sequence order.
    A key whose first record is a retraction starts from its whole image (Paimon 1.4.1+), which
    the retraction then retracts from its groups (unless ignore-delete drops it)."""
    out = {}
    for k, recs in group_records(records).items():
        has_insert = any(not retracting(kind) for kind, _ in recs)
        lead = recs[0][1] if retracting(recs[0][0]) else None
        counted = [(kind, rec) for kind, rec in recs if not (ignore_delete and retracting(kind))]
        vals: dict[str, Any] = {}
        for c in ungrouped:
            vals[c] = None if lead is None else lead[c]
            for kind, rec in recs:
                if not retracting(kind) and rec[c] is not None:
                    vals[c] = rec[c]
        for seq_cols, members in groups:
            current: tuple[Any, ...] | None = None
            plain = {m: None for m in members if m not in funcs}
            events = []
            if lead is not None:  # the image: sets the group, its sequence even if unset
                current = tuple(lead[c] for c in seq_cols)
                plain = {m: lead[m] for m in plain}
                events.append((_seq_key(current), -1, INS, lead))
            for idx, (kind, rec) in enumerate(counted):
                s = tuple(rec[c] for c in seq_cols)
                if all(v is None for v in s):
                    continue
                events.append((_seq_key(s), idx, kind, rec))
                if current is None or _seq_key(s) >= _seq_key(current):
                    current = s
                    for m in plain:
                        plain[m] = None if retracting(kind) else rec[m]
            vals.update(zip(seq_cols, current or (None,) * len(seq_cols), strict=True))
            vals.update(plain)
            events.sort(key=lambda e: (e[0], e[1]))
            for m in members:
                if m in funcs:
                    acc = Acc(*funcs[m])
                    for _, _, kind, rec in events:
                        (acc.retract if retracting(kind) else acc.add)(rec[m])
                    vals[m] = acc.value()
        out[k] = single_or(recs, (INS if has_insert else DEL, vals))
    return out


def engine_result(fn: MergeFunction, schema: pa.Schema, records: Sequence[Record]) -> Any:
    try:
        return by_key(run(fn, schema, records))
    except InvalidDataError:
        return "error"


def model_result(model: Any, *args: Any) -> Any:
    try:
        return model(*args)
    except CannotApply:
        return "error"


def assert_same(got: Any, expected: Any, cols: Sequence[str]) -> None:
    if expected == "error" or got == "error":
        event("both reject the stream")
        assert got == expected
        return
    event("results compared")
    assert set(got) == set(expected)
    for k, (kind, vals) in expected.items():
        assert got[k][0] == kind, (k, got[k], vals)
        if kind in (INS, UA):  # a retract row's values are internal (they only matter if merged again)
            assert {c: got[k][1][c] for c in cols} == {c: vals[c] for c in cols}, k


# ---------------------------------------------------------------- strategies

KINDS = st.sampled_from([INS, INS, UA, UB, DEL])
SMALL_INT = st.one_of(st.none(), st.integers(-5, 5))
NONZERO = st.one_of(st.none(), st.sampled_from([-3, -2, -1, 1, 2, 3]))
TEXT = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))
BOOL = st.one_of(st.none(), st.booleans())
SEQV = st.one_of(st.none(), st.integers(0, 4), st.integers(0, 4))

AGG_SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("i", pa.int32()), ("p", pa.int64()),
                        ("s", pa.string()), ("b", pa.bool_())])
INT_FUNCS = ["sum", "min", "max", "last_value", "last_non_null_value", "first_value", "first_non_null_value",
             "product"]
STR_FUNCS = ["listagg", "min", "max", "last_value", "last_non_null_value", "first_value", "first_non_null_value"]
BOOL_FUNCS = ["bool_and", "bool_or", "last_value", "last_non_null_value", "first_value"]


def stream(values: Mapping[str, st.SearchStrategy[Any]], kinds: st.SearchStrategy[int] = KINDS,
           max_size: int = 24, keys: int = 4) -> st.SearchStrategy[list[Record]]:
    row = st.fixed_dictionaries({"k": st.integers(0, keys - 1), **values})
    return st.lists(st.tuples(kinds, row), max_size=max_size)


AGG_STREAM = stream({"i": SMALL_INT, "p": NONZERO, "s": TEXT, "b": BOOL})


def agg_options(funcs: Mapping[str, tuple[str, bool]], ignore_delete: bool, remove: bool) -> dict[str, str]:
    opts = {f"fields.{c}.aggregate-function": f for c, (f, _) in funcs.items()}
    opts.update({f"fields.{c}.ignore-retract": "true" for c, (_, ign) in funcs.items() if ign})
    if ignore_delete:
        opts["ignore-delete"] = "true"
    if remove:
        opts["aggregation.remove-record-on-delete"] = "true"
    return opts


Split = tuple[int, int]
# (start, width) of the slice merged on its own; narrow slices are the interesting ones (a slice
# that holds only retractions of a key merges to a -D row that must act like them later).
SPLITS = st.lists(st.tuples(st.integers(0, 30), st.one_of(st.integers(0, 3), st.integers(0, 30))),
                  min_size=1, max_size=4)


def three_way(records: list[Record], split: Split) -> tuple[list[Record], list[Record], list[Record]]:
    lo = split[0] % (len(records) + 1)
    hi = min(len(records), lo + split[1])
    return records[:lo], records[lo:hi], records[hi:]


def merged_in_two_steps(fn: MergeFunction, schema: pa.Schema, records: list[Record], split: Split) -> pa.Table:
    """merge(X + merge(Y) + Z): Y merged on its own first, as a partial compaction would."""
    x, y, z = three_way(records, split)
    middle = merge(fn, raw_table(schema, y, first_seq=1 + len(x)))
    parts = [raw_table(schema, x, first_seq=1), middle, raw_table(schema, z, first_seq=1 + len(x) + len(y))]
    return merge(fn, pa.concat_tables(parts))


def assert_associative(fn: MergeFunction, schema: pa.Schema, records: list[Record], splits: list[Split],
                       resets: bool = False, leads: bool = False) -> None:
    """merge(X + merge(Y) + Z) == merge(X + Y + Z) for each split.

    With ``resets`` (remove-record-on-delete) slices where a retraction is followed by more
    records of its key are skipped (`retraction_then_more`): one merged row cannot say "reset,
    then these". With ``leads`` (partial-update's sequence groups or ignore-delete) slices where a
    key's first record is a retraction followed by more are skipped (`leading_retraction`): Paimon
    1.4.1+ starts such a key from the retraction's image only where a merge starts, so a merge in
    parts differs from one at once (`assert_parts_by_level` checks those against Paimon's rule).
    Sequence numbers start at 1 so that the 0 of a merged key of only ignored retractions sorts first.
    """
    full = visible(merge(fn, raw_table(schema, records, first_seq=1)))
    for split in splits:
        if resets and retraction_then_more(*three_way(records, split)):
            continue
        if leads and leading_retraction(three_way(records, split)[1]):
            continue
        assert visible(merged_in_two_steps(fn, schema, records, split)) == full, split


def leading_retraction(y: Sequence[Record]) -> bool:
    """Whether a key of ``y`` has more than one record there, the first of them a retraction."""
    return any(len(recs) > 1 and retracting(recs[0][0]) for recs in group_records(y).values())


def model_by_level(model: Any, x: Sequence[Record], y: Sequence[Record], z: Sequence[Record],
                   ignore_delete: bool) -> dict[Any, tuple[int, dict[str, Any]]]:
    """Paimon's merge function applied as a compaction by level does: to Y alone, then to X, Y's
    merged rows and Z in sequence order. A merged key of only ignored retractions has sequence
    number 0, so it comes first (before X's records of the key)."""
    middle = model(y)
    y_keys = group_records(y)
    ordered = [(1 + i, 0, r) for i, r in enumerate(x)]
    for k, (kind, row) in middle.items():
        recs = y_keys[k]
        only_ignored = ignore_delete and len(recs) > 1 and all(retracting(kd) for kd, _ in recs)
        ordered.append((0 if only_ignored else 1 + len(x), 1, (kind, {**row, "k": k})))
    ordered += [(1 + len(x) + len(y) + j, 2, r) for j, r in enumerate(z)]
    ordered.sort(key=lambda e: (e[0], e[1]))
    return model([r for _, _, r in ordered])  # type: ignore[no-any-return]


def assert_parts_by_level(fn: MergeFunction, schema: pa.Schema, records: list[Record], splits: list[Split],
                          cols: Sequence[str], ignore_delete: bool, model: Any) -> None:
    """merge(X + merge(Y) + Z) is what Paimon 1.4.1+ gives merging Y first, then the rest, for each
    split: the Java rule's own result by level wherever merging in parts differs from at once."""
    for split in splits:
        x, y, z = three_way(records, split)
        try:
            got: Any = by_key(merged_in_two_steps(fn, schema, records, split))
        except InvalidDataError:
            got = "error"
        expected = model_result(model_by_level, model, x, y, z, ignore_delete)
        assert_same(got, expected, cols)


def visible(table: pa.Table) -> dict[Any, Any]:
    """Kind, sequence and (for +I rows) values per key: what a later merge or a reader depends on."""
    return {k: (kind, row[SEQ], row if kind == INS else None) for k, (kind, row) in by_key(table).items()}


def retraction_then_more(x: Sequence[Record], y: Sequence[Record], z: Sequence[Record]) -> bool:
    """Whether a key of ``y`` holds a retraction and more records, in ``y`` or after it: merged on
    its own, ``y`` loses what the whole merge sees (a -U after a -D flips the row back to +I only
    if an insert came before; a leading -U's image is the row only at the start of a merge), as
    Paimon's merge of a writer's flush does."""
    later = set(group_records(z))
    return any(any(retracting(kind) for kind, _ in recs) and (len(recs) > 1 or k in later)
               for k, recs in group_records(y).items())
