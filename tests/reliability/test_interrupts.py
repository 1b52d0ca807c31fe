"""Interrupts and storage errors inside a commit: state unknown unless proven, and no clean-up of
anything a snapshot that landed (or may have) references.
"""

from __future__ import annotations

import contextlib
import errno
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CommitStateUnknownError
from tests.reliability.tmpfs import small_tmpfs as mount_tmpfs

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _table(wh: str, **options: str):
    cat = Catalog(wh)
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", **options})


def _batch(ks, v) -> pa.Table:
    return pa.table({"k": list(ks), "v": [v] * len(ks)}, schema=SCHEMA)


def _state(t) -> dict:
    rows = t.to_arrow().to_pylist()
    state = {r["k"]: r["v"] for r in rows}
    assert len(state) == len(rows)
    return state


def _all_snapshots_read(t) -> None:
    for s in t.snapshots():
        t.to_arrow(snapshot_id=s.id)


def test_interrupt_while_the_snapshot_put_is_in_flight(tmp_path):
    """Ctrl-C arrives while the snapshot is being created (it did land): nothing may be deleted."""
    wh = str(tmp_path / "wh")
    t = _table(wh, **{"write-only": "true"})
    t.write_arrow(_batch(range(5), 0))
    real = t.file_io.try_create

    def lands_then_interrupted(path: str, data: bytes) -> bool:
        real(path, data)
        if "/snapshot/snapshot-" in path:
            raise KeyboardInterrupt
        return True

    t.file_io.try_create = lands_then_interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        t.write_arrow(_batch(range(3, 8), 1))
    del t.file_io.try_create
    fresh = Catalog(wh).get_table("db.t")
    assert _state(fresh) == {0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1}
    _all_snapshots_read(fresh)


def test_committer_refuses_to_abort_a_commit_that_may_have_landed(tmp_path):
    wh = str(tmp_path / "wh")
    t = _table(wh, **{"write-only": "true"})
    w = t.new_writer("job")
    w.write_arrow(_batch(range(5), 0))
    msgs = w.prepare_commit()
    committer = t.new_committer("job")

    def interrupt(step: str) -> None:
        if step == "commit.after_snapshot":
            raise KeyboardInterrupt

    t.fault_hook = interrupt
    with pytest.raises(KeyboardInterrupt):
        committer.commit(msgs, 1)
    t.fault_hook = None
    assert committer.may_have_landed
    committer.abort(msgs)  # a careless caller's clean-up: refused
    assert _state(Catalog(wh).get_table("db.t")) == dict.fromkeys(range(5), 0)


def test_storage_error_after_the_append_landed_keeps_the_data(tmp_path):
    """write_arrow: APPEND landed, then the inline compaction's commit fails (OSError)."""
    wh = str(tmp_path / "wh")
    t = _table(wh, **{"num-sorted-run.compaction-trigger": "2"})
    t.write_arrow(_batch(range(5), 0))
    real = t.store.manifest_io

    def failing_manifest_io():
        mio = real()
        write = mio.write_manifests

        def write_manifests(entries):
            if any(e.kind.name == "DELETE" for e in entries):  # the COMPACT commit's delta
                raise OSError(errno.EIO, "injected storage failure")
            return write(entries)

        mio.write_manifests = write_manifests
        return mio

    t.store.manifest_io = failing_manifest_io  # type: ignore[method-assign]
    sid = t.write_arrow(_batch(range(3, 8), 1))
    fresh = Catalog(wh).get_table("db.t")
    assert sid == fresh.latest_snapshot().id == 2  # the data is reported, and is there
    assert _state(fresh) == {0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1}
    _all_snapshots_read(fresh)


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 2 MiB tmpfs (`tests.reliability.tmpfs`: skipped off CI without root, failing on CI)."""
    with mount_tmpfs(tmp_path / "tmpfs", "2m") as mnt:
        yield mnt


def _fill(path: Path) -> None:
    with open(path, "wb") as fh, contextlib.suppress(OSError):
        while True:
            fh.write(b"\0" * 4096)
            fh.flush()


def test_full_disk_during_the_compaction_commit_keeps_the_appended_data(small_tmpfs):
    """Real ENOSPC: the disk fills right after the APPEND snapshot of write_arrow landed."""
    wh = str(small_tmpfs / "wh")
    t = _table(wh, **{"num-sorted-run.compaction-trigger": "2"})
    t.write_arrow(_batch(range(5), 0))
    filler = small_tmpfs / f"filler-{uuid.uuid4().hex}"

    def fill_after_append(step: str) -> None:
        if step == "commit.after_snapshot" and not filler.exists():
            _fill(filler)

    t.fault_hook = fill_after_append
    try:
        sid = t.write_arrow(_batch(range(3, 8), 1))
    except (OSError, CommitStateUnknownError):
        sid = None  # reporting the failure is acceptable; deleting the landed data is not
    os.unlink(filler)
    t.fault_hook = None
    fresh = Catalog(wh).get_table("db.t")
    assert sid in (None, 2)
    assert _state(fresh) == {0: 0, 1: 0, 2: 0, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1}
    _all_snapshots_read(fresh)
