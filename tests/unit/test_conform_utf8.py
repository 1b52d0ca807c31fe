"""Strings are checked before a write: the ASCII shortcut of `conform` refuses exactly what
Arrow's full validation refuses, with Arrow's message, in every input shape (plain, large,
view and dictionary strings, slices, chunked columns, nulls, broken offsets)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidDataError
from lake_assets.ops.conform import _validate


def _strings(data: bytes, offsets: list[int], large: bool = False, validity: pa.Buffer | None = None,
             null_count: int = -1) -> pa.Array:
    """A string array straight from buffers (pyarrow checks nothing here)."""
    width = np.int64 if large else np.int32
    typ = pa.large_string() if large else pa.string()
    return pa.Array.from_buffers(typ, len(offsets) - 1, [validity, pa.py_buffer(np.array(offsets, width).tobytes()),
                                                         pa.py_buffer(data)], null_count=null_count)


def _outcome(check, chunk: pa.Array) -> str | None:
    try:
        check(chunk)
    except pa.ArrowInvalid as exc:
        return str(exc)
    return None


def _arrow(chunk: pa.Array) -> None:
    chunk.validate(full=True)


BAD = _strings(b"ab\xffcd", [0, 2, 3, 5])  # the middle value is not UTF-8
SHAPES = {
    "ascii": _strings(b"abcdefgh-12", [0, 3, 8, 11]),
    "ascii large": _strings(b"abcdefgh-12", [0, 3, 8, 11], large=True),
    "utf8 not ascii": pa.array(["é", "x", "\U0001f600"]),
    "bad": BAD,
    "bad large": _strings(b"ab\xffcd", [0, 2, 3, 5], large=True),
    "bad last byte of 9": _strings(b"abcdefgh\xff", [0, 9]),
    "bad at the end of an 8-byte word": _strings(b"abcdefg\xff", [0, 8]),
    "slice around the bad value": BAD.slice(2, 1),
    "slice holding the bad value": BAD.slice(1, 1),
    "slice before the bad value": BAD.slice(0, 1),
    "bad bytes outside the values": _strings(b"\xffabc\xff", [1, 2, 4]),
    "truncated utf8": _strings("é".encode()[:1] + b"a", [0, 1, 2]),
    "offsets going back": _strings(b"abcdef", [0, 4, 2, 6]),
    "bad value under a null": _strings(b"a\xff", [0, 1, 2], validity=pa.py_buffer(b"\x01"), null_count=1),
    "wrong null count": _strings(b"ab", [0, 1, 2], validity=pa.py_buffer(b"\x01"), null_count=0),
    "bad dictionary": pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), BAD),
    "string view": pa.array(["ok", "fine"], pa.string_view()),
    "empty": pa.array([], pa.string()),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_validate_refuses_what_arrow_refuses_with_its_message(name: str) -> None:
    chunk = SHAPES[name]
    assert _outcome(_validate, chunk) == _outcome(_arrow, chunk)


def test_the_shapes_cover_both_outcomes() -> None:
    refused = {name for name, chunk in SHAPES.items() if _outcome(_arrow, chunk) is not None}
    assert {"bad", "bad large", "slice holding the bad value", "offsets going back",
            "truncated utf8", "bad at the end of an 8-byte word", "bad dictionary"} <= refused
    assert not {"ascii", "utf8 not ascii", "slice around the bad value", "bad bytes outside the values"} & refused


@pytest.mark.parametrize("column", [
    pa.chunked_array([pa.array(["fine", "ok"]), BAD]),
    pa.chunked_array([BAD.slice(1, 2)]),
    pa.chunked_array([_strings(b"ab\xffcd", [0, 2, 3, 5], large=True)]),
    pa.chunked_array([pa.DictionaryArray.from_arrays(pa.array([1], pa.int32()), BAD)]),
])
def test_a_write_with_bad_utf8_is_refused_and_changes_nothing(tmp_path, column: pa.ChunkedArray) -> None:
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    t = cat.create_table("db.t", pa.schema([("id", pa.int64()), ("s", pa.string())]), primary_keys=["id"],
                         options={"bucket": "1"})
    rows = pa.table({"id": pa.array(np.arange(len(column)), pa.int64()), "s": column})
    with pytest.raises(InvalidDataError, match=r"column 's' has values that do not fit string: .*UTF8"):
        t.write_arrow(rows)
    assert t.store.snapshot_manager.latest() is None
    t.write_arrow(pa.table({"id": [1, 2], "s": ["ok", "é"]}))
    assert sorted(t.to_arrow().column("s").to_pylist()) == ["ok", "é"]
