"""CPU seconds of a process tree sampled from /proc (Linux): a Spark JVM and its Python workers.

Shared by `bench_spark.py` and `bench_spark_floor.py`."""

from __future__ import annotations

import os
import threading
import time

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class TreeCpu:
    """CPU seconds of a process tree (the JVM and its Python workers), sampled every ``interval``.

    Each process counts its own user + system time, the last value seen (a process that ended
    keeps it). Not the reaped children's time (``cutime``): a Python worker whose parent ended
    first is reaped outside the tree, and its CPU then left the total, which went down (session
    16: a step measured -20 CPU s). A process that ends loses at most its last ``interval``; the
    sampler's own CPU is kept apart (`overhead`) so the driver's can leave it out."""

    def __init__(self, root: int, interval: float = 0.1) -> None:
        self.root = root
        self.interval = interval
        self.seen: dict[tuple[int, int], float] = {}  # (pid, start tick) -> CPU s: a reused pid is new
        self.overhead = 0.0
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(self.interval):
            self.sample()

    def sample(self) -> float:
        """Walk the tree now; the total CPU seconds of every process seen so far."""
        with self.lock:
            start = time.thread_time()
            stack = [self.root]
            while stack:
                pid = stack.pop()
                try:
                    with open(f"/proc/{pid}/stat") as fh:
                        fields = fh.read().rsplit(")", 1)[1].split()
                    tids = os.listdir(f"/proc/{pid}/task")
                except OSError:
                    continue
                self.seen[(pid, int(fields[19]))] = (int(fields[11]) + int(fields[12])) / _TICKS
                for tid in tids:
                    try:
                        with open(f"/proc/{pid}/task/{tid}/children") as fh:
                            stack += [int(c) for c in fh.read().split()]
                    except OSError:
                        continue
            self.overhead += time.thread_time() - start
            return sum(self.seen.values())

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
