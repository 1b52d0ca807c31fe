"""A full disk (ENOSPC, a real tmpfs) under a branch commit, a fast-forward and a branch's creation.

The operation fails with the disk's error; the main branch and every branch then read a committed
state, every snapshot and tag of each reads in full, and once space is freed running the
operation again finishes it.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.table import Table
from tests.reliability.tmpfs import tmpfs_8m  # noqa: F401 - the fixture

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def _batch(ks: range, v: int) -> pa.Table:
    return pa.table({"k": list(ks), "v": [v] * len(ks)}, schema=SCHEMA)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Main: snapshots 1-2 (tag ``t1`` on 1); branch ``b1`` from ``t1`` with snapshots 2-3."""
    wh = tmp_path_factory.mktemp("branch_enospc") / "wh"
    cat = Catalog(str(wh))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", "write-only": "true"})
    t.write_arrow(_batch(range(0, 6), 0))
    t.create_tag("t1")
    t.write_arrow(_batch(range(3, 9), 1))
    t.create_branch("b1", "t1")
    b = cat.get_table("db.t$branch_b1")
    b.write_arrow(_batch(range(6, 12), 2))
    b.write_arrow(_batch(range(0, 3), 3))
    return wh


def _fill(directory: Path) -> Path:
    """A file that takes every free byte of ``directory``'s file system."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 16, 512, 1):  # down to the last byte
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def _state(t: Table, **kw: object) -> dict[int, int]:
    rows = t.to_arrow(**kw).to_pylist()
    out = {r["k"]: r["v"] for r in rows}
    assert len(out) == len(rows)
    return out


def _handles(wh: Path) -> dict[str, Table]:
    cat = Catalog(str(wh))
    main = cat.get_table("db.t")
    return {"main": main, **{b.name: cat.get_table(f"db.t$branch_{b.name}") for b in main.store.branches()}}


def _every_holder_reads(wh: Path) -> None:
    for t in _handles(wh).values():
        for s in t.snapshots():
            _state(t, snapshot_id=s.id)
        for name in t.tags():
            _state(t, tag=name)


def _on_full_disk(tmpfs: Path, template: Path, op: Callable[[Path], object]) -> Path:
    wh = tmpfs / "wh"
    shutil.copytree(template, wh)
    filler = _fill(tmpfs)
    with pytest.raises(OSError) as info:  # the disk's own error, however wrapped
        op(wh)
    assert "No space left" in str(info.value) or info.value.errno == errno.ENOSPC or (
        isinstance(info.value.__cause__, OSError) and info.value.__cause__.errno == errno.ENOSPC), info.value
    os.unlink(filler)
    return wh


def test_branch_commit_on_a_full_disk(tmpfs_8m: Path, template: Path) -> None:  # noqa: F811
    h = _handles(template)
    main0, b0 = _state(h["main"]), _state(h["b1"])

    def commit(wh: Path) -> object:
        b = Catalog(str(wh)).get_table("db.t$branch_b1")
        w = b.new_writer("u")
        w.write_arrow(_batch(range(20, 24), 9))
        return b.new_committer("u").commit(w.prepare_commit(), 1)

    wh = _on_full_disk(tmpfs_8m, template, commit)
    h = _handles(wh)
    assert _state(h["main"]) == main0 and _state(h["b1"]) == b0
    _every_holder_reads(wh)
    commit(wh)
    assert _state(_handles(wh)["b1"]) == {**b0, **dict.fromkeys(range(20, 24), 9)}
    _every_holder_reads(wh)


def test_fast_forward_on_a_full_disk(tmpfs_8m: Path, template: Path) -> None:  # noqa: F811
    h = _handles(template)
    histories = [_state(t, snapshot_id=s.id) for t in (h["main"], h["b1"]) for s in t.snapshots()]
    b0 = _state(h["b1"])
    wh = _on_full_disk(tmpfs_8m, template, lambda wh: Catalog(str(wh)).get_table("db.t").fast_forward("b1"))
    h = _handles(wh)
    assert _state(h["main"]) in histories and _state(h["b1"]) == b0
    _every_holder_reads(wh)
    Catalog(str(wh)).get_table("db.t").fast_forward("b1")
    assert _state(_handles(wh)["main"]) == b0
    _every_holder_reads(wh)


def test_create_branch_on_a_full_disk(tmpfs_8m: Path, template: Path) -> None:  # noqa: F811
    at_tag = _state(_handles(template)["main"], tag="t1")
    wh = _on_full_disk(tmpfs_8m, template, lambda wh: Catalog(str(wh)).get_table("db.t").create_branch("b2", "t1"))
    _every_holder_reads(wh)  # a branch left part way (or none) stops no maintenance
    Catalog(str(wh)).get_table("db.t").remove_orphan_files()
    Catalog(str(wh)).get_table("db.t").create_branch("b2", "t1")
    assert _state(_handles(wh)["b2"]) == at_tag
