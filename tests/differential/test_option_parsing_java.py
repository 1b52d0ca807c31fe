"""Edge texts of option values parsed by Paimon Java 0.9's own ``Options.get`` and by us.

Each text is given to Java under a ``CoreOptions`` key of each type (``Integer.parseInt``,
``Long.parseLong``, ``MemorySize.parse``, ``TimeUtils.parseDuration``, the boolean conversion,
``Double.parseDouble``): we accept a text exactly when Java does, with the same value. The rules
over generated strings are tests/property/test_option_parsing_rules.py.
"""

from __future__ import annotations

import pytest

from lake_assets.errors import OptionError
from lake_assets.option_types import OptionRule, parse_value
from tests.java.oracle import JavaError, PaimonJava

# (our kind, a Paimon 0.9 CoreOptions key of that type)
KEYS = [("int", "num-sorted-run.compaction-trigger"), ("long", "scan.snapshot-id"), ("size", "target-file-size"),
        ("duration", "snapshot.time-retained"), ("bool", "write-only"), ("ratio", "lookup.cache.bloom.filter.fpp")]
TEXTS = [
    "5", "+5", "-5", "0", "007", " 5", "5 ", "\t5", "1_000", "\u0663\u0664", "\U0001d7d9", "\uff15", "", "+", "-",
    "2147483647", "2147483648", "-2147483648", "9223372036854775808", "0x10", "1.0", "5\u00a0",
    "true", "FALSE", "tRuE", " true", "false\n", "fal\u017fe", "yes",
    "10 s", " 10 s ", "10s\t", "10\u00a0s", "10 S", "10 min", "10 mb", "1.5 mb", "10 MB", "\x0b10 kb", "10 kib",
    f"{2**63 // 60} min", f"{2**63 - 1} s", f"{2**63 - 1} ms", f"{2**43} tb",
    "0.5", ".5", "5.", "0.5f", "0.5D", "0x1p-1", "1e-1", "Infinity", "NaN", "inf", "0_5", "\u0660.5", " 0.25 ",
]


def _ours(kind: str, text: str) -> str | None:
    try:
        value = parse_value(OptionRule("k", kind), text)
    except OptionError:
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


def _java(java: PaimonJava, key: str, text: str) -> str | None:
    try:
        res = java.option_value(key, text)
    except JavaError:
        return None
    return res["value"].lower() if res["type"] == "Boolean" else res["value"]


@pytest.mark.parametrize(("kind", "key"), KEYS)
def test_option_texts_parse_as_java(java: PaimonJava, kind: str, key: str) -> None:
    differ = {}
    for text in TEXTS:
        ours, theirs = _ours(kind, text), _java(java, key, text)
        if kind == "ratio" and theirs is not None:
            v = float(theirs)
            theirs = str(v) if 0.0 <= v <= 1.0 else None  # a ratio is bounded; Java's key is a Double
        if ours != theirs:
            differ[text] = (ours, theirs)
    assert differ == {}
