"""TPC-H ``lineitem`` benchmark (issue 8): load, upserts, compaction, reads and expiry side by side.

The one command is ``bench/bench_tpch.py``. Modules:

- `generate`: ``tpchgen-cli`` output, conformed to the benchmark's input schema;
- `workload`: the upsert/delete rounds, the small commits and the reference content (pyarrow + numpy);
- `measure`: per-step seconds and peak memory inside a worker process (stdlib only);
- `verify`: sorted-content comparison against the reference (pyarrow only);
- `worker`: the subprocess entry point; `systems`: one module per system;
- `report`: tables, targets and the chart; `hotspots`: the cProfile summary.

`measure`, `verify` and `worker` also run under ``.venv-paimon`` (pyarrow 19, no lake_assets).
"""
