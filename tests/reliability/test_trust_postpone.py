"""Trust boundary: postpone-bucket tables (``bucket = -2``; issue 14, session 18).

A postpone table's compaction (and its batch writes into real buckets) takes each partition's
bucket count from what its real-bucket files record (``_TOTAL_BUCKETS``), else from
``postpone.default-bucket-num`` or an estimate on its postpone files, and replays postpone files by
their writer. Hostile values - a recorded count of 0, negative or 2**31 - 1, a file in a bucket at
or past its count, an option or an estimate of 2**31 buckets, a postpone file that names no
writer - make the compaction raise a `LakeError` naming the file and field or the count (before:
a count of 2**31 - 1 allocated 16 GiB, a count of 0 or less was taken as unknown and the partition
re-planned with a new count beside its files), commit nothing, and leave the rows readable; a
canary beside the table is never touched.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, LakeError
from lake_assets.spec.manifest import ManifestEntry
from lake_assets.spec.snapshot import CommitKind, Snapshot
from tests.reliability.test_trust_stored_numbers import _fresh

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])


def _table(tmp: Path, options: dict[str, str]):  # type: ignore[no-untyped-def]
    catalog = Catalog(str(tmp / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2", **options})
    t.write_arrow(pa.table({"k": [1, 2, 3], "dt": ["a"] * 3, "v": ["x"] * 3}, schema=SCHEMA))
    if "postpone.default-bucket-num" not in options or options["postpone.default-bucket-num"] == "2":
        t.compact()  # real buckets for partition a
    t.write_arrow(pa.table({"k": [4, 5], "dt": ["a", "b"], "v": ["y"] * 2}, schema=SCHEMA))
    return t


def _craft(t, damage: Callable[[ManifestEntry], ManifestEntry]) -> None:  # type: ignore[no-untyped-def]
    """Commit a snapshot of the live entries passed through ``damage``, as another writer would."""
    mio = t.store.manifest_io()
    latest = t.snapshot_manager.latest()
    live = [damage(e) for e in t.store.file_store_scan().live_entries(latest)]
    base, base_size = mio.write_manifest_list(mio.write_manifests(live))
    delta, delta_size = mio.write_manifest_list([])
    snap = Snapshot(
        id=latest.id + 1, schema_id=t.schema.id, base_manifest_list=base, base_manifest_list_size=base_size,
        delta_manifest_list=delta, delta_manifest_list_size=delta_size, commit_user="crafted",
        commit_identifier=latest.id + 1, commit_kind=CommitKind.COMPACT, time_millis=int(time.time() * 1000),
        total_record_count=latest.total_record_count, delta_record_count=0,
    )
    assert t.snapshot_manager.try_commit(snap)
    t.snapshot_manager.write_latest_hint(snap.id)


def _real(**changes: object) -> Callable[[ManifestEntry], ManifestEntry]:
    return lambda e: dataclasses.replace(e, **changes) if e.bucket >= 0 else e


def _postponed(**changes: object) -> Callable[[ManifestEntry], ManifestEntry]:
    return lambda e: dataclasses.replace(e, file=dataclasses.replace(e.file, **changes)) if e.bucket == -2 else e


# name -> (table options, damage, what the compaction's error says)
CASES: dict[str, tuple[dict[str, str], Callable[[ManifestEntry], ManifestEntry] | None, str]] = {
    "recorded count 0": ({"postpone.default-bucket-num": "2"}, _real(total_buckets=0),
                         "in bucket 0 \\(_BUCKET\\) of 0 \\(_TOTAL_BUCKETS\\)"),
    "recorded count negative": ({"postpone.default-bucket-num": "2"}, _real(total_buckets=-5), "of -5"),
    "recorded count 2**31 - 1": ({"postpone.default-bucket-num": "2"}, _real(total_buckets=2**31 - 1),
                                 "2147483647 buckets per partition: lake_assets writes at most 65536"),
    "bucket past its count": ({"postpone.default-bucket-num": "2"}, _real(bucket=5),
                              "in bucket 5 \\(_BUCKET\\) of 2"),
    "default bucket num 2**31 - 1": ({"postpone.default-bucket-num": str(2**31 - 1)}, None,
                                     "2147483647 buckets per partition"),
    "estimate of 2**40 buckets": ({"postpone.target-row-num-per-bucket": "1"}, _postponed(row_count=2**40),
                                  f"{2**40} buckets per partition"),
    "postpone file naming no writer": ({"postpone.default-bucket-num": "2"},
                                       _postponed(file_name="data-x-0.parquet"), "does not name its writer"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_postpone_counts_and_names_stop_the_compaction(tmp_path: Path, case: str) -> None:
    options, damage, message = CASES[case]
    canary = tmp_path / "canary"
    canary.write_bytes(b"precious")
    t = _table(tmp_path, options)
    if damage is not None:
        _craft(t, damage)
    _fresh()
    latest = t.snapshot_manager.latest_id()
    # a file moved to another bucket or renamed has no file behind its new path: not read here
    rows = t.to_arrow().sort_by("k") if case not in ("bucket past its count", "postpone file naming no writer") \
        else None
    for full in (False, True):
        with pytest.raises(LakeError) as caught:
            t.compact(full=full)
        assert re.search(message, str(caught.value)), caught.value
    assert t.snapshot_manager.latest_id() == latest  # nothing committed
    t.health()
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    _fresh()
    if rows is not None:
        assert t.to_arrow().sort_by("k").equals(rows)
    assert canary.read_bytes() == b"precious"
