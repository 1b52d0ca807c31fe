"""What ``bench_maintenance.py``'s parts share: the seed, the key column, random strings and a timer."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

SEED = 20240604
KEY = "id"


def random_strings(rng: np.random.Generator, n: int) -> pa.Array:
    """``n`` random strings of 12-20 chars (~16 on average)."""
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
    lengths = rng.integers(12, 21, size=n)
    chars = alphabet[rng.integers(0, len(alphabet), size=int(lengths.sum()))]
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars.tobytes()))



def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(result, elapsed seconds) of ``fn()``, after a garbage collection."""
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start
