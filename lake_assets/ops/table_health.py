"""A table's per-bucket health as an Arrow table (what sensors and dashboards read)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_assets.errors import UnsupportedFeatureError
from lake_assets.ops import deletion_vectors
from lake_assets.ops.append_vectors import files_to_purge, keeps_append_vectors, per_bucket_vectors, vector_groups
from lake_assets.ops.health import bucket_health
from lake_assets.ops.plan import resolve_snapshot
from lake_assets.refusal import Op, refuse
from lake_assets.spec.manifest import DataFileMeta
from lake_assets.spec.snapshot import Snapshot
from lake_assets.store.read_once import reads_once

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore

HEALTH_SCHEMA = pa.schema(
    [
        ("partition", pa.string()),
        ("bucket", pa.int32()),
        ("file_count", pa.int64()),
        ("level0_file_count", pa.int64()),
        ("sorted_runs", pa.int64()),
        ("total_bytes", pa.int64()),
        ("avg_file_bytes", pa.float64()),
        ("small_file_count", pa.int64()),
        ("size_amplification_percent", pa.float64()),
        ("oldest_level0_age_ms", pa.int64()),
        ("delete_row_count", pa.int64()),
        ("compaction_would_trigger", pa.bool_()),
        # rows the bucket's deletion vectors hide, and their share of its rows (0 without vectors)
        ("deletion_vector_rows", pa.int64()),
        ("deleted_row_ratio", pa.float64()),
        # append tables with vectors: files a compaction rewrites because of their vector (small, or
        # hiding more than compaction.delete-ratio-threshold of their rows); they make
        # compaction_would_trigger true
        ("vector_purge_files", pa.int64()),
        # data files the bucket's deletion vectors name but the bucket does not hold: index entries
        # another writer left (a bucket may have vectors and no file at all); readers ignore them,
        # as Paimon Java does, and expiry / orphan removal keep their index files while referenced
        ("dangling_vector_files", pa.int64()),
        # rows a read of the bucket returns, from metadata: the files' rows (a data-evolution
        # table's row-id ranges, each once) less those deletion vectors hide; null where metadata
        # cannot tell (a primary-key bucket of several sorted runs or with retract rows, bucket-postpone)
        ("row_count", pa.int64()),
        # level0_file_count, sorted_runs, size_amplification_percent and oldest_level0_age_ms are
        # null on tables without a primary key: they have no LSM levels (`health.NO_LSM`)
        # (compaction_would_trigger is false throughout on a table whose compaction lake_assets
        # refuses, `compaction_refusal`: Table.compact would raise, whatever the files)
    ]
)


def local_now_as_utc_ms() -> int:
    # _CREATION_TIME is the writer's local wall clock encoded as UTC: compare on that clock.
    now = dt.datetime.now()
    return int(now.replace(tzinfo=dt.UTC).timestamp() * 1000)


def compaction_refusal(store: FileStore) -> str | None:
    """Why lake_assets refuses to compact the table (what its schema carries, e.g. an option of a
    newer Paimon), as `Table.compact` would raise it, or None. The one question health, Dagster's
    small-file sensor and its compaction asset ask: a compaction of such a table would only fail,
    however many small files it has."""
    try:
        refuse(store.name, Op.COMPACT, store.refusals())
    except UnsupportedFeatureError as exc:
        return str(exc)
    return None


@reads_once
def table_health(
    store: FileStore, *, snapshot_id: int | None = None, small_file_threshold: int | None = None
) -> pa.Table:
    """One row per (partition, bucket) with file counts, level-0 runs, small files, amplification,
    rows deletion vectors hide, (append tables with vectors) the files compaction would purge and
    the rows a read returns where metadata tells (see `HEALTH_SCHEMA`)."""
    snap = resolve_snapshot(store, snapshot_id)
    if snap is None:
        return HEALTH_SCHEMA.empty_table()
    scan = store.file_store_scan()
    groups: dict[tuple[str, int], list[DataFileMeta]] = defaultdict(list)
    for e in scan.live_entries(snap):
        groups[(store.partition_path_of(e.partition), e.bucket)].append(e.file)
    deleted, dangling = _deleted_rows(store, snap, groups)
    for key in dangling.keys() - groups.keys():  # vectors under a bucket without files: a row of its own
        groups[key] = []
    opts = store.schema.core_options
    rows = bucket_health(
        dict(sorted(groups.items())), num_levels=opts.num_levels, options=opts, now_ms=local_now_as_utc_ms(),
        small_file_threshold=small_file_threshold, table=store.name,
    )
    # unaware-bucket vectors: purged by their delete ratio; a fixed-bucket table's bucket is picked
    # as without vectors (lsm/bucketed_append.py), the health row's own rule
    append_vectors = keeps_append_vectors(store.schema) and not per_bucket_vectors(store.schema)
    compactable = compaction_refusal(store) is None
    out = []
    for r in rows:
        d = r.to_dict()
        files = groups[(r.partition, r.bucket)]  # type: ignore[index]
        counts = deleted.get((r.partition, r.bucket), {})  # type: ignore[arg-type]
        n = sum(counts.values())
        total = sum(f.row_count for f in files)
        d["deletion_vector_rows"] = n
        d["deleted_row_ratio"] = n / total if total else 0.0
        purge = len(files_to_purge(store.schema, files, counts)) if append_vectors and counts else 0
        d["vector_purge_files"] = purge
        d["dangling_vector_files"] = dangling.get((r.partition, r.bucket), 0)  # type: ignore[arg-type]
        # an append table with vectors: the planner's own groups, vectors applied (a file with a
        # vector is no small file to merge, whatever its size: it is purged or kept)
        planned = bool(vector_groups(store.schema, files, counts, full=False)) if append_vectors \
            else r.compaction_would_trigger
        d["compaction_would_trigger"] = compactable and planned
        d["row_count"] = None if r.row_count is None else r.row_count - n
        out.append(d)
    return pa.Table.from_pylist(out, schema=HEALTH_SCHEMA)


def _deleted_rows(
    store: FileStore, snap: Snapshot, groups: dict[tuple[str, int], list[DataFileMeta]]
) -> tuple[dict[tuple[str, int], dict[str, int]], dict[tuple[str, int], int]]:
    """Per (partition path, bucket), each live file's rows its deletion vector hides (by name),
    and how many files its vectors name that it does not hold (where there are such)."""
    if not deletion_vectors.enabled(store.schema) or not snap.index_manifest:
        return {}, {}
    loader = deletion_vectors.VectorLoader(store)
    out: dict[tuple[str, int], dict[str, int]] = {}
    dangling: dict[tuple[str, int], int] = {}
    for (partition, bucket), entries in deletion_vectors.snapshot_index(store, snap).items():
        key = (store.partition_path_of(partition), bucket)
        live = {f.file_name for f in groups.get(key, ())}
        named = {r.data_file for e in entries for r in e.dv_ranges or ()}
        if named - live:
            dangling[key] = len(named - live)
        if not live:
            continue  # nothing to count (and no vector to load: they hide no row a reader sees)
        counts = deletion_vectors.deleted_rows(store, entries, loader)
        out[key] = {name: n for name, n in counts.items() if name in live}
    return out, dangling
