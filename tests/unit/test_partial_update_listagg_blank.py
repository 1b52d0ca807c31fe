"""Partial-update's ``listagg`` in a sequence group after a blank image (Paimon HEAD 5dacde5, 2.0+).

HEAD's ``PartialUpdateMergeFunction`` starts a key's row from a record's whole image (``initRow``:
a key's leading -U/-D, a remove-record-on-sequence-group -D) and then folds the group's values onto
it with ``FieldListaggAgg.agg`` (``aggReversed`` for an older group sequence: ``agg(v, acc)``).
Since #8480 ("Ignore blank values in FieldListaggAgg", FieldAggregatorTest
``testFieldListAggWithDefaultDelimiterIgnoringBlankValues``) ``agg(acc, v)`` is ``acc`` for a
null/blank ``v`` and ``v`` for a null/blank ``acc``: a blank image stays until a non-blank value
comes, as for the aggregation engine (`aggregate_reset`, test_aggregation_reset_functions.py).
HEAD's PartialUpdateMergeFunctionTest uses listagg only on its key column, so each expected value
is worked out from those two sources. Java 0.9 joined blanks and predates ``initRow``: no
differential test.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from tests.unit.engine_records import DEL, INS, KIND, UB, pu, run

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("c", pa.string()), ("s", pa.int64())])
# listagg cannot retract (FieldListaggAgg.retract throws): a leading retraction's own retraction
# needs ignore-retract, which keeps the accumulator
GROUP = {"fields.s.sequence-group": "c", "fields.c.aggregate-function": "listagg", "fields.c.ignore-retract": "true"}
IGNORE = {**GROUP, "ignore-delete": "true"}
ON_GROUP = {"fields.s.sequence-group": "c", "fields.c.aggregate-function": "listagg",
            "partial-update.remove-record-on-sequence-group": "s"}

CASES: list[tuple[str, dict[str, str], list[tuple[int, str | None, int]], tuple[int, Any]]] = [
    # (id, options, records (kind, c, s), (kind, c) of the merged key)
    ("blank image, null after", GROUP, [(UB, " ", 1), (INS, None, 2)], (INS, " ")),
    ("blank image, value after", GROUP, [(UB, " ", 1), (INS, "x", 2)], (INS, "x")),
    ("blank image, blank after", GROUP, [(UB, " ", 1), (INS, "\t", 2)], (INS, " ")),
    ("unicode blank image", GROUP, [(UB, " \u3000", 1), (INS, "y", 2)], (INS, "y")),
    ("blank image, older value (aggReversed)", GROUP, [(UB, " ", 2), (INS, "x", 1)], (INS, "x")),
    ("blank image alone in the merge", GROUP, [(UB, " ", 1), (INS, None, None)], (INS, " ")),
    ("non-blank image, blank then value", GROUP, [(UB, "a", 1), (INS, " ", 2), (INS, "b", 3)], (INS, "a,b")),
    ("no image: a blank insert is skipped", GROUP, [(INS, " ", 1), (INS, None, 2)], (INS, None)),
    ("ignore-delete: blank leading image", IGNORE, [(UB, " ", 1), (INS, None, 2)], (INS, " ")),
    ("ignore-delete: later blank -U dropped", IGNORE, [(INS, "a", 1), (UB, " ", 2)], (INS, "a")),
    ("sequence-group delete: blank image ends", ON_GROUP, [(INS, "a", 1), (DEL, " ", 2)], (DEL, " ")),
    ("sequence-group delete: blank then blank", ON_GROUP, [(INS, "a", 1), (DEL, " ", 2), (INS, " ", 3)],
     (INS, " ")),
    ("sequence-group delete: blank then value", ON_GROUP, [(INS, "a", 1), (DEL, " ", 2), (INS, "b", 3)],
     (INS, "b")),
]


@pytest.mark.parametrize(("options", "records", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_listagg_after_a_blank_image(options: dict[str, str], records: list[tuple[int, str | None, int]],
                                     expected: tuple[int, Any]) -> None:
    out = run(pu(SCHEMA, options), SCHEMA, [(kind, {"k": 1, "c": c, "s": s}) for kind, c, s in records])
    assert [(r[KIND], r["c"]) for r in out.to_pylist()] == [expected]
