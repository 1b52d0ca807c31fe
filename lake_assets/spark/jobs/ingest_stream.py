"""The ingest job's ``--mode stream``: a streaming query into the table, stopped by SIGTERM.

Spark's file source (or a streaming Spark table) follows the input; the data source's
exactly-once streaming sink writes it, and the checkpoint keeps the source and sink positions.
"""

from __future__ import annotations

import signal
import threading
from typing import TYPE_CHECKING, Any

from lake_assets.spark.jobs.context import JobContext
from lake_assets.spark.jobs.errors import UsageError
from lake_assets.spark.jobs.logs import log

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def stream_trigger(text: str) -> dict[str, Any]:
    """``--trigger`` as `DataStreamWriter.trigger` arguments."""
    t = text.strip()
    if t.lower() in ("availablenow", "available-now"):
        return {"availableNow": True}
    key, sep, value = t.partition("=")
    if sep and key.strip().lower() in ("processingtime", "processing-time") and value.strip():
        return {"processingTime": value.strip()}
    raise UsageError(f"--trigger must be availableNow or processingTime=<interval>, got {text!r}")


def write_stream(ctx: JobContext, df: DataFrame, trigger: dict[str, Any]) -> dict[str, Any]:
    """Run the stream until it ends (``availableNow``), fails or SIGTERM stops it; what it did."""
    from lake_assets.spark import repartition_by_bucket
    from lake_assets.spark.source_options import STORAGE_PREFIX, storage_option_text

    routed = repartition_by_bucket(df, ctx.table)
    writer = (routed.writeStream.format("lake").outputMode("append")
              .option("warehouse", ctx.ref.warehouse).option("checkpointLocation", ctx.args.checkpoint)
              .queryName(f"lake_ingest_{ctx.table.name.replace('.', '_')}").trigger(**trigger))
    for k, v in ctx.ref.storage.items():
        writer = writer.option(STORAGE_PREFIX + k, storage_option_text(v))
    query = writer.start(ctx.ref.identifier)
    log.info("streaming into %s (query %s, trigger %s)", ctx.table.name, query.id, trigger)
    stop_requested = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        # spark-submit and Dagster stop a stream with SIGTERM. The handler only sets a flag: stopping
        # the query from inside it would break the py4j call the main thread is waiting in.
        def request_stop(signum: int, frame: Any) -> None:
            stop_requested.set()

        previous = signal.signal(signal.SIGTERM, request_stop)
    try:
        while not query.awaitTermination(1):  # raises if the query failed
            if stop_requested.is_set():
                log.info("SIGTERM: stopping the stream (a batch it interrupts is redone by the next run)")
                query.stop()
                break
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    progress = [p for p in query.recentProgress if p is not None]
    return {
        "query_id": str(query.id),
        "stopped_by_signal": stop_requested.is_set(),
        "batches": sum(1 for p in progress if (p.numInputRows or 0) > 0),
        "rows_in": sum(int(p.numInputRows or 0) for p in progress),
    }
