"""Every table kind's lifecycle on a real S3 API (moto's server on loopback, through s3fs).

S3 has no atomic rename, lists prefixes rather than directories, and keeps no empty directories.
Each kind here - deletion vectors, postpone bucket, dynamic bucket, cross-partition upsert, row
tracking with data evolution, ORC and Avro files, file indexes in ``<file>.index`` and the
changelog producers - is created, written twice, read as changes, tagged, compacted (the kind's
own compaction, then full), expired and cleaned of orphans there; after each step the rows read
back as they must and every file a retained snapshot or the tag references is present
(`TableInvariants`), and the orphans planted in the table's directories are gone.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog
from tests.reliability.invariants import TableInvariants

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])

# kind -> (primary keys, partition keys, options)
KINDS: dict[str, tuple[list[str], list[str], dict[str, str]]] = {
    "deletion vectors": (["k", "dt"], ["dt"], {"bucket": "1", "deletion-vectors.enabled": "true"}),
    "postpone bucket": (["k", "dt"], ["dt"], {"bucket": "-2", "postpone.default-bucket-num": "2",
                                              "snapshot.clean-empty-directories": "true"}),
    "dynamic bucket": (["k", "dt"], ["dt"], {"bucket": "-1", "dynamic-bucket.target-row-num": "2",
                                          "snapshot.clean-empty-directories": "true"}),
    "cross-partition upsert": (["k"], ["dt"], {"bucket": "-1"}),
    "data evolution": ([], [], {"bucket": "-1", "row-tracking.enabled": "true",
                                    "data-evolution.enabled": "true", "compaction.min.file-num": "2"}),
    "orc": (["k", "dt"], ["dt"], {"bucket": "1", "file.format": "orc"}),
    "avro": (["k", "dt"], ["dt"], {"bucket": "1", "file.format": "avro"}),
    "file index": ([], ["dt"], {"bucket": "-1", "file-index.bloom-filter.columns": "k",
                                "file-index.in-manifest-threshold": "1 b", "compaction.min.file-num": "2"}),
    "changelog input": (["k", "dt"], ["dt"], {"bucket": "1", "changelog-producer": "input"}),
    "changelog lookup": (["k", "dt"], ["dt"], {"bucket": "1", "changelog-producer": "lookup"}),
    "changelog full-compaction": (["k", "dt"], ["dt"], {"bucket": "1", "changelog-producer": "full-compaction"}),
}

# kind -> a file its writes or its compaction must have put on S3 (a regex on the listed paths)
WRITES = {
    "deletion vectors": r"/index/index-",  # the deletion-vector index of the compaction
    "postpone bucket": r"/bucket-postpone/data-",
    "dynamic bucket": r"/index/index-",  # the hash index
    "file index": r"/bucket-0/data-[^/]+\.index$",  # <file>.index beside its data file
    "changelog input": r"/bucket-0/changelog-",
    "changelog lookup": r"/bucket-0/changelog-",
    "changelog full-compaction": r"/bucket-0/changelog-",
    "orc": r"/bucket-0/data-[^/]+\.orc$",
    "avro": r"/bucket-0/data-[^/]+\.avro$",
}

ROUND1 = pa.table({"k": [1, 2, 3], "dt": ["a", "a", "b"], "v": ["x", "y", "z"]}, schema=SCHEMA)
ROUND2 = pa.table({"k": [2, 4], "dt": ["a", "b"], "v": ["y2", "w"]}, schema=SCHEMA)


def _rows(t, **read) -> list[tuple]:  # type: ignore[no-untyped-def]
    return sorted((r["k"], r["dt"], r["v"]) for r in t.to_arrow(**read).to_pylist())


def _expected(pks: list[str], *rounds: pa.Table) -> list[tuple]:
    rows: dict[object, tuple] = {}
    for i, batch in enumerate(rounds):
        for j, r in enumerate(batch.to_pylist()):
            key = tuple(r[c] for c in pks) if pks else (i, j)
            rows[key] = (r["k"], r["dt"], r["v"])
    return sorted(rows.values())


def _listing(t) -> set[str]:  # type: ignore[no-untyped-def]
    return {st.path for st in t.file_io.walk_files(t.paths.root.rstrip("/"))}


def _upserts(rows) -> set[tuple]:  # type: ignore[no-untyped-def]
    return {(r["k"], r["v"]) for r in rows if r["_row_kind"] in ("+I", "+U")}


def _check(t) -> None:  # type: ignore[no-untyped-def]
    """Every retained snapshot's and tag's files are present and read (a fresh handle, listed once).

    A tag keeps its snapshot's data, not its changelog: Paimon's expiry deletes an expired
    snapshot's changelog files and manifests even when a tag holds the snapshot (0.9's
    ``FileDeletionBase.manifestSkippingSet`` names base and delta lists, index and statistics
    files only), and so does ours (tests/differential/test_expire_tag_changelog_java.py); a stream
    reads changelogs from snapshots, not tags."""
    problems = TableInvariants(t.refresh()).check_all()
    assert [p for p in problems if not (p.startswith("tag ") and ": changelog manifest list" in p)] == []


def _plant_orphans(t) -> list[str]:  # type: ignore[no-untyped-def]
    """Files no snapshot references, where a crashed writer would leave them."""
    fio, paths = t.file_io, t.paths
    bucket_dir = f"{paths.root}/dt=a/bucket-0" if t.schema.partition_keys else f"{paths.root}/bucket-0"
    planted = [f"{bucket_dir}/data-orphan-0.parquet", f"{paths.root}/index/index-orphan-0",
               f"{paths.root}/manifest/manifest-orphan-0"]
    for p in planted:
        fio.write_bytes(p, b"not referenced")
    return planted


@pytest.mark.parametrize("kind", list(KINDS))
def test_table_kind_lifecycle_on_s3(s3_warehouse, kind):
    wh, opts = s3_warehouse
    pks, parts, options = KINDS[kind]
    cat = Catalog(wh, **opts)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=pks, partition_keys=parts, options=options)
    s1 = t.write_arrow(ROUND1)
    t.create_tag("r1", s1)
    s2 = t.write_arrow(ROUND2)
    fresh = Catalog(wh, **opts).get_table("db.t")  # a fresh process's view
    postpone = kind == "postpone bucket"
    # postpone files are not read before a compaction moves them into real buckets (as Paimon)
    assert _rows(fresh) == ([] if postpone else _expected(pks, ROUND1, ROUND2))
    assert _rows(fresh, tag="r1") == ([] if postpone else _expected(pks, ROUND1))

    # change reads: the second round's changes, and a stream from the first snapshot on
    source = "delta" if kind == "changelog full-compaction" else None  # no changelog before a full compaction
    changes = _upserts(fresh.read_changes(s1, s2, source=source).to_pylist())
    assert changes == (set() if postpone else {(2, "y2"), (4, "w")})
    stream = fresh.stream(mode="from-snapshot-full", snapshot_id=s1)
    reader = fresh.change_reader(stream=stream)
    seen = _upserts(r for b in stream.poll(max_snapshots=10) for s in b.splits for r in reader.read(s).to_pylist())
    if kind == "changelog full-compaction":  # its streams read max-level files and changelogs only (as Paimon)
        assert seen == set()
    elif not postpone:
        assert {(1, "x"), (3, "z"), (2, "y2"), (4, "w")} <= seen

    # the kind's own compaction, then a full one
    listed = _listing(fresh)
    first = fresh.compact()
    assert _rows(fresh.refresh()) == _expected(pks, ROUND1, ROUND2)
    _check(fresh)
    listed |= _listing(fresh)
    full = fresh.refresh().compact(full=True)
    listed |= _listing(fresh)
    if kind in WRITES:
        assert any(re.search(WRITES[kind], p) for p in listed), sorted(listed)
    # an append table's compaction may leave nothing for the full one; a key table's full one rewrites
    assert full.snapshot_id is not None if pks else first.snapshot_id is not None
    if kind == "changelog full-compaction":  # the full compaction's changelog reaches the stream
        seen = _upserts(r for b in stream.poll(max_snapshots=10) for s in b.splits for r in reader.read(s).to_pylist())
        assert (4, "w") in seen
    t3 = Catalog(wh, **opts).get_table("db.t")
    assert _rows(t3) == _expected(pks, ROUND1, ROUND2)
    _check(t3)

    # expiry keeps the latest snapshot and the tag's files; orphans go, referenced files stay
    expired = t3.expire_snapshots(retain_min=1, older_than=datetime.now() + timedelta(days=1))
    assert expired.expired_snapshots and len(t3.snapshots()) == 1
    if postpone:  # the tag keeps the postpone files: their prefix is not "empty" to the expiry's clean-up
        assert any("/bucket-postpone/data-" in p for p in _listing(t3))
    planted = _plant_orphans(t3)
    removed = t3.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert len(removed.paths) >= len(planted)
    assert not any(t3.file_io.exists(p) for p in planted)
    t4 = Catalog(wh, **opts).get_table("db.t")
    _check(t4)
    assert _rows(t4) == _expected(pks, ROUND1, ROUND2)
    assert _rows(t4, tag="r1") == ([] if postpone else _expected(pks, ROUND1))
    # nothing left to remove: the removal deleted no referenced file, and a second pass finds nothing
    assert t4.remove_orphan_files(older_than=timedelta(0), dry_run=True, allow_recent=True).paths == []


def test_spark_compact_and_expire_jobs_on_s3(s3_warehouse, spark, capsys):
    """The job CLI against the moto warehouse (storage options on the command line): the compaction
    runs its unit on an executor, which reopens the table on S3; the expiry deletes on executors
    (``--distributed-delete-min 0``)."""
    import json

    from lake_assets.exit_codes import EXIT_OK
    from lake_assets.spark.jobs import compact, expire
    from tests.spark.test_jobs_common import run_job_main

    wh, opts = s3_warehouse
    pks, parts, options = KINDS["deletion vectors"]
    cat = Catalog(wh, **opts)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=pks, partition_keys=parts, options=options)
    t.create_tag("r1", t.write_arrow(ROUND1))
    t.write_arrow(ROUND2)
    storage = ["--storage-option", "key=testing", "--storage-option", "secret=testing",
               "--storage-option", f"client_kwargs={json.dumps(opts['client_kwargs'])}"]
    code, out = run_job_main(capsys, compact.main, "--warehouse", wh, "--table", "db.t", "--full", *storage)
    assert code == EXIT_OK and out["commit_kind"] == "COMPACT", out
    code, out = run_job_main(capsys, expire.main, "--warehouse", wh, "--table", "db.t", "--retain-min", "1",
                             "--older-than", "0s", "--distributed-delete-min", "0", *storage)
    assert code == EXIT_OK, out
    fresh = Catalog(wh, **opts).get_table("db.t")
    assert out["expired_snapshots"] and [s.id for s in fresh.snapshots()] == [fresh.snapshot_manager.latest_id()]
    assert _rows(fresh) == _expected(pks, ROUND1, ROUND2)
    _check(fresh)
