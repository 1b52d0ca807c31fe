"""The sketch and bitmap aggregate functions: ``rbm32``, ``rbm64``, ``hll_sketch``, ``theta_sketch``.

Paimon's FieldRoaringBitmap32Agg, FieldRoaringBitmap64Agg, FieldHllSketchAgg and
FieldThetaSketchAgg (0.9 and HEAD agree): a VARBINARY column holds one serialized bitmap or
sketch per row; records of a key fold in sequence order with ``acc = agg(acc, value)``, where a
null on either side yields the other side *unchanged* (the same bytes) and two values yield their
union, serialized again:

- ``rbm32``: Java's ``RoaringBitmap`` (RoaringBitmap 1.0.5): deserialize both, ``or``,
  ``runOptimize``, portable serialization. pyroaring (CRoaring) writes the same bytes.
- ``rbm64``: Java's ``Roaring64Bitmap``, whose serialization is *not* the portable 64-bit format
  but RoaringBitmap's own ART layout (`lake_assets.lsm.merge_engine.roaring64_art`).
- ``hll_sketch``: DataSketches HLL (``HllSketchUtil.union``): a union heapified from the new value
  (so of its lg_k), updated with the accumulator, result as a compact HLL_4 image.
- ``theta_sketch``: DataSketches Theta (``ThetaSketch.union``): a default union (lg_k 12, seed
  9001) of both, result as an ordered compact image.

The sketches use Apache DataSketches' C++ library (package ``datasketches``), whose images are
the Java library's; what its C++ union writes differently is set as Java's does (Theta's
sampling probability and empty image, HLL's HIP accumulator - see `_hll_union`).

Inside partial-update sequence groups the records fold in group-sequence order (see
`partial_update`). That is Java's order when group sequences arrive in order; a record older than
the group's state is folded by Java as ``aggReversed`` (``agg(record, state)``), which for rbm32
and theta_sketch gives the same bytes, for rbm64 the same values in another ART layout and for
hll_sketch the same registers at the lg_k of the other side (Union.heapify takes the second
argument's) - the same distinct counts, not always the same bytes.

None of them can retract (Java's FieldAggregator.retract throws): a -U/-D is an error unless
``fields.<c>.ignore-retract`` is set. Each key group with two or more non-null values costs one
Python call per value after the first (the libraries have no batch union; the bitmaps stay in
memory between a group's steps, as deserializing Java's intermediate bytes would restore them);
single values are taken as they are, vectorized.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import InvalidDataError, OptionError
from lake_assets.lsm.merge_engine.grouping import segment_bounds, take_or_null, valid_mask

SKETCH_FUNCTIONS = frozenset({"rbm32", "rbm64", "hll_sketch", "theta_sketch"})


def check_sketch_column(column: str, dtype: pa.DataType, func: str) -> None:
    """Raise `OptionError` unless ``dtype`` can hold serialized bitmaps / sketches (Paimon: VARBINARY)."""
    if not (pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype) or pa.types.is_binary_view(dtype)):
        raise OptionError(
            f"Aggregate function {func!r} of column {column!r} needs a VARBINARY (BYTES) column, not {dtype}"
        )


# ---------------------------------------------------------------- unions of two values


def _rbm32_fold(values: list[bytes]) -> bytes:
    """Java's step-by-step fold; the bitmap stays in memory between steps: a run-optimized
    pyroaring bitmap is what deserializing its serialization gives back."""
    from pyroaring import BitMap

    merged = BitMap.deserialize(values[0])
    for value in values[1:]:
        merged |= BitMap.deserialize(value)
        merged.run_optimize()  # RoaringBitmap32.serialize runs runOptimize first
    out: bytes = merged.serialize()
    return out


def _rbm64_fold(values: list[bytes]) -> bytes:
    from lake_assets.lsm.merge_engine.roaring64_bitmap import fold_serialized

    return fold_serialized(values)


def _datasketches() -> Any:
    try:
        import datasketches  # type: ignore[import-untyped]
    except ImportError as e:  # pragma: no cover - a declared dependency
        raise InvalidDataError(
            "The hll_sketch / theta_sketch aggregate functions need the 'datasketches' package"
        ) from e
    return datasketches


# Theta compact images with two or more preamble longs carry the sampling probability p as a
# float at byte 12; Java writes the union's p (1.0), the C++ writer leaves it 0 (readers ignore it).
_THETA_P = struct.pack("<f", 1.0)
# An empty result is Java's EmptyCompactSketch image, whose seed hash is 0 (C++ writes the seed's).
_THETA_EMPTY_FLAG = 0x04
_THETA_EMPTY = bytes([1, 3, 3, 0, 0, 0x1E, 0, 0])


def _theta_union(acc: bytes, value: bytes) -> bytes:
    ds = _datasketches()
    union = ds.theta_union(12)  # Java: Sketches.setOperationBuilder().buildUnion() (4096 entries)
    union.update(ds.compact_theta_sketch.deserialize(acc))
    union.update(ds.compact_theta_sketch.deserialize(value))
    out = bytearray(union.get_result(True).serialize())
    if out[5] & _THETA_EMPTY_FLAG:
        return _THETA_EMPTY
    if out[0] & 0x3F >= 2:
        out[12:16] = _THETA_P
    return bytes(out)


# HLL image preamble: byte 3 lg_k, byte 5 flags, byte 7 low bits the mode, bytes 8-15 the HIP
# accumulator (HLL mode only).
_HLL_EMPTY, _HLL_OUT_OF_ORDER = 0x04, 0x10
_HLL_MODE_HLL = 2


def _hll_is_array(image: bytes) -> bool:
    """Whether a non-empty HLL image is in HLL (register array) mode, not LIST/SET."""
    return len(image) > 8 and not image[5] & _HLL_EMPTY and image[7] & 3 == _HLL_MODE_HLL


def _hll_in_order(image: bytes) -> bytes:
    out = bytearray(image)
    out[5] &= ~_HLL_OUT_OF_ORDER & 0xFF
    return bytes(out)


def _hll_union(acc: bytes, value: bytes) -> bytes:
    """HllSketchUtil.union(acc, value): Union.heapify(value) (lg_max_k = value's lg_k),
    update(acc), getResult(HLL_4).toCompactByteArray().

    When one side is in HLL mode and the other holds coupons (LIST/SET), Java copies the HLL side
    - HIP accumulator and out-of-order flag included - and adds the coupons to it, each raising the
    HIP, even on an out-of-order sketch; the C++ union drops the HIP of an out-of-order sketch and
    does not keep it when it downsamples. So the HLL side goes in flagged in-order (its HIP then
    survives and grows as in Java), downsampled first to the union's lg_k when larger (Java's
    Union.downsample keeps the HIP), and the flag is put back on the result.
    """
    ds = _datasketches()
    value_sk = ds.hll_sketch.deserialize(value)
    acc_sk = ds.hll_sketch.deserialize(acc)
    lg_max_k = value_sk.lg_config_k
    first, second = value_sk, acc_sk
    out_of_order = False
    acc_array, value_array = _hll_is_array(acc), _hll_is_array(value)
    acc_coupons = not acc_array and not acc_sk.is_empty()
    value_coupons = not value_array and not value_sk.is_empty()
    if acc_array and value_coupons:
        out_of_order = bool(acc[5] & _HLL_OUT_OF_ORDER)
        base = _hll_in_order(acc)
        if acc_sk.lg_config_k > lg_max_k:
            base = _hll_downsampled(ds, acc_sk, lg_max_k, acc[8:16])
        second = ds.hll_sketch.deserialize(base)
    elif value_array and acc_coupons:
        out_of_order = bool(value[5] & _HLL_OUT_OF_ORDER)
        first = ds.hll_sketch.deserialize(_hll_in_order(value))
    union = ds.hll_union(lg_max_k)
    union.update(first)
    union.update(second)
    out = bytearray(union.get_result(ds.tgt_hll_type.HLL_4).serialize_compact())
    if out_of_order and _hll_is_array(bytes(out)):
        out[5] |= _HLL_OUT_OF_ORDER
    return bytes(out)


def _hll_downsampled(ds: Any, sketch: Any, lg_k: int, hip: bytes) -> bytes:
    """``sketch`` folded to ``lg_k`` as Java's Union.downsample folds it (registers and KxQ by
    coupon updates, in order), carrying the HIP accumulator ``hip`` (raw bytes) as Java does."""
    folding = ds.hll_union(lg_k)
    folding.update(ds.hll_sketch.deserialize(_hll_in_order(sketch.serialize_updatable())))
    image = bytearray(folding.get_result(ds.tgt_hll_type.HLL_8).serialize_updatable())
    image[5] &= ~_HLL_OUT_OF_ORDER & 0xFF
    image[8:16] = hip
    return bytes(image)


def _pairwise(union: Callable[[bytes, bytes], bytes]) -> Callable[[list[bytes]], bytes]:
    def fold(values: list[bytes]) -> bytes:
        acc = values[0]
        for value in values[1:]:
            acc = union(acc, value)
        return acc

    return fold


# Each folds the non-null values of one key group (two or more), in order.
_FOLDS: dict[str, Callable[[list[bytes]], bytes]] = {
    "rbm32": _rbm32_fold,
    "rbm64": _rbm64_fold,
    "hll_sketch": _pairwise(_hll_union),
    "theta_sketch": _pairwise(_theta_union),
}


# ---------------------------------------------------------------- the fold


def fold_sketches(func: str, column: str, col: pa.Array, rows: np.ndarray, gid: np.ndarray, n_groups: int) -> pa.Array:
    """The union of each group's non-null ``col[rows]`` in entry order (null when none).

    ``rows`` hold no retractions (the caller dropped ignored ones and refused the others). A group
    with one non-null value gets it unchanged, as Java's ``agg(null, v)`` returns ``v``.
    """
    fold_group = _FOLDS[func]
    valid = valid_mask(col)[rows]
    sel_rows, sel_gid = rows[valid], gid[valid]
    first, last = segment_bounds(sel_gid)
    pick = np.full(n_groups, -1, dtype=np.int64)
    pick[sel_gid[first]] = sel_rows[first]
    result = take_or_null(col, pick)
    multi = np.flatnonzero(last > first)
    if len(multi) == 0:
        return result
    lengths = last[multi] - first[multi] + 1
    starts = np.repeat(first[multi] - np.cumsum(lengths) + lengths, lengths)
    positions = np.arange(int(lengths.sum()), dtype=np.int64) + starts
    values = col.take(pa.array(sel_rows[positions], type=pa.int64())).to_pylist()
    merged: list[bytes] = []
    offset = 0
    try:
        for n in lengths.tolist():
            merged.append(fold_group(values[offset: offset + n]))
            offset += n
    except (ValueError, RuntimeError, EOFError, IndexError, struct.error) as e:
        raise InvalidDataError(
            f"Aggregate function {func!r} of column {column!r} cannot merge a value that is not a valid "
            f"serialized {_WHAT[func]}: {e}"
        ) from e
    binary = pa.large_binary()
    slots = np.arange(n_groups, dtype=np.int64)
    slots[sel_gid[first[multi]]] = n_groups + np.arange(len(multi), dtype=np.int64)
    combined = pa.concat_arrays([result.cast(binary), pa.array(merged, type=binary)])
    return pc.cast(combined.take(pa.array(slots)), col.type)


_WHAT = {
    "rbm32": "32-bit RoaringBitmap",
    "rbm64": "Roaring64Bitmap",
    "hll_sketch": "HLL sketch",
    "theta_sketch": "Theta sketch",
}
