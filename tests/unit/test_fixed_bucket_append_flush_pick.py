"""When a fixed-bucket append writer compacts: once per commit, after its last flush, though a
round that overflows ``write-buffer-size`` flushes level-0 files before it.

Java 0.9's ``AppendOnlyWriter`` triggers its ``BucketedAppendCompactManager`` after every flush:
with the default ``write-buffer-for-append = false`` (``DirectSinkWriter``) the only flush of a
round is ``prepareCommit``'s, one pick per commit as here. With a non-spillable write buffer
(``write-buffer-for-append = true``, ``write-buffer-spillable = false``) a full buffer flushes
mid-round and triggers a pick in the background; a trigger while one runs does nothing, and
``prepareCommit`` waits for the running one. lake_assets' one pick over all the commit's files is
the schedule Java takes when that first compaction outlasts the round: a best-effort pick slides a
window from the oldest file, so the first pick over a prefix of a single writer's files (the files
at a mid-round flush) is the pick over all of them whenever the prefix has one. Java's further
picks in one commit, when its compactions end quickly, are left to later commits here (docs/format.md
§7.3); the rows and their order are the same either way.
"""

from __future__ import annotations

import itertools
import random
import tempfile

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.lsm.bucketed_append import pick_bucketed_append
from lake_assets.spec.manifest import DataFileMeta, SimpleStats

_names = itertools.count()


def _files(rng: random.Random, n: int) -> list[DataFileMeta]:
    """One writer's files of a bucket: consecutive sequence ranges, random sizes."""
    out, seq = [], 0
    for _ in range(n):
        rows = rng.randint(1, 50)
        out.append(DataFileMeta(
            file_name=f"data-{next(_names)}.parquet", file_size=rng.choice([rng.randint(1, 40), rng.randint(80, 300)]),
            row_count=rows, min_key=b"", max_key=b"", key_stats=SimpleStats.EMPTY, value_stats=SimpleStats.EMPTY,
            min_sequence_number=seq, max_sequence_number=seq + rows - 1, schema_id=0, level=0))
        seq += rows
    return out


def test_the_first_pick_of_any_prefix_that_has_one_is_the_pick_of_all_the_files() -> None:
    rng = random.Random(7)
    checked = 0
    for _ in range(400):
        files = _files(rng, rng.randint(1, 14))
        target, min_files = rng.choice([50, 100, 200]), rng.randint(2, 5)
        max_files = rng.randint(min_files, 8)
        whole = pick_bucketed_append(files, target, min_files, max_files)
        for k in range(1, len(files) + 1):
            prefix = pick_bucketed_append(files[:k], target, min_files, max_files)
            if prefix:
                assert prefix == whole
                checked += 1
                break  # Java's first trigger that finds a pick: its compaction outlasts the round
        else:
            assert whole == []
    assert checked > 100  # the property was exercised, not only the empty case


def test_a_round_that_flushes_mid_round_compacts_once_after_its_last_flush() -> None:
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    cat = Catalog(tempfile.mkdtemp())
    cat.create_database("db")
    t = cat.create_table("db.t", schema, options={
        "bucket": "1", "bucket-key": "id", "write-buffer-size": "64kb", "target-file-size": "1mb"})
    w = t.new_writer("u")
    for i in range(12):  # each batch overflows the buffer: a level-0 flush mid-round
        w.write_arrow(pa.table({"id": range(i * 2000, (i + 1) * 2000), "v": [f"v{j:06d}" for j in range(2000)]},
                               schema=schema))
    [message] = w.prepare_commit()
    flushed = list(message.new_files)
    assert len(flushed) > 5  # flushed mid-round (the buffer holds a few batches)
    # one pick, over every file of the round: the first five (compaction.max.file-num's default),
    # what Java's first mid-round trigger (after the fifth flush) picks too
    assert list(message.compact_before) == pick_bucketed_append(flushed, 1 << 20, 5, 5) == flushed[:5]
    assert pick_bucketed_append(flushed[:4], 1 << 20, 5, 5) == []
    assert len(message.compact_after) == 1
    t.new_committer("u").commit([message], 0)
    ids = t.refresh().to_arrow().column("id").to_pylist()
    assert ids == list(range(24_000))  # every row, in input order
    w.close()
