"""`Table.fast_forward` cut short and run again, racing a writer of main, and its schema refusal
(what it writes, against Java 0.9: tests/differential/test_branch_maintenance_java.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import CommitConflictError, InvalidArgumentError

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])


class Crash(Exception):
    pass


def _put(t, keys: list[int], v: int) -> None:  # type: ignore[no-untyped-def]
    t.write_arrow(pa.table({"k": keys, "v": [v] * len(keys)}, schema=SCHEMA))


def _metadata(root: Path) -> dict[str, bytes]:
    return {f"{d}/{p.name}": p.read_bytes() for d in ("snapshot", "schema", "tag", "changelog")
            for p in sorted((root / d).glob("*")) if p.is_file()}


def _history(warehouse: Path) -> Path:
    """main: snapshots 1-3, tag t1 on 2; branch dev from t1 with its snapshots 3 and 4."""
    cat = Catalog(str(warehouse))
    cat.create_database("db")
    main = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    for v in (1, 2):
        _put(main, [1, 2, 3], v)
    main.create_tag("t1", 2)
    main.create_branch("dev", tag="t1")
    _put(main, [9], 9)
    dev = cat.get_table("db.t$branch_dev")
    for v in (5, 6):
        _put(dev, [v], v)
    return warehouse / "db.db" / "t"


@pytest.mark.parametrize("step", ["fast_forward.after_snapshot_delete", "fast_forward.after_snapshot_copy"])
def test_a_fast_forward_cut_short_finishes_when_run_again(tmp_path: Path, step: str) -> None:
    root = _history(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    Catalog(str(tmp_path / "b")).get_table("db.t").fast_forward("dev")  # uninterrupted
    main = Catalog(str(tmp_path / "a")).get_table("db.t")

    def crash(at: str) -> None:
        if at == step:
            raise Crash(at)

    main.store.fault_hook = crash
    with pytest.raises(Crash):
        main.fast_forward("dev")
    main.store.fault_hook = None
    assert main.fast_forward("dev").id == 4
    assert _metadata(root) == _metadata(tmp_path / "b" / "db.db" / "t")
    assert sorted(main.to_arrow().to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "v": 2}, {"k": 2, "v": 2}, {"k": 3, "v": 2}, {"k": 5, "v": 5}, {"k": 6, "v": 6}]
    assert [s.id for s in main.snapshots()] == [1, 2, 3, 4]


@pytest.mark.parametrize("commits", [1, 2])
def test_a_commit_to_main_during_the_fast_forward_is_discarded(tmp_path: Path, commits: int) -> None:
    """A writer of main commits id 2 (which the branch's copy of t1 takes) right before the
    fast-forward copies it. Once: the fast-forward discards it, as one started a moment later
    would. Twice: both are discarded and it stops with `CommitConflictError`; run again, it finishes."""
    _history(tmp_path)
    main = Catalog(str(tmp_path)).get_table("db.t")
    writer = Catalog(str(tmp_path)).get_table("db.t")
    real_try_create = main.store.file_io.try_create
    landed: list[int] = []

    def try_create(path: str, data: bytes) -> bool:
        if path.endswith("/snapshot/snapshot-2") and len(landed) < commits:
            _put(writer, [7], 7)
            landed.append(writer.latest_snapshot().id)
        return real_try_create(path, data)

    main.store.file_io.try_create = try_create  # type: ignore[method-assign]
    if commits == 2:
        with pytest.raises(CommitConflictError, match=r"writers of the main branch keep committing \(snapshot 2"):
            main.fast_forward("dev")
        assert [s.id for s in main.snapshots()] == [1]
    main.fast_forward("dev")
    assert landed == [2] * commits
    assert 7 not in main.to_arrow().column("k").to_pylist()
    assert [s.id for s in main.snapshots()] == [1, 2, 3, 4]


def test_a_branch_schema_replacing_one_main_keeps_is_refused(tmp_path: Path) -> None:
    """An empty branch altered on its own (its schema 1 is not main's schema 1), whose earliest
    snapshot 3 follows main's latest 2: main's snapshot 2 reads with main's schema 1."""
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    main = cat.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    _put(main, [1], 1)
    main.create_branch("dev")
    main.update_schema().add_column("x", pa.int64()).commit()
    main.write_arrow(pa.table({"k": [2], "v": [2], "x": [2]}, schema=main.arrow_schema))
    dev = cat.get_table("db.t$branch_dev")
    dev.update_schema().add_column("y", pa.string()).commit()
    for v in (3, 4, 5):
        dev.write_arrow(pa.table({"k": [v], "v": [v], "y": ["y"]}, schema=dev.arrow_schema))
    dev.expire_snapshots(retain_min=1, retain_max=1)
    assert [s.id for s in dev.snapshots()] == [3]
    root = tmp_path / "db.db" / "t"
    before = _metadata(root)
    with pytest.raises(InvalidArgumentError, match=r"the branch's schema 1 differs from the main branch's, which a "
                                                   r"snapshot or tag main keeps reads with; nothing was changed"):
        main.fast_forward("dev")
    assert _metadata(root) == before
