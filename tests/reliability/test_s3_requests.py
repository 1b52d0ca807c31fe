"""How many S3 requests each operation sends (S3 bills per request), counted where moto's server
receives them (`tests.reliability.request_count`): each snapshot, manifest list and manifest at
most once per operation, no HEAD before a GET, one LIST per directory, a small data file by one
GET with its manifest's size (and a size that is not the file's refused). Counts are deterministic;
each is a formula in the table's shape: N snapshots (one write each), every write touching M
partitions x B buckets. ``bench/bench_s3_requests.py`` prints them for every operation.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.io.file_io import FileIO
from lake_assets.store import manifest_io
from tests.reliability.request_count import KINDS, RequestLog

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
# immutable once written: an operation reads each at most once
IMMUTABLE = ("snapshot/snapshot-", "changelog/changelog-", "manifest/")


def _rows(m: int, b: int, i: int) -> pa.Table:
    n = 4 * m * b
    return pa.table({"k": list(range(n)), "dt": [f"p{j % m}" for j in range(n)], "v": [f"v{i}"] * n}, schema=SCHEMA)


def _table(faulty_s3, n: int, m: int, b: int, options: dict[str, str] | None = None):
    """A primary-key table of ``n`` snapshots whose writes touch every (partition, bucket) (with
    4 keys a bucket, each of the ``b`` buckets gets some), opened afresh; and the request log."""
    wh, opts, proxy = faulty_s3
    cat = Catalog(wh, **opts)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": str(b), "write-only": "true", **(options or {})})
    for i in range(n):
        t.write_arrow(_rows(m, b, i))
    return Catalog(wh, **opts).get_table("db.t"), RequestLog(proxy)


def _count(log: RequestLog, op) -> dict[str, int]:
    """The requests of ``op`` by kind, as a process that runs only ``op`` sends them (the
    process-wide manifest cache emptied first); no immutable file read twice."""
    manifest_io._cache_slot.cache_clear()
    log.mark()
    op()
    twice = {k: c for k, c in log.of("GET").items() if c > 1 and any(m in k for m in IMMUTABLE)}
    assert not twice, f"read more than once: {twice}"
    return dict(log.by_kind())


def _later() -> datetime:
    return datetime.now() + timedelta(days=1)


@pytest.mark.parametrize("n", [3, 5])
def test_expiry_reads_each_snapshot_and_manifest_once(faulty_s3, n):
    t, log = _table(faulty_s3, n, 2, 1)
    counts = _count(log, lambda: t.expire_snapshots(retain_min=1, older_than=_later()))
    assert sorted(log.of("GET", "snapshot/snapshot-")) == sorted(
        t.store.paths.snapshot_file(i).split("/", 1)[1] for i in range(1, n + 1))
    assert counts == {
        # N snapshots, their base and delta lists (2N), the delta manifests of snapshots 2..N that
        # expiry looks for deleted files in (N-1); LATEST twice (the plan, and the re-check after
        # the expiry marker for rollbacks as latest committed since), EARLIEST and the changelog's
        # EARLIEST (absent: a GET answered 404 each)
        "GET": n + 2 * n + (n - 1) + 2 + 2,
        # snapshot N and N+1 after each LATEST read (the hint may lag)
        "HEAD": 4,
        # schema/ (the table still exists), snapshot/ (no EARLIEST hint), consumer/ twice (lapsed
        # leases dropped and the plan on the rest, then the handshake's re-read after the marker),
        # branch/, tag/, snapshot/ and expiring/ once more (markers of failed expiries), changelog/
        "LIST": 9,
        "PUT": 3,  # the marker and its twin, EARLIEST
        # snapshots 1..N-1, the markers, one batch of manifests
        "DELETE": (n - 1) + 2 + 1,
    }


@pytest.mark.parametrize("n", [3, 5])
def test_changelog_expiry_reads_each_changelog_once(faulty_s3, n):
    t, log = _table(faulty_s3, n, 1, 1, {"changelog.num-retained.max": "1000", "changelog.num-retained.min": "1000",
                                         "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "1"})
    t.expire_snapshots(retain_min=1, older_than=_later())  # N-1 long-lived changelogs stay
    from lake_assets.ops.expire import expire_changelogs

    counts = _count(log, lambda: expire_changelogs(t.store, retain_min=1, retain_max=1,
                                                   older_than_ms=int(_later().timestamp() * 1000)))
    assert len(log.of("GET", "changelog/changelog-")) == n - 1
    assert counts["GET"] == 5 * n + 2
    assert counts["DELETE"] == (n - 1) + 2 + 1  # changelogs 1..N-1, the markers, one batch
    assert sum(counts.values()) == 6 * n + 20


def test_planning_health_and_a_stream_poll_read_the_latest_snapshot_once(faulty_s3):
    n, m, b = 3, 2, 2
    t, log = _table(faulty_s3, n, m, b)
    # LATEST, snapshot N, its two lists, N manifests (one per write); HEAD N and N+1 after LATEST
    planned = {"GET": 1 + 1 + 2 + n, "HEAD": 2, "LIST": 0, "PUT": 0, "DELETE": 0}
    assert _count(log, t.plan) == planned
    assert _count(log, t.health) == {**planned, "LIST": 1}  # schema/: the table still exists
    stream = t.stream(mode="from-snapshot", snapshot_id=n)
    # LATEST, snapshot N, its delta list and the one manifest in it
    assert _count(log, stream.poll) == {"GET": 4, "HEAD": 2, "LIST": 0, "PUT": 0, "DELETE": 0}


def test_a_write_reads_the_latest_snapshot_once(faulty_s3):
    n, m, b = 3, 2, 2
    t, log = _table(faulty_s3, n, m, b)
    counts = _count(log, lambda: t.write_arrow(_rows(m, b, 99)))
    assert counts == {
        # LATEST twice: the writer's (its schema, and the snapshot it starts from: not read again
        # at its first row), and the commit's re-check; snapshot N once, its two lists, N manifests
        "GET": 2 + 1 + 2 + n,
        # N and N+1 after each LATEST; schema-0 twice (the commit checks its schema was not
        # dropped); each written file once: the commit's check that what it adds exists
        "HEAD": 2 * 2 + 2 + m * b,
        "LIST": 1,  # schema/: the latest schema at commit time
        # M x B data files, a manifest, two lists, the snapshot, LATEST
        "PUT": m * b + 1 + 2 + 1 + 1,
        "DELETE": 0,
    }


def test_orphan_removal_lists_each_directory_once_and_heads_nothing(faulty_s3):
    n, m, b = 3, 2, 2
    t, log = _table(faulty_s3, n, m, b)
    counts = _count(log, lambda: t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True))
    assert counts == {
        "GET": n + 2 * n + n,  # every snapshot, its two lists, every manifest
        "HEAD": 0,
        # schema/ and snapshot/ once (the table exists and what is referenced, and the candidates
        # there), the root, tag/, changelog/, branch/, manifest/; M partitions, M x B buckets
        "LIST": 7 + m + m * b,
        "PUT": 0,
        "DELETE": 0,
    }


def test_a_rollback_deletes_newer_snapshots_without_looking_first(faulty_s3):
    n = 4
    t, log = _table(faulty_s3, n, 1, 1)
    counts = _count(log, lambda: t.rollback_to(snapshot_id=1))
    assert counts["DELETE"] == n - 1 and counts["HEAD"] == 2  # the HEADs: after reading LATEST
    # LISTs of tag/, branch/ (every branch's holders are read before anything is deleted) and changelog/
    assert counts["LIST"] == 3
    assert sum(counts.values()) == n + 8


def test_the_file_io_sends_one_request_per_call(faulty_s3):
    wh, opts, proxy = faulty_s3
    fio, root = FileIO.for_url(wh, **opts)
    fio.write_bytes(f"{root}/d/f", b"x")
    log = RequestLog(proxy)
    calls = {
        "GET": lambda: fio.read_bytes(f"{root}/d/f"),
        "HEAD": lambda: (fio.is_file(f"{root}/d/f"), fio.is_file(f"{root}/d/none")),
        "LIST": lambda: (fio.list_status(f"{root}/d"), fio.list_status(f"{root}/absent")),
        "DELETE": lambda: (fio.discard(f"{root}/d/f"), fio.discard(f"{root}/d/none")),
    }
    for kind, call in calls.items():
        log.mark()
        call()
        want = 1 if kind == "GET" else 2
        assert log.by_kind() == {**dict.fromkeys(KINDS, 0), kind: want}, kind


def _data_files(log: RequestLog, kind: str) -> Counter[str]:
    return log.of(kind, "/bucket-")


def test_a_batch_read_gets_each_small_data_file_once_and_heads_none(faulty_s3):
    n, m, b = 3, 2, 2
    t, log = _table(faulty_s3, n, m, b)
    counts = _count(log, t.to_arrow)
    # every data file (M x B per write) by one GET of it whole: no HEAD for its size (the
    # manifest's), no ask for its footer and then its columns
    assert len(_data_files(log, "GET")) == n * m * b and set(_data_files(log, "GET").values()) == {1}
    assert not _data_files(log, "HEAD")
    # planning (LATEST, snapshot N, its two lists, N manifests; HEAD N and N+1) and the data files
    assert counts == {"GET": 1 + 1 + 2 + n + n * m * b, "HEAD": 2, "LIST": 0, "PUT": 0, "DELETE": 0}


def test_compaction_gets_each_small_data_file_once(faulty_s3):
    n, m, b = 3, 2, 2
    t, log = _table(faulty_s3, n, m, b)
    counts = _count(log, lambda: t.compact(full=True))
    assert len(_data_files(log, "GET")) == n * m * b and set(_data_files(log, "GET").values()) == {1}
    # each compacted file once: the commit's check that what it adds exists
    assert _data_files(log, "HEAD") == Counter({k: 1 for k in _data_files(log, "PUT")})
    assert counts == {
        # LATEST (the plan, the commit's re-check), snapshot N, its two lists, N manifests, every
        # data file
        "GET": 2 + 1 + 2 + n + n * m * b,
        # N and N+1 after each LATEST; schema-0 (the commit checks its schema was not dropped);
        # each compacted file
        "HEAD": 2 * 2 + 1 + m * b,
        # schema/: the latest schema for the plan, and at commit time; tag/: the commit's tag
        # retention check (a dedicated compaction's commit runs the lifecycle, as Paimon's)
        "LIST": 3,
        "PUT": m * b + 1 + 2 + 1 + 1,  # M x B compacted files, a manifest, two lists, the snapshot, LATEST
        "DELETE": 0,
    }


@pytest.mark.parametrize("whole", [True, False], ids=["fetched-whole", "opened-natively"])
@pytest.mark.parametrize("damage", ["other-file", "truncated", "longer"])
def test_a_data_file_not_of_its_manifest_size_is_corrupt_not_misread(faulty_s3, whole, damage):
    """The manifest's size is what saves the HEAD; a file of another size (a different valid
    Parquet file put in its place, a cut or lengthened one) fails as damaged, as Java's reader,
    which looks for the footer where the manifest's size puts it, does: never read as it is."""
    import pyarrow.parquet as pq

    from lake_assets.errors import CorruptMetadataError

    t, _ = _table(faulty_s3, 1, 1, 1)
    fio = t.store.file_io
    if not whole:
        fio.min_chunked_read = 0  # as a file larger than one ask: the native client's open
    path = next(k for k in fio.fs.find(t.store.paths.root) if k.endswith(".parquet"))
    data = fio.read_bytes(path)
    if damage == "other-file":
        sink = pa.BufferOutputStream()
        replaced = pa.table({c: pa.array([1, 2], pa.int64()) for c in pq.read_schema(pa.BufferReader(data)).names
                             if c.startswith("_KEY_k") or c == "_SEQUENCE_NUMBER"})
        pq.write_table(replaced, sink)
        data = sink.getvalue().to_pybytes()
    else:
        data = data[:-10] if damage == "truncated" else data + b"PAR1"
    fio.fs.pipe_file(path, data)
    with pytest.raises(CorruptMetadataError, match=rf"{path.rsplit('/', 1)[1]}.*{len(data)} bytes, its manifest says"):
        t.to_arrow()


def test_branch_creation_reads_the_tag_snapshot_once_and_the_tag_again_after_copying(faulty_s3):
    t, log = _table(faulty_s3, 2, 1, 1)
    t.create_tag("x", 1)
    _count(log, lambda: t.create_branch("b", "x"))
    # the tag (then, after the copies, again: a deletion racing the creation), its snapshot and
    # schema, each once, and what was read is what is copied
    assert log.of("GET") == Counter({"warehouse/db.db/t/tag/tag-x": 2, "warehouse/db.db/t/snapshot/snapshot-1": 1,
                                     "warehouse/db.db/t/schema/schema-0": 1})
    assert sorted(log.of("PUT")) == [f"warehouse/db.db/t/branch/branch-b/{f}"
                                     for f in ("schema/schema-0", "snapshot/snapshot-1", "tag/tag-x")]
    assert Catalog(faulty_s3[0], **faulty_s3[1]).get_table("db.t$branch_b").to_arrow().num_rows == 4


def test_orphan_removal_finds_candidates_in_the_listings_it_reads_references_from(faulty_s3):
    """snapshot/ and schema/ are listed once: the candidates there come from the listings that
    told the retained snapshots and that the table exists."""
    t, log = _table(faulty_s3, 2, 1, 1)
    fio, root = t.store.file_io, t.store.paths.root
    junk = [f"{root}/snapshot/junk", f"{root}/schema/.schema-1.0a1b.tmp", f"{root}/schema/schema-x"]
    for path in junk:
        fio.write_bytes(path, b"x")
    found = _count(log, lambda: t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True))
    assert found["LIST"] == 7 + 1 + 1
    assert [fio.exists(p) for p in junk] == [False, False, True]  # schema/: a crashed write's temp file only
    assert t.to_arrow().num_rows == 4 and t.snapshot_manager.snapshot_ids() == [1, 2]
