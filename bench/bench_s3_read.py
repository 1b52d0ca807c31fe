"""Parquet data files on S3: pyarrow's native S3FileSystem against pyarrow over s3fs.

Starts moto's S3 server on loopback, writes data files shaped like the table's (sorted int64 key,
system columns, strings and doubles), then reads and writes them through:

- ``s3fs``: ``pq.ParquetFile(pa.PythonFile(s3fs.open(path)))`` - what `S3FileIO` did before;
- ``pyfs``: ``PyFileSystem(FSSpecHandler(s3fs)).open_input_file(path)`` - pyarrow over s3fs;
- ``native``: ``pyarrow.fs.S3FileSystem`` configured from the same storage options
  (`lake_assets.io.s3.native_arrow_s3`);
- ``whole`` (reads only): one GET of the whole object into memory (``s3fs.cat_file``).

``--batched`` measures instead the batched read (`iter_parquet`, what ``Table.to_batches``, streams
and compaction's run readers do) of one-row-group files at ``read.parquet.buffer-size`` 0 / 1 MiB /
8 MiB through the native client and s3fs opened plainly (s3fs with its read-ahead cache of
``default_block_size``, 50 MiB; each column streamed ``buffer`` at a time), and as the library
reads a data file on S3 (`iter_data_file` over `S3FileIO` with either client: whatever the tree
under ``PYTHONPATH`` does - session 10's `open_input_chunked` and 8 MiB asks, session 11's row
group plan of `formats.parquet_chunk_plan`; footers parsed on every read, as a first read does):
seconds (wall and CPU), the GET requests and bytes each makes (counted by a proxy in front of
moto, in a separate pass: the proxy slows what it counts) and the most bytes held between batches
(in that pass: Arrow's pool plus Python's allocations as `tracemalloc` traces them - s3fs's cache
and its answers, which pyarrow keeps as Python bytes outside its pool). ``--columns`` reads a
projection (its budget is its columns' buffers: the row group plan streams the chunks above it).

Best of ``--repeat`` runs per step. moto is a Python server, so absolute numbers are far below
real S3; what matters is the ratio measured side by side (the request pattern: how many GETs of
which size each client issues for a footer, a projection, a whole file).

    .venv/bin/python bench/bench_s3_read.py [--rows 200000] [--files 6] [--small 40] [--repeat 3]
    PYTHONPATH=. .venv/bin/python bench/bench_s3_read.py --batched [--rows 500000] [--files 2] [--repeat 5]
        [--buffers 0,1,8] [--clients native,s3fs,S3FileIO native,S3FileIO s3fs]

To measure another tree with the same script: ``PYTHONPATH=/path/to/tree python bench/bench_s3_read.py ...``.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import tracemalloc
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from lake_assets.formats.data_file_read import iter_data_file
from lake_assets.formats.parquet_footer_cache import FOOTER_CACHE
from lake_assets.formats.parquet_read import iter_parquet
from lake_assets.io.s3 import S3FileIO, native_arrow_s3

MiB = 1024 * 1024
BUFFERS = (0, MiB, 8 * MiB)  # read.parquet.buffer-size: whole chunks, the default, a larger buffer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_moto() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    exe = Path(sys.executable).with_name("moto_server")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "moto.server"]
    proc = subprocess.Popen([*cmd, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("moto server did not start")


def data_file(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = np.sort(rng.choice(rows * 4, rows, replace=False)).astype(np.int64)
    return pa.table({
        "_KEY_id": keys,
        "_SEQUENCE_NUMBER": np.arange(rows, dtype=np.int64),
        "_VALUE_KIND": np.zeros(rows, dtype=np.int8),
        "id": keys,
        "name": pa.array([f"name-{k % 10007}" for k in keys]),
        "amount": rng.random(rows),
        "note": pa.array([f"note {k} {'x' * (k % 37)}" for k in keys]),
    })


def interleaved(repeat: int, kinds: list[str], step: Callable[[str], None]) -> dict[str, float]:
    """Best seconds per kind; the kinds take turns in every round, so that load from other
    processes on a shared machine hits all of them alike."""
    times: dict[str, list[float]] = {k: [] for k in kinds}
    for r in range(repeat):
        for k in kinds[r % len(kinds):] + kinds[: r % len(kinds)]:
            t0 = time.perf_counter()
            step(k)
            times[k].append(time.perf_counter() - t0)
    return {k: min(v) for k, v in times.items()}


class _Counting:
    """A proxy in front of moto that records each GET's path and body size (built on the
    reliability suite's fault proxy: ``PYTHONPATH=.``)."""

    def __init__(self, upstream: str) -> None:
        from tests.reliability.fault_proxy import FaultProxy

        gets: list[tuple[str, int]] = []

        class Proxy(FaultProxy):
            def _forward(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict, bytes]:
                status, head, data = super()._forward(method, path, headers, body)
                if method == "GET":
                    gets.append((path, len(data)))
                return status, head, data

        self.gets = gets
        self.proxy = Proxy(upstream).start()


def _held() -> int:
    """Bytes held now: Arrow's pool and Python's traced allocations (0 unless tracing)."""
    return pa.total_allocated_bytes() + (tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0)


def batched(args: argparse.Namespace, endpoint: str, bucket: str, options: dict[str, Any]) -> None:
    """The batched read of one-row-group files per client and ``read.parquet.buffer-size``."""
    counting = _Counting(endpoint)
    try:
        clients: dict[str, Callable[[str, int], Any]] = {}
        library: dict[str, S3FileIO] = {}  # clients read through iter_data_file

        for name, ep in (("", endpoint), ("counted ", counting.proxy.endpoint)):
            opts = {**options, "client_kwargs": {**options["client_kwargs"], "endpoint_url": ep}}
            s3 = fsspec.filesystem("s3", skip_instance_cache=True, **opts)
            native = native_arrow_s3(opts)
            assert native is not None
            io_native = S3FileIO(s3, opts)
            io_s3fs = S3FileIO(s3, {**opts, "profile": None})  # no native equivalent: s3fs serves reads
            clients[name + "native"] = lambda p, _b, n=native: n.open_input_file(p)  # type: ignore[misc]
            clients[name + "s3fs"] = lambda p, _b, s3=s3: pa.PythonFile(s3.open(p, "rb"), mode="r")  # type: ignore[misc]
            library[name + "S3FileIO native"], library[name + "S3FileIO s3fs"] = io_native, io_s3fs
        s3 = fsspec.filesystem("s3", **options)
        paths = [f"{bucket}/batched/data-{i}.parquet" for i in range(args.files)]
        for i, p in enumerate(paths):
            with s3.open(p, "wb") as f:
                pq.write_table(data_file(args.rows, 500 + i), f, row_group_size=args.rows, compression="zstd")
        mib = sum(s3.size(p) for p in paths) / MiB
        columns = args.columns.split(",") if args.columns else None
        rg = pq.ParquetFile(s3.open(paths[0])).metadata.row_group(0)
        sizes = {rg.column(j).path_in_schema: rg.column(j).total_compressed_size / MiB for j in range(rg.num_columns)}
        print(f"moto at {endpoint}; {args.files} files of {args.rows:,} rows in one row group ({mib:.1f} MiB; "
              f"chunks of the first, MiB: {', '.join(f'{n} {v:.2f}' for n, v in sizes.items())}); columns "
              f"{columns or 'all'}; batches of 65,536 rows; best of {args.repeat}; load {os.getloadavg()[0]:.1f}")

        def read(client: str, buffer: int) -> int:
            """Read every file; the most bytes held between batches (Arrow's pool + s3fs's cache)."""
            most = 0
            for p in paths:
                FOOTER_CACHE.clear()  # every read parses its footer (the plain clients have no cache)
                fio = library.get(client)
                src = clients[client](p, buffer) if fio is None else None
                start = _held()
                pieces = (iter_parquet(src, columns, 65536, buffer_bytes=buffer) if fio is None
                          else iter_data_file(fio, p, columns, 65536, buffer))
                for batch in pieces:
                    most = max(most, _held() - start - batch.nbytes)
                    del batch
                if src is not None:
                    src.close()
            return most

        buffers = [int(float(b) * MiB) for b in args.buffers.split(",")]
        kinds = [f"{c}@{b}" for c in args.clients.split(",") for b in buffers]
        wall: dict[str, list[float]] = {k: [] for k in kinds}
        cpu: dict[str, list[float]] = {k: [] for k in kinds}
        for r in range(args.repeat):
            for k in kinds[r % len(kinds):] + kinds[: r % len(kinds)]:
                client, buffer = k.split("@")
                t0, c0 = time.perf_counter(), time.process_time()
                read(client, int(buffer))
                wall[k].append(time.perf_counter() - t0)
                cpu[k].append(time.process_time() - c0)
        whole = min(wall.get("native@0", [float("nan")]))  # the unbounded whole-chunk read
        print("| client | read.parquet.buffer-size | wall s | / native 0 | CPU s | GETs | MiB got | largest GET MiB "
              "| most held MiB |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for k in kinds:
            client, buffer = k.split("@")
            counting.gets.clear()
            tracemalloc.start()
            held = read("counted " + client, int(buffer))
            tracemalloc.stop()
            got = [n for _, n in counting.gets]
            print(f"| {client} | {int(buffer) / MiB:g} MiB | {min(wall[k]):.3f} | {min(wall[k]) / whole:.2f}x | "
                  f"{min(cpu[k]):.3f} | {len(got)} | "
                  f"{sum(got) / MiB:.1f} | {max(got) / MiB:.2f} | {held / MiB:.1f} |", flush=True)
    finally:
        counting.proxy.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000, help="rows per big data file")
    parser.add_argument("--files", type=int, default=6, help="big data files")
    parser.add_argument("--small", type=int, default=40, help="small data files (1,000 rows each)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--batched", action="store_true", help="the batched read only (see above)")
    parser.add_argument("--buffers", default=",".join(str(b // MiB) for b in BUFFERS),
                        help="--batched: read.parquet.buffer-size values, MiB")
    parser.add_argument("--columns", default="", help="--batched: the columns read (comma-separated; all)")
    parser.add_argument("--clients", default="native,s3fs,S3FileIO native,S3FileIO s3fs",
                        help="--batched: the clients measured (comma-separated, see above)")
    args = parser.parse_args()

    proc, endpoint = start_moto()
    try:
        bucket = f"bench-{uuid.uuid4().hex[:8]}"
        boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                     region_name="us-east-1").create_bucket(Bucket=bucket)
        options = {"key": "testing", "secret": "testing", "use_listings_cache": False,
                   "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"}}
        if args.batched:
            batched(args, endpoint, bucket, options)
            return
        s3fs = fsspec.filesystem("s3", **options)
        native = native_arrow_s3(options)
        assert native is not None
        pyfs = pafs.PyFileSystem(pafs.FSSpecHandler(s3fs))

        opens: dict[str, Callable[[str], pa.NativeFile]] = {
            "s3fs": lambda p: pa.PythonFile(s3fs.open(p, "rb"), mode="r"),
            "pyfs": pyfs.open_input_file,
            "native": native.open_input_file,
            "whole": lambda p: pa.BufferReader(s3fs.cat_file(p)),
        }
        creates: dict[str, Callable[[str], Any]] = {
            "s3fs": lambda p: pa.PythonFile(s3fs.open(p, "wb"), mode="w"),
            "pyfs": pyfs.open_output_stream,
            "native": native.open_output_stream,
        }

        big = [data_file(args.rows, i) for i in range(args.files)]
        small = [data_file(1000, 100 + i) for i in range(args.small)]
        big_paths = [f"{bucket}/t/bucket-{i}/data-{i}.parquet" for i in range(args.files)]
        small_paths = [f"{bucket}/t/bucket-s/data-s{i}.parquet" for i in range(args.small)]
        opts = {"compression": "zstd", "write_statistics": True}

        def write_all(kind: str, tables: list[pa.Table], paths: list[str]) -> None:
            for t, p in zip(tables, paths, strict=True):
                sink = creates[kind](p)
                with pq.ParquetWriter(sink, t.schema, **opts) as w:
                    w.write_table(t)
                sink.close()

        def read_full(kind: str, paths: list[str]) -> None:
            for p in paths:
                with opens[kind](p) as src:
                    pq.ParquetFile(src).read()

        def read_cols(kind: str, paths: list[str]) -> None:
            for p in paths:
                with opens[kind](p) as src:
                    pq.ParquetFile(src).read(columns=["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "amount"])

        def read_parallel(kind: str, paths: list[str]) -> None:
            def one(p: str) -> None:
                with opens[kind](p) as src:
                    pq.ParquetFile(src).read(use_threads=False)
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(one, paths))

        write_all("native", big, big_paths)
        write_all("native", small, small_paths)
        mib = sum(s3fs.size(p) for p in big_paths) / 2**20
        print(f"moto at {endpoint}; {args.files} files of {args.rows:,} rows ({mib:.1f} MiB), "
              f"{args.small} files of 1,000 rows; best of {args.repeat}")
        steps: list[tuple[str, Callable[[str], None]]] = [
            ("write big files", lambda k: write_all(k, big, [p + f".{k}" for p in big_paths])),
            ("write small files", lambda k: write_all(k, small, [p + f".{k}" for p in small_paths])),
            ("read big files, all columns", lambda k: read_full(k, big_paths)),
            ("read big files, 4 of 7 columns", lambda k: read_cols(k, big_paths)),
            ("read small files one by one", lambda k: read_full(k, small_paths)),
            ("read small files, 4 threads", lambda k: read_parallel(k, small_paths)),
        ]
        kinds = list(opens)
        print("| step | " + " | ".join(f"{k} s" for k in kinds) + " | s3fs/native |")
        print("|---|" + "---:|" * (len(kinds) + 1))
        for name, step in steps:
            secs = interleaved(args.repeat, [k for k in kinds if name.startswith("read") or k in creates], step)
            cells = " | ".join(f"{secs[k]:.3f}" if k in secs else "—" for k in kinds)
            print(f"| {name} | {cells} | {secs['s3fs'] / secs['native']:.2f}x |", flush=True)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
