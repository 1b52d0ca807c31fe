"""Row selections over a data file: numpy boolean masks handed to Arrow's ``filter``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def arrow_mask(keep: np.ndarray) -> pa.BooleanArray:
    """``keep`` (a numpy bool array) as an Arrow boolean array.

    `pa.array` converts a numpy bool array element by element (about 160 us for 250,000 rows);
    packing the bits with numpy and wrapping the buffer takes under 10 us."""
    bits = np.packbits(np.asarray(keep, dtype=np.bool_), bitorder="little")
    return pa.BooleanArray.from_buffers(pa.bool_(), len(keep), [None, pa.py_buffer(bits)])


__all__ = ["arrow_mask"]
