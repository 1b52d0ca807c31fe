"""Option texts parse exactly as Paimon Java parses them, over generated strings.

The rules below are written from Java's source (JDK 17 and Paimon 0.9's ``OptionsUtils``,
``MemorySize.parseBytes``, ``TimeUtils.parseDuration``), independently of the parser:

* int / long: ``Integer.parseInt`` / ``Long.parseLong`` of the text as is: an optional sign, then
  only characters ``Character.digit(c, 10)`` reads (Unicode Nd digits of the BMP); bounded.
* bool: ``toUpperCase()`` is ``TRUE`` or ``FALSE``; nothing trimmed.
* size / duration: ``String.trim()`` (characters up to U+0020), ASCII digits, the rest trimmed
  and lower-cased is a unit label or empty.
* ratio: ``Double.parseDouble`` (trimmed, Java's floating literal grammar) within [0, 1].

Python's ``int()`` / ``float()`` / ``strip()`` accept more (``1_000``, ``\\u00a05``, ``inf``,
digits beyond the BMP), which a Java reader would fail on.
"""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_assets.durations import UNIT_LABELS
from lake_assets.errors import OptionError
from lake_assets.option_types import INT_MAX, LONG_MAX, SIZE_UNIT_LABELS, OptionRule, parse_value

# characters where Python and Java differ, and what texts of options are made of
_ALPHABET = st.sampled_from(
    [*"0123456789+-_ .eExXpPfFdDabkmgtsinhyoucrlTRUEFALSEtruefalse",
     "\t", "\n", "\x00", "\x0b", "\x1f", "\x85", "\u00a0", "\u2003", "\u3000", "\u0663", "\u0966", "\uff15",
     "\U0001d7d9", "\u017f", "\u0130", "\u00b5", "\u212a", "\u00b2"]
)
TEXTS = st.one_of(
    st.text(_ALPHABET, max_size=12),
    st.from_regex(r"[ \t]?[+-]?[0-9]{1,21}[ \t]?(ms|s|min|h|d|mb|kb|b|gb)?[ \t]?", fullmatch=True),
    st.from_regex(r"[ \t]?[+-]?[0-9]*\.?[0-9]*([eE][+-]?[0-9]{1,3})?[fFdD]?[ \t]?", fullmatch=True),
)

_JAVA_WS = "".join(map(chr, range(0x21)))


def _java_digit(c: str) -> int | None:
    if ord(c) > 0xFFFF or unicodedata.category(c) != "Nd":
        return None
    return unicodedata.digit(c)


def _java_integer(s: str, bits: int) -> int | None:
    m = re.fullmatch(r"([+-]?)(.+)", s, re.DOTALL)
    if m is None or any(_java_digit(c) is None for c in m[2]):
        return None
    n = 0
    for c in m[2]:
        n = n * 10 + _java_digit(c)  # type: ignore[operator]
    n = -n if m[1] == "-" else n
    return n if -(2 ** (bits - 1)) <= n < 2 ** (bits - 1) else None


def _split_number(s: str) -> tuple[str, str]:
    t = s.strip(_JAVA_WS)
    i = 0
    while i < len(t) and "0" <= t[i] <= "9":
        i += 1
    return t[:i], t[i:].strip(_JAVA_WS).lower()


def _java_double(s: str) -> float | None:
    t = s.strip(_JAVA_WS)
    dec = r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?)"
    hexa = r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?"
    if re.fullmatch(dec, t, re.ASCII):
        return float(t.rstrip("fFdD").replace("Infinity", "inf"))
    if re.fullmatch(hexa, t, re.ASCII):
        return float.fromhex(t.rstrip("fFdD"))  # exponent digits are decimal: a final f/d is a suffix
    return None


def _ours(kind: str, s: str) -> object:
    try:
        return parse_value(OptionRule("k", kind), s)
    except OptionError:
        return None


@settings(max_examples=600, deadline=None)
@given(TEXTS)
def test_integers_as_java(s: str) -> None:
    assert _ours("int", s) == _java_integer(s, 32)
    assert _ours("long", s) == _java_integer(s, 64)


@settings(max_examples=400, deadline=None)
@given(st.one_of(TEXTS, st.sampled_from(["true", "FALSE", "tRuE", " true", "false ", "fal\u017fe", "yes", "1"])))
def test_booleans_as_java(s: str) -> None:
    expected = {"TRUE": True, "FALSE": False}.get(s.upper())
    assert _ours("bool", s) == expected


@settings(max_examples=600, deadline=None)
@given(TEXTS)
def test_sizes_and_durations_as_java(s: str) -> None:
    number, label = _split_number(s)
    sizes = {"": 1, "b": 1, "bytes": 1, "k": 1024, "kb": 1024, "kibibytes": 1024, "m": 2**20, "mb": 2**20,
             "mebibytes": 2**20, "g": 2**30, "gb": 2**30, "gibibytes": 2**30, "t": 2**40, "tb": 2**40,
             "tebibytes": 2**40}
    assert set(sizes) - {""} == set(SIZE_UNIT_LABELS)
    ok = bool(number) and label in sizes and int(number) * sizes[label] <= LONG_MAX
    assert _ours("size", s) == (int(number) * sizes[label] if ok else None)
    ms_per = {"": 1.0, "ms": 1.0, "s": 1e3, "min": 6e4, "h": 3.6e6, "d": 8.64e7}
    if not number or (label not in UNIT_LABELS and label != ""):
        assert _ours("duration", s) is None
    elif label in ms_per and int(number) * ms_per[label] < 2**62:  # far from any overflow
        assert _ours("duration", s) == int(number) * int(ms_per[label])


@settings(max_examples=600, deadline=None)
@given(TEXTS)
def test_ratios_as_java(s: str) -> None:
    d = _java_double(s)
    assert _ours("ratio", s) == (d if d is not None and 0.0 <= d <= 1.0 else None)


@pytest.mark.parametrize(("kind", "text", "value"), [
    ("int", "+7", 7), ("int", "\u0663", 3), ("int", "1_000", None), ("int", " 7", None), ("int", "7\n", None),
    ("int", "\U0001d7d9", None), ("int", str(INT_MAX + 1), None), ("long", str(INT_MAX + 1), INT_MAX + 1),
    ("bool", " true", None), ("bool", "fal\u017fe", False), ("size", "\u00a010 mb", None),
    ("size", "\x0010 mb\x1f", 10 * 2**20), ("duration", "\u200310 s", None), ("duration", "\x0b10 s\t", 10_000),
    ("duration", f"{LONG_MAX // 60 + 1} min", None), ("duration", f"{LONG_MAX} s", None),
    ("ratio", "0.5f", 0.5), ("ratio", "0x1p-1", 0.5), ("ratio", "0_5", None), ("ratio", "\u0660.5", None),
    ("ratio", "inf", None), ("ratio", "\u00a00.5", None), ("ratio", "\t.5 ", 0.5),
])
def test_edge_texts(kind: str, text: str, value: object) -> None:
    assert _ours(kind, text) == value


# Names Paimon matches (file formats, codecs): letters of the names, case, padding and the chars
# whose case mapping leaves ASCII (long s, dotless i, Kelvin sign, dotted I).
_NAME_ALPHABET = st.sampled_from([*"parquetorcavrozstdsnappygzipLZ4_RAWnonePARQUETZSTD", " ", "\t", "\n",
                                  "\u017f", "\u0131", "\u212a", "\u0130"])
_NAMES = st.one_of(st.text(_NAME_ALPHABET, max_size=9),
                   st.sampled_from(["parquet", "PARQUET", " orc", "avro ", "zstd", "ZSTD", "z\u017ftd", "none",
                                    "\u017fnappy", "lz4_raw", "NULL", "null", "zstandard"]))


def _string(key: str, s: str) -> object:
    from lake_assets.option_rules import rule_for

    rule = rule_for(key)
    assert rule is not None
    try:
        return parse_value(rule, s)
    except OptionError:
        return None


@settings(max_examples=500, deadline=None)
@given(_NAMES)
def test_names_as_java(s: str) -> None:
    from lake_assets.formats.format_options import AVRO_CODECS, FILE_CODECS
    from lake_assets.option_rules_layout import FILE_FORMATS, MANIFEST_COMPRESSIONS, SPILL_COMPRESSIONS

    # CoreOptions.normalizeFileFormat: toLowerCase, then a factory's identifier; never trimmed
    assert _string("file.format", s) == (s.lower() if s.lower() in FILE_FORMATS else None)
    # CompressionCodecName.fromConf / CompressionKind.valueOf(s.toUpperCase()) / BlockCompressionFactory
    upper = {c.upper(): c for c in FILE_CODECS}
    assert _string("file.compression", s) == upper.get(s.upper())
    assert _string("spill-compression", s) == {c.upper(): c for c in SPILL_COMPRESSIONS}.get(s.upper())
    # Avro's CodecFactory.fromString: exact
    assert _string("avro.codec", s) == (s if s in AVRO_CODECS else None)
    # Paimon's Avro writer: equalsIgnoreCase("zstd"), else Avro's exact name
    zstd = len(s) == 4 and s.upper() == "ZSTD"
    assert _string("manifest.compression", s) == ("zstd" if zstd else s if s in MANIFEST_COMPRESSIONS else None)
