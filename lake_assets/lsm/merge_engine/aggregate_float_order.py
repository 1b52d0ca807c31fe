"""``min`` and ``max`` of FLOAT / DOUBLE columns in Java's order, vectorized.

Paimon's FieldMinAgg / FieldMaxAgg compare with ``InternalRowUtils.compare``, which is
``Float.compare`` / ``Double.compare`` (Java 0.9 and HEAD alike): a total order where -0.0 is
below 0.0 and every NaN is equal to every other and above +Infinity. Arrow's grouped min/max
skip NaN and treat -0.0 and 0.0 as equal, so ``max(1.0, NaN)`` would be 1.0 where Java gives
NaN. Ties: ``max`` keeps the accumulator (``compare(acc, v) < 0 ? v : acc``: the first of equal
values), ``min`` takes the input (``compare(acc, v) < 0 ? acc : v``: the last); equal values
differ only in a NaN's payload bits, which the chosen record's value keeps.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_BITS: dict[np.dtype, type[np.signedinteger]] = {np.dtype(np.float64): np.int64, np.dtype(np.float32): np.int32}


def java_order_keys(v: np.ndarray) -> np.ndarray:
    """Signed integers ordered as Java's ``Double.compare`` / ``Float.compare`` orders ``v``."""
    bits_type = _BITS[v.dtype]
    # every NaN as the canonical positive quiet NaN (Java's compare uses doubleToLongBits)
    canonical = np.where(np.isnan(v), np.array(np.nan, dtype=v.dtype), v)
    bits = canonical.view(bits_type)
    # a negative float's magnitude bits run the wrong way: flip them (-0.0 becomes -1, under 0.0's 0)
    magnitude = bits_type(np.iinfo(bits_type).max)
    flipped: np.ndarray = np.where(bits < 0, bits ^ magnitude, bits)
    return flipped


def float_extreme(function: str, values: pa.Array, first: np.ndarray, sizes: np.ndarray) -> pa.Array | None:
    """``min`` / ``max`` of each run of ``values`` (no nulls; runs as `segment_reduce.runs_of`
    gives them) in Java's order; one value per run. None unless ``values`` is FLOAT or DOUBLE."""
    if not (pa.types.is_float32(values.type) or pa.types.is_float64(values.type)) or values.null_count:
        return None
    if not len(values):
        return values
    keys = java_order_keys(values.to_numpy(zero_copy_only=False))
    reduce = np.maximum if function == "max" else np.minimum
    extreme = np.repeat(reduce.reduceat(keys, first), sizes)
    pos = np.arange(len(keys), dtype=np.int64)
    hit = keys == extreme
    if function == "max":  # the first of equal values
        chosen = np.minimum.reduceat(np.where(hit, pos, len(keys)), first)
    else:  # the last
        chosen = np.maximum.reduceat(np.where(hit, pos, -1), first)
    return values.take(pa.array(chosen, type=pa.int64()))


__all__ = ["float_extreme", "java_order_keys"]
