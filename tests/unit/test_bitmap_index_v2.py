"""Reading bitmap index version 2 (``formats/bitmap_index_v2.py``, Paimon 1.x's default) without a
peer: payloads pypaimon-rust 0.4 wrote (tests/data/bitmap_index_v2_rust_vectors.json, checked
against it by tests/interop/test_file_index_kinds_interop.py), with several index blocks, nulls and
values alone or repeated, give every value's rows; damaged ones raise `InvalidDataError`."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets.errors import InvalidDataError
from lake_assets.formats.bitmap_index import BitmapIndex
from lake_assets.spec.types import parse_type, to_arrow

VECTORS = json.loads((Path(__file__).parents[1] / "data" / "bitmap_index_v2_rust_vectors.json").read_text())["bitmaps"]


def _blocks(payload: bytes) -> int:
    has_null = payload[9]
    return int(struct.unpack_from(">i", payload, 10 + 8 * has_null)[0])


@pytest.mark.parametrize("case", VECTORS, ids=lambda c: c["paimon_type"])
def test_rusts_version_2_payloads_give_every_values_rows(case: dict[str, Any]) -> None:
    dt = parse_type(case["paimon_type"])
    payload = base64.b64decode(case["payload"])
    values = case["values"]
    assert payload[0] == 2 and _blocks(payload) > 1  # several index blocks
    index = BitmapIndex.parse(payload, dt)
    assert index.row_count == len(values)
    for v in {*values, None}:
        want = [i for i, x in enumerate(values) if x == v or (v is None and x is None)]
        assert list(index.rows_in(pa.array([v], to_arrow(dt)))) == want, v
    absent = "absent" if case["paimon_type"] == "STRING" else 10**9
    assert not index.rows_in(pa.array([absent], to_arrow(dt)))


@pytest.mark.parametrize("case", VECTORS[:1], ids=lambda c: c["paimon_type"])
def test_damaged_version_2_payloads_raise(case: dict[str, Any]) -> None:
    dt = parse_type(case["paimon_type"])
    payload = base64.b64decode(case["payload"])
    for cut in (5, 20, 60):
        with pytest.raises(InvalidDataError):
            BitmapIndex.parse(payload[:cut], dt)
    # a block directory pointing past the blocks
    at = 10 + 8 + 4
    (length,) = struct.unpack_from(">i", payload, at)
    bad = bytearray(payload)
    struct.pack_into(">i", bad, at + 4 + length, 1 << 20)
    with pytest.raises(InvalidDataError):
        BitmapIndex.parse(bytes(bad), dt)
