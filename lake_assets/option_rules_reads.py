"""Registry rows of the options that say where Paimon readers start (``scan.*``, refused per read
by `lake_assets.table_support`) and the bounds of lake_assets' streaming reads (``read.*``,
``source.split.*``). `lake_assets.option_rules` merges them into the registry in their place.
"""

from __future__ import annotations

from lake_assets.option_types import MiB, OptionRule

R = OptionRule
READ_RULES: dict[str, OptionRule] = {r.key: r for r in (
    # ---- scans (refused per read by table_support: Paimon readers start where these say)
    R("scan.mode", "enum", "default", "Where Paimon readers start.", choices=(
        "default", "latest-full", "full", "latest", "compacted-full", "from-timestamp", "from-snapshot",
        "from-snapshot-full", "incremental", "from-file-creation-time"), fallback_keys=("log.scan",)),
    R("incremental-between-scan-mode", "enum", "auto", "What an incremental read of snapshot ids reads: "
      "auto (changelog files with a changelog producer, else delta), delta, changelog, or diff (the two "
      "snapshots' files diffed; Paimon 1.x). Between two tags Paimon diffs the tags' files whatever it says.",
      choices=("auto", "delta", "changelog", "diff"),
      note="read by Table.read_changes when its source argument is unset"),
    R("scan.snapshot-id", "long", None, "Snapshot Paimon readers start from.", minimum=1),
    R("scan.timestamp-millis", "long", None, "Time Paimon readers start from.", minimum=0,
      fallback_keys=("log.scan.timestamp-millis",)),
    R("scan.tag-name", "string", None, "Tag Paimon readers read."),
    # ---- read tuning: the bounds of a streaming read
    R("read.batch-size", "int", None, "Rows per batch of the file readers (Paimon's default: 1024).", minimum=1,
      note="lake_assets reads files, merges sorted runs and yields batches of this many rows (65536 when "
      "unset; Table.to_batches(batch_size=...) overrides it): with read.read-ahead it bounds a streaming "
      "read's memory. Parquet files are decoded a batch at a time, Avro files too (their source read a "
      "block and a 64 KiB read-ahead at a time), ORC files a stripe at a time (see orc.stripe.size)"),
    R("read.read-ahead", "int", None, "Batches each reading thread of a streaming read queues ahead of the "
      "consumer (lake_assets only; default 2; Table.to_batches(read_ahead=...) overrides it).", minimum=1,
      lake_assets_only=True),
    R("read.parquet.buffer-size", "size", 1 * MiB, "Bytes of each Parquet column chunk a batched read "
      "(Table.to_batches, streams, compaction) reads and holds at a time (lake_assets only; 0: whole column "
      "chunks, pyarrow's unbuffered read): per column a reader holds about this, the page it decodes and "
      "the column's dictionary, not a whole compressed row group. On S3 each read is one ranged GET, of "
      "at least 8 MiB (smaller ones pay a round trip each), and the client caches nothing beyond it; "
      "there the read columns' buffers are one budget per row group: chunks that fit it are read whole "
      "and fetched together, only larger ones streamed. Whole-file reads (to_arrow) read chunks whole.",
      minimum=0, lake_assets_only=True),
    R("streaming-read-overwrite", "bool", False, "Streaming reads also emit OVERWRITE snapshots."),
    R("streaming-read-append-overwrite", "bool", False, "Streaming reads of an append table also emit the "
      "files an OVERWRITE snapshot added (Paimon 1.2+).", note="as Paimon's DataTableStreamScan (HEAD's "
      "FollowUpScanner.getOverwriteChangesPlan): a stream of an append table (core and Spark source) reads "
      "the data files an OVERWRITE added, as +I rows, whatever changelog-producer or scan mode; the rows it "
      "replaced are not retracted, and a delete through deletion vectors (an OVERWRITE adding no file) "
      "emits nothing. Incremental reads of snapshot ids still skip OVERWRITEs, as Java's "
      "IncrementalDeltaStartingScanner does; primary-key tables follow streaming-read-overwrite instead"),
    R("source.split.target-size", "size", 128 * MiB, "Bytes of files Paimon's batch planner packs into one "
      "split of a bucket.", minimum=1, note="lake_assets plans one split per bucket; a stream's full phase "
      "packs as Java does to give each row the kind Java's reader gives it (ops/full_phase_kinds.py)"),
    R("source.split.open-file-cost", "size", 4 * MiB, "Bytes each file (or section) weighs at least when "
      "Paimon's batch planner packs splits.", minimum=1, note="as source.split.target-size"),
)}
