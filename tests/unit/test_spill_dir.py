"""Where spill files go (`lake_assets.ops.spill.spill_root`): under the ``spill_dir`` a write or a
compaction is given, else ``LAKE_ASSETS_SPILL_DIR``, else one of Spark's local dirs
(``SPARK_LOCAL_DIRS``, set for Spark's Python workers), else the system temp directory. A given
directory that is missing or not a directory fails the operation before it writes anything.

The system temp directory is private to each test, so a spill that went there is seen.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidArgumentError
from lake_assets.ops import spill as spill_mod
from lake_assets.ops.spill import SPARK_LOCAL_DIRS_ENV, SPILL_DIR_ENV, spill_root
from lake_assets.table import Table

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("s", pa.string())])


@pytest.fixture(autouse=True)
def system_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp directory, private to the test; no spill setting inherited."""
    path = tmp_path / "system-tmp"
    path.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    monkeypatch.delenv(SPILL_DIR_ENV, raising=False)
    monkeypatch.delenv(SPARK_LOCAL_DIRS_ENV, raising=False)
    return path


@pytest.fixture()
def chosen(tmp_path: Path) -> Path:
    path = tmp_path / "chosen-spill"
    path.mkdir()
    return path


@pytest.fixture()
def runs_written(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of every spill run as it is written (the real writer, observed)."""
    seen: list[str] = []
    original = spill_mod.SpillDirectory.write_run

    def write_run(self: spill_mod.SpillDirectory, *args: Any, **kwargs: Any) -> spill_mod.SpillRun:
        run = original(self, *args, **kwargs)
        assert os.path.isfile(run.path)
        seen.append(run.path)
        return run

    monkeypatch.setattr(spill_mod.SpillDirectory, "write_run", write_run)
    return seen


def _table(tmp_path: Path, **options: str) -> Table:
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db", ignore_if_exists=True)
    return catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "write-only": "true", "write-buffer-size": "64 kb", **options})


def _rows(seed: int, n: int = 6000) -> pa.Table:
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 20_000, n)
    return pa.table({"k": k, "v": rng.integers(0, 1000, n), "s": [f"s{x:08d}" for x in k]}, schema=SCHEMA)


def _files(root: Path) -> list[str]:
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]


def _under(path: str, root: Path) -> bool:
    return os.path.commonpath([path, str(root)]) == str(root)


def test_a_writers_spill_runs_go_under_its_spill_dir_never_the_system_temp(
    tmp_path: Path, chosen: Path, system_tmp: Path, runs_written: list[str]
) -> None:
    t = _table(tmp_path)
    writer = t.new_writer("u", spill_dir=chosen)
    try:
        for seed in range(4):
            writer.write_arrow(_rows(seed))
        # the buffer spilled: the runs are on disk now, under the chosen directory
        assert runs_written and all(_under(p, chosen) for p in runs_written)
        assert all(os.path.isfile(p) for p in runs_written)
        assert [Path(d).name.startswith("lake-assets-spill-") for d in os.listdir(chosen)] == [True]
        assert _files(system_tmp) == []
        messages = writer.prepare_commit()
    finally:
        writer.close()
    t.new_committer("u").commit(messages, 1)
    assert _files(chosen) == [] and _files(system_tmp) == []  # the runs are gone with the commit
    assert t.to_arrow().num_rows == len(set(np.concatenate([_rows(s).column("k").to_numpy() for s in range(4)])))


def test_the_process_setting_applies_to_writes_and_compactions(
    tmp_path: Path, chosen: Path, system_tmp: Path, runs_written: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SPILL_DIR_ENV, str(chosen))
    t = _table(tmp_path, **{"sort-spill-threshold": "2", "compaction.merge-rows": "64"})
    for seed in range(5):
        t.write_arrow(_rows(seed, 1500))  # five level-0 runs: the full compaction's fan-in spills
    written = len(runs_written)
    t.compact(full=True)
    assert len(runs_written) > written  # the compaction spilled ...
    assert all(_under(p, chosen) for p in runs_written)  # ... under the setting, as the writes did
    assert _files(system_tmp) == [] and _files(chosen) == []


def test_a_compactions_spill_dir_keyword_wins_over_the_process_setting(
    tmp_path: Path, chosen: Path, system_tmp: Path, runs_written: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.setenv(SPILL_DIR_ENV, str(other))
    t = _table(tmp_path, **{"sort-spill-threshold": "2", "compaction.merge-rows": "64"})
    for seed in range(5):
        t.write_arrow(_rows(seed, 1500), spill_dir=chosen)
    runs_written.clear()
    t.compact(full=True, spill_dir=chosen)
    assert runs_written and all(_under(p, chosen) for p in runs_written)
    assert _files(other) == [] and _files(system_tmp) == []


def test_without_a_setting_spills_go_to_the_system_temp(
    tmp_path: Path, system_tmp: Path, runs_written: list[str]
) -> None:
    t = _table(tmp_path)
    for seed in range(3):
        t.write_arrow(_rows(seed))
    assert runs_written and all(_under(p, system_tmp) for p in runs_written)


def test_spark_local_dirs_are_used_in_a_spark_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spark sets ``SPARK_LOCAL_DIRS`` for its Python workers (the executor's block-manager dirs,
    comma-separated); one of those that exists is used, the process setting still wins."""
    a, b = tmp_path / "blockmgr-a", tmp_path / "blockmgr-b"
    a.mkdir()
    b.mkdir()
    monkeypatch.setenv(SPARK_LOCAL_DIRS_ENV, f"{a},{tmp_path / 'gone'},{b}")
    assert spill_root() in (str(a), str(b))
    monkeypatch.setenv(SPARK_LOCAL_DIRS_ENV, str(tmp_path / "gone"))
    assert spill_root() is None
    monkeypatch.setenv(SPILL_DIR_ENV, str(b))
    assert spill_root() == str(b)


@pytest.mark.parametrize("how", ["keyword", "env"])
@pytest.mark.parametrize("bad", ["missing", "file"])
def test_a_bad_spill_dir_fails_before_anything_is_written(
    tmp_path: Path, how: str, bad: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = _table(tmp_path, **{"write-only": "false"})
    t.write_arrow(_rows(0, 100))
    table_files = sorted(_files(tmp_path / "wh"))
    path = tmp_path / "nope"
    if bad == "file":
        path.write_text("x")
    kwargs: dict[str, Any] = {}
    if how == "keyword":
        kwargs["spill_dir"] = str(path)
    else:
        monkeypatch.setenv(SPILL_DIR_ENV, str(path))
    what = "does not exist" if bad == "missing" else "is not a directory"
    source = "spill_dir" if how == "keyword" else SPILL_DIR_ENV
    with pytest.raises(InvalidArgumentError, match=rf"Cannot spill to '{path}' \({source}\): it {what}"):
        t.write_arrow(_rows(1, 100), **kwargs)
    with pytest.raises(InvalidArgumentError, match=what):
        t.new_writer("w", **kwargs)
    with pytest.raises(InvalidArgumentError, match=what):
        t.compact(full=True, **kwargs)
    assert sorted(_files(tmp_path / "wh")) == table_files  # nothing written, nothing committed
    assert t.latest_snapshot().id == 1


def test_spill_dir_must_be_a_path() -> None:
    with pytest.raises(InvalidArgumentError, match="spill_dir must be a path"):
        spill_root(1)  # type: ignore[arg-type]
