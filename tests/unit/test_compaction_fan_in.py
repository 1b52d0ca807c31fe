"""Compaction's fan-in is bounded by ``sort-spill-threshold`` (issue 17 §2, round 6): a unit with
more sorted runs first merges the excess into local spill runs, at most that many at a time, so
no merge ever has more runs open; the output is what it was without spilling, and the spill runs
are gone afterwards, also when the unit fails. All counted in-process, never timed."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog
from lake_assets.errors import OptionError
from lake_assets.ops.compact import fan_in, memory, rewrite
from lake_assets.ops.read import SplitReader
from lake_assets.ops.spill import SpillRun

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())])


@pytest.fixture()
def catalog(tmp_path: Path) -> Catalog:
    c = Catalog(str(tmp_path / "wh"))
    c.create_database("db")
    return c


@pytest.fixture()
def spill_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp directory, private to the test: spill directories are created under it."""
    path = tmp_path / "tmp"
    path.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(path))
    return path


class _OpenRuns:
    """Counts the inputs of compaction merges open at once: data files read in batches and spill
    runs, each from its first batch until it is exhausted or closed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 0
        self.most = 0
        self.spill_runs_read = 0
        original_iter, original_batches = SplitReader.iter_file, SpillRun.batches
        counter = self

        def iter_file(reader: SplitReader, *args: Any, **kwargs: Any) -> Iterator[pa.Table]:
            yield from counter._counted(original_iter(reader, *args, **kwargs))

        def batches(run: SpillRun) -> Iterator[pa.Table]:
            counter.spill_runs_read += 1
            yield from counter._counted(original_batches(run))

        monkeypatch.setattr(SplitReader, "iter_file", iter_file)
        monkeypatch.setattr(SpillRun, "batches", batches)

    def _counted(self, inner: Iterator[pa.Table]) -> Iterator[pa.Table]:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            yield from inner
        finally:
            self.now -= 1


def _write_rounds(table: Any, rounds: list[list[tuple[int, int | None, str]]]) -> None:
    for rows in rounds:
        table.write_arrow(pa.table({"k": [r[0] for r in rows], "v": [r[1] for r in rows],
                                    "op": [r[2] for r in rows]}, schema=SCHEMA))


def _overlapping_rounds(count: int, rows: int, seed: int = 5) -> list[list[tuple[int, int, str]]]:
    rng = np.random.default_rng(seed)
    return [[(int(k), r, "+I") for k in rng.choice(rows * 3, rows, replace=False)] for r in range(count)]


def _raw_files(table: Any) -> list[tuple[Any, ...]]:
    """Every live row of every data file with its level, sequence number and row kind."""
    out: list[tuple[Any, ...]] = []
    reader = SplitReader(table.store, table.store.schema)
    for split in table.plan():
        for f in split.files:
            data = reader.read_file(split, f, with_system=True)
            out += [(f.level, *(repr(v) for v in row.values())) for row in data.to_pylist()]
    return sorted(out)


def _table(catalog: Catalog, name: str, **options: str) -> Any:
    return catalog.create_table(f"db.{name}", SCHEMA, primary_keys=["k"], options={
        "bucket": "1", "write-only": "true", "rowkind.field": "op", "compaction.merge-rows": "64", **options})


@pytest.mark.parametrize("threshold", [2, 3, 5])
def test_no_merge_opens_more_runs_than_the_threshold(catalog: Catalog, spill_tmp: Path, threshold: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = _overlapping_rounds(14, 300)
    bounded = _table(catalog, "b", **{"sort-spill-threshold": str(threshold)})
    unbounded = _table(catalog, "u", **{"sort-spill-threshold": "1000"})
    _write_rounds(bounded, rounds)
    _write_rounds(unbounded, rounds)
    open_runs = _OpenRuns(monkeypatch)
    unbounded.compact(full=True)
    assert open_runs.most == 14 and open_runs.spill_runs_read == 0  # one open input per run
    open_runs.most = 0
    bounded.compact(full=True)
    assert open_runs.most <= threshold
    assert open_runs.spill_runs_read > 0
    assert _raw_files(bounded) == _raw_files(unbounded)
    assert list(spill_tmp.iterdir()) == []  # spill directories removed after the unit


def test_the_default_threshold_is_paimons(catalog: Catalog) -> None:
    t = _table(catalog, "d")
    assert fan_in.sort_spill_threshold(t.store.schema.core_options) == 5 + 3 + 1  # stop-trigger + 1
    s = _table(catalog, "s", **{"num-sorted-run.stop-trigger": "20"})
    assert fan_in.sort_spill_threshold(s.store.schema.core_options) == 21
    o = _table(catalog, "o", **{"sort-spill-threshold": "4"})
    opts = o.store.schema.core_options
    assert fan_in.sort_spill_threshold(opts) == 4
    # the unit's bound counts at most the threshold's runs (their read batches included)
    assert memory.unit_rows_bound(opts, 200) == memory.unit_rows_bound(opts, 4)


@pytest.mark.parametrize("value", ["1", "0", "-3", "many"])
def test_threshold_option_is_checked(catalog: Catalog, value: str) -> None:
    with pytest.raises(OptionError, match="sort-spill-threshold"):
        _table(catalog, "x", **{"sort-spill-threshold": value})


def test_fold_window_picks_the_smallest_consecutive_runs() -> None:
    assert fan_in.fold_window([5, 1, 1, 9, 1], 2) == 1
    assert fan_in.fold_window([5, 1, 1, 9, 1], 3) == 0  # 7 < 11 < 11
    assert fan_in.fold_window([3, 3, 3], 3) == 0
    assert fan_in.fold_window([2, 2, 1, 1], 2) == 2


ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    "first-row": {"merge-engine": "first-row"},
}
# null values: partial-update keeps a field's older value then, which makes it non-associative
# (a -D folded with a later insert alone would forget the delete): spill runs must stay unmerged
_round = st.lists(st.tuples(st.integers(0, 40), st.one_of(st.none(), st.integers(-5, 5)),
                            st.sampled_from(["+I", "+I", "-D"])),
                  min_size=1, max_size=60, unique_by=lambda r: r[0])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(engine=st.sampled_from(sorted(ENGINES)), rounds=st.lists(_round, min_size=1, max_size=14),
       threshold=st.integers(2, 4), merge_rows=st.sampled_from(["1", "8", "64"]))
@example(engine="partial-update", rounds=[[(1, 5, "+I")], [(1, None, "-D")], [(1, None, "+I")]], threshold=2,
         merge_rows="1")  # a fold of the -D and the later insert, merged, would forget the delete
def test_output_is_the_same_with_and_without_spilling(engine: str, rounds: list[list[tuple[int, int | None, str]]],
                                                      threshold: int, merge_rows: str) -> None:
    if engine in ("first-row", "aggregation"):  # inserts only: their tables refuse or retract deletes
        rounds = [[(k, v, "+I") for k, v, _ in rows] for rows in rounds]
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Catalog(os.path.join(tmp, "wh"))
        catalog.create_database("db")
        options = {**ENGINES[engine], "compaction.merge-rows": merge_rows}
        bounded = _table(catalog, "b", **options, **{"sort-spill-threshold": str(threshold)})
        unbounded = _table(catalog, "u", **options, **{"sort-spill-threshold": "1000"})
        _write_rounds(bounded, rounds)
        _write_rounds(unbounded, rounds)
        bounded.compact(full=True)
        unbounded.compact(full=True)
        assert _raw_files(bounded) == _raw_files(unbounded)
        assert bounded.to_arrow().sort_by("k").equals(unbounded.to_arrow().sort_by("k"))


def test_lookup_changelog_is_the_same_with_and_without_spilling(catalog: Catalog, spill_tmp: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The changelog of a lookup unit over many level-0 runs, which it merges bounded too."""
    base = [[(k, 0, "+I") for k in range(0, 600, 2)]]
    rng = np.random.default_rng(8)
    later = [[(int(k), r, "+I" if k % 7 else "-D") for k in rng.choice(700, 80, replace=False)]
             for r in range(1, 13)]
    options = {"changelog-producer": "lookup", "read.batch-size": "50"}
    tables = [_table(catalog, "b", **options, **{"sort-spill-threshold": "3"}),
              _table(catalog, "u", **options, **{"sort-spill-threshold": "1000"})]
    for t in tables:
        _write_rounds(t, base)
        t.compact(full=True)
        _write_rounds(t, later)
    start = tables[0].latest_snapshot().id
    open_runs = _OpenRuns(monkeypatch)
    tables[0].compact()
    assert open_runs.spill_runs_read > 0
    # the fresh runs at most 3 at once, plus the top level's run the changelog looks old rows up in
    assert open_runs.most <= 3 + 1
    tables[1].compact()
    monkeypatch.undo()

    def changes(t: Any) -> list[tuple[Any, ...]]:
        return sorted((r["k"], r["_row_kind"], r["v"]) for r in t.read_changes(start).to_pylist())

    assert changes(tables[0]) and changes(tables[0]) == changes(tables[1])
    assert _raw_files(tables[0]) == _raw_files(tables[1])
    assert list(spill_tmp.iterdir()) == []


def test_deletion_vectors_are_the_same_with_and_without_spilling(catalog: Catalog, spill_tmp: Path) -> None:
    options = {"deletion-vectors.enabled": "true"}
    tables = [_table(catalog, "b", **options, **{"sort-spill-threshold": "2"}),
              _table(catalog, "u", **options, **{"sort-spill-threshold": "1000"})]
    for t in tables:
        _write_rounds(t, _overlapping_rounds(1, 500, seed=1))
        t.compact(full=True)
        _write_rounds(t, _overlapping_rounds(10, 120, seed=2))
        t.compact()  # level 0 into a level below the top: the top's old versions get deleted
    raw = _raw_files(tables[0])
    assert raw == _raw_files(tables[1])
    assert any(level == tables[0].store.schema.core_options.num_levels - 1 for level, *_ in raw)
    assert tables[0].to_arrow().sort_by("k").equals(tables[1].to_arrow().sort_by("k"))
    assert list(spill_tmp.iterdir()) == []


@pytest.mark.parametrize("failure", [OSError, KeyboardInterrupt])
def test_spill_runs_are_removed_when_the_unit_fails(catalog: Catalog, spill_tmp: Path, failure: type,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    t = _table(catalog, "f", **{"sort-spill-threshold": "2"})
    _write_rounds(t, _overlapping_rounds(8, 200))
    before = t.latest_snapshot().id
    want = t.to_arrow().sort_by("k")
    seen: list[str] = []
    original = rewrite.merge_sorted

    def failing_merge(*args: Any, **kwargs: Any) -> Iterator[pa.Table]:
        # the unit's final merge: the folds are written by now
        seen.extend(str(p) for p in spill_tmp.rglob("*.arrow"))
        for i, chunk in enumerate(original(*args, **kwargs)):
            if i == 1:
                raise failure("injected")
            yield chunk

    monkeypatch.setattr(rewrite, "merge_sorted", failing_merge)
    with pytest.raises(failure, match="injected"):
        t.compact(full=True)
    assert seen  # there were spill runs to remove
    assert list(spill_tmp.iterdir()) == []
    assert t.latest_snapshot().id == before
    assert t.to_arrow().sort_by("k").equals(want)


def test_a_full_spill_disk_merges_the_rest_at_once(catalog: Catalog, spill_tmp: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``write-buffer-spill.max-disk-size`` wins over the fan-in: a fold that would exceed it is
    dropped, and the runs are merged without it, with the same output."""
    rounds = _overlapping_rounds(8, 2_000)
    small = _table(catalog, "d", **{"sort-spill-threshold": "2", "write-buffer-spill.max-disk-size": "4 kb"})
    free = _table(catalog, "u", **{"sort-spill-threshold": "1000"})
    _write_rounds(small, rounds)
    _write_rounds(free, rounds)
    written: list[int] = []
    original_write = fan_in.SpillDirectory.write_run

    def write_run(directory: Any, *args: Any, **kwargs: Any) -> SpillRun:
        try:
            return original_write(directory, *args, **kwargs)
        finally:
            written.append(directory.disk_bytes)

    monkeypatch.setattr(fan_in.SpillDirectory, "write_run", write_run)
    open_runs = _OpenRuns(monkeypatch)
    small.compact(full=True)
    free.compact(full=True)
    assert written and max(written) <= 4 * 1024
    assert open_runs.most == 8  # the fold did not fit: all runs merged at once
    assert _raw_files(small) == _raw_files(free)
    assert list(spill_tmp.iterdir()) == []
