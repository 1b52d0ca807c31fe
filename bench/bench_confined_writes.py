"""CPU cost of writing below a table root without following links out of it (`io.table_confinement`).

Usage: ``python bench/bench_confined_writes.py [rounds]``. Two measurements, each alternating the
confined `LocalFileIO` (as every table now uses) with the same class left unconfined (the plain
path writes it did before), in interleaved rounds, printing the median CPU seconds
(``time.process_time``) and the ratio confined / plain:

* ``fileio``: 1000 data files (``open_output`` of 4 KiB each, 10 partitions × 2 buckets of one
  table) plus 1000 ``write_bytes`` manifests and 200 ``try_create`` snapshots;
* ``table``: one ``write_arrow`` of 1000 rows into 1000 partitions of a primary-key table (1000
  data files, with their directories made) and its commit.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.io.local import LocalFileIO

PAYLOAD = b"x" * 4096


def _fileio_round(confined: bool) -> float:
    root = tempfile.mkdtemp() + "/wh/db.db/t"
    fio = LocalFileIO()
    if confined:
        fio.confine_to_table(root)
    start = time.process_time()
    for i in range(1000):
        out = fio.open_output(f"{root}/dt=p{i % 10}/bucket-{i % 2}/data-{i}.parquet")
        out.write(PAYLOAD)
        out.close()
        fio.write_bytes(f"{root}/manifest/manifest-{i}", PAYLOAD)
    for i in range(200):
        assert fio.try_create(f"{root}/snapshot/snapshot-{i}", b"{}")
    spent = time.process_time() - start
    shutil.rmtree(root.rsplit("/wh/", 1)[0])
    return spent


def _table_round(confined: bool) -> float:
    home = tempfile.mkdtemp()
    catalog = Catalog(f"{home}/wh")
    if not confined:  # the tables of this catalog written as before: plain paths
        catalog.file_io.confine_to_table = lambda root: None  # type: ignore[method-assign]
    catalog.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
    table = catalog.create_table("db.t", schema, primary_keys=["k", "dt"], partition_keys=["dt"],
                                 options={"bucket": "1"})
    rows = pa.table({"k": list(range(1000)), "dt": [f"p{i}" for i in range(1000)], "v": ["a"] * 1000},
                    schema=schema)
    start = time.process_time()
    table.write_arrow(rows)
    spent = time.process_time() - start
    shutil.rmtree(home)
    return spent


def _compare(name: str, run: Callable[[bool], float], rounds: int) -> None:
    times: dict[bool, list[float]] = {True: [], False: []}
    run(True), run(False)  # warm up: imports, caches
    for r in range(rounds):
        for confined in ((True, False) if r % 2 == 0 else (False, True)):
            times[confined].append(run(confined))
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    print(f"{name}: confined median CPU s {med[True]:.4f} {[round(v, 4) for v in times[True]]}; "
          f"plain {med[False]:.4f} {[round(v, 4) for v in times[False]]}; ratio {med[True] / med[False]:.3f}")


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    _compare("fileio", _fileio_round, rounds)
    _compare("table", _table_round, rounds)


if __name__ == "__main__":
    main()
