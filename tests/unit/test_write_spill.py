"""The spillable write buffer (``write-buffer-spillable``): a full buffer becomes a local sorted run,
and `prepare_commit` merges a bucket's runs and memory into one level-0 file. Content must equal the
non-spilling writer's (and a model); spill files never outlive a commit, an abort or a failure."""

from __future__ import annotations

import gc
import itertools
import os
import tempfile

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops import spill as spill_mod
from lake_assets.ops.level0_flush import Level0Flush
from lake_assets.ops.write import TableWriter

SCHEMA = pa.schema([("k", pa.int64()), ("p", pa.string()), ("v", pa.int64()), ("s", pa.string()),
                    ("op", pa.string())])
ENGINES: dict[str, dict[str, str]] = {
    "deduplicate": {},
    "first-row": {"merge-engine": "first-row", "first-row.ignore-delete": "true"},
    "partial-update": {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum",
                    "fields.s.aggregate-function": "max", "fields.s.ignore-retract": "true"},
}


@pytest.fixture(autouse=True)
def private_tmp(tmp_path, monkeypatch):
    """Spill directories go under a test-private temp root, so leftovers are visible."""
    root = tmp_path / "spill-root"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def _leftovers(root) -> list[str]:
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs] + [
        d for d, _, _ in os.walk(root) if d != str(root)]


@pytest.fixture()
def spills(monkeypatch) -> list[int]:
    """Rows of every run written to local disk."""
    seen: list[int] = []
    original = spill_mod.SpillDirectory.write_run

    def write_run(self, chunks, schema, key_names):
        run = original(self, chunks, schema, key_names)
        seen.append(run.rows)
        return run

    monkeypatch.setattr(spill_mod.SpillDirectory, "write_run", write_run)
    return seen


def _table(tmp_path, name: str, engine: str = "deduplicate", **opts: str):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(f"db.{name}", SCHEMA, primary_keys=["k", "p"], partition_keys=["p"],
                            options={"bucket": "2", "write-only": "true", "rowkind.field": "op",
                                     "write-buffer-size": "64 kb", **ENGINES[engine], **opts})


def _batches(seed: int, n_batches: int, rows: int, engine: str, keys: int = 3000) -> list[pa.Table]:
    """Random upserts over a small key space: updates and deletes of one key land in different
    batches, and so in different spilled runs."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_batches):
        k = rng.integers(0, keys, rows)
        kinds = np.array(["+I", "+U", "-U", "-D"] if engine != "first-row" else ["+I"])
        weights = [0.55, 0.2, 0.1, 0.15] if engine != "first-row" else [1.0]
        op = rng.choice(kinds, rows, p=weights)
        if engine == "partial-update":
            op[op == "-U"] = "+U"  # a -U is a no-op there; keep deletes and updates
        v = rng.integers(-1000, 1000, rows)
        s = np.array([f"s{x:05d}" for x in rng.integers(0, 50_000, rows)], dtype=object)
        if engine == "partial-update":
            s[rng.random(rows) < 0.4] = None  # null fields keep the older value
        out.append(pa.table({"k": k, "p": np.array(["a", "b"], dtype=object)[k % 2], "v": v, "s": s, "op": op},
                            schema=SCHEMA))
    return out


def _model(batches: list[pa.Table]) -> dict[tuple[int, str], tuple[int, str]]:
    """Deduplicate semantics: the last record of a key wins, a -U/-D removes it."""
    state: dict[tuple[int, str], tuple[int, str]] = {}
    for b in batches:
        for r in b.to_pylist():
            key = (r["k"], r["p"])
            if r["op"] in ("-U", "-D"):
                state.pop(key, None)
            else:
                state[key] = (r["v"], r["s"])
    return state


def _content(t) -> list[dict]:
    return sorted(t.to_arrow(columns=["k", "p", "v", "s"]).to_pylist(), key=lambda r: (r["k"], r["p"]))


def _commit(t, batches: list[pa.Table], ident: int) -> list:
    w = t.new_writer("u")
    try:
        for b in batches:
            w.write_arrow(b)
        msgs = w.prepare_commit()
        t.new_committer("u").commit(msgs, ident)
    finally:
        w.close()
    return msgs


@pytest.mark.parametrize("engine", list(ENGINES))
def test_spilled_writes_equal_the_flushing_writer_and_one_level0_file_per_bucket(tmp_path, spills, private_tmp,
                                                                                  engine):
    spilled = _table(tmp_path, "spilled", engine)
    flushed = _table(tmp_path, "flushed", engine, **{"write-buffer-spillable": "false"})
    # the same writes through a buffer that never fills: one merge per commit, what spilling gives
    # for every engine (flushing a small buffer differs for partial-update's remove-record-on-delete,
    # which is not associative: a -D merged with a later insert in one flush is forgotten)
    whole = _table(tmp_path, "whole", engine, **{"write-buffer-spillable": "false", "write-buffer-size": "1 gb"})
    commits = [_batches(7, 6, 2500, engine), _batches(8, 4, 2500, engine)]
    for i, batches in enumerate(commits, start=1):
        before = len(spills)
        msgs = _commit(spilled, batches, i)
        assert len(spills) - before >= 2 * 4  # several spills per (partition, bucket)
        # one level-0 file per (partition, bucket) per commit, for all those runs
        assert sorted((m.partition, m.bucket) for m in msgs) == sorted({(m.partition, m.bucket) for m in msgs})
        assert all(len(m.new_files) == 1 and m.new_files[0].level == 0 for m in msgs)
        flushed_msgs = _commit(flushed, batches, i)
        assert sum(len(m.new_files) for m in flushed_msgs) > 2 * len(msgs)  # the old behaviour: many
        # same sequence numbering: the merged file spans what the flushed files span, per bucket
        # (first commit only: later commits number on from the surviving rows' maximum, which
        # differs when the engine drops a bucket's newest record, e.g. first-row)
        span = {(m.partition, m.bucket): (m.new_files[0].min_sequence_number, m.new_files[0].max_sequence_number)
                for m in msgs}
        for m in flushed_msgs if i == 1 else ():
            lo, hi = span[(m.partition, m.bucket)]
            first = min(f.min_sequence_number for f in m.new_files)
            last = max(f.max_sequence_number for f in m.new_files)
            assert first <= lo <= hi <= last
            if engine == "deduplicate":
                assert hi == last  # the newest record of a bucket always survives
        _commit(whole, batches, i)
        assert _content(spilled) == _content(whole)
        if engine != "partial-update":
            assert _content(spilled) == _content(flushed)
        assert _leftovers(private_tmp) == []
    if engine == "deduplicate":
        model = _model([b for c in commits for b in c])
        assert {(r["k"], r["p"]): (r["v"], r["s"]) for r in _content(spilled)} == model
    # compaction over the merged files agrees too (first-row reads only compacted files, so this
    # is where its content shows)
    for t in (spilled, flushed, whole):
        t.compact(full=True)
    assert _content(spilled) == _content(whole)
    assert len(_content(spilled)) > 1000
    if engine == "first-row":
        first: dict[tuple[int, str], tuple[int, str]] = {}
        for b in (b for c in commits for b in c):
            for r in b.to_pylist():
                first.setdefault((r["k"], r["p"]), (r["v"], r["s"]))
        assert {(r["k"], r["p"]): (r["v"], r["s"]) for r in _content(spilled)} == first


def test_a_spilled_update_or_delete_wins_over_an_older_run(tmp_path, spills):
    t = _table(tmp_path, "t")
    n = 20_000
    base = pa.table({"k": np.arange(n), "p": pa.array(["a"] * n), "v": np.arange(n), "s": pa.array(["x"] * n),
                     "op": pa.array(["+I"] * n)}, schema=SCHEMA)
    upd = base.slice(0, 5000).set_column(2, "v", pa.array(np.full(5000, -1))).set_column(
        4, "op", pa.array(["+U"] * 5000))
    dele = base.slice(5000, 5000).set_column(4, "op", pa.array(["-D"] * 5000))
    again = base.slice(5000, 10).set_column(2, "v", pa.array(np.full(10, 7)))  # re-insert after the delete
    msgs = _commit(t, [base, upd, dele, again], 1)
    assert len(spills) >= 3 and all(len(m.new_files) == 1 for m in msgs)
    got = {r["k"]: r["v"] for r in _content(t)}
    assert len(got) == n - 5000 + 10
    assert all(got[k] == -1 for k in range(5000))
    assert all(got[k] == 7 for k in range(5000, 5010))
    assert all(got[k] == k for k in range(10_000, n))


def test_non_associative_partial_update_matches_one_merge(tmp_path, spills):
    """remove-record-on-delete: run 1 sets s, run 2 deletes and re-inserts with s null. Runs keep
    raw records, so the final merge still sees the -D and s stays null."""
    t = _table(tmp_path, "t", "partial-update")
    n = 12_000
    ks = np.arange(n)

    def batch(op: str, s: str | None) -> pa.Table:
        return pa.table({"k": ks, "p": pa.array(["a"] * n), "v": ks, "s": pa.array([s] * n, pa.string()),
                         "op": pa.array([op] * n)}, schema=SCHEMA)

    _commit(t, [batch("+I", "old"), batch("-D", None), batch("+I", None)], 1)
    assert len(spills) >= 2
    assert {r["s"] for r in _content(t)} == {None}


def test_rolling_at_target_file_size_keeps_key_disjoint_level0_files(tmp_path, spills):
    t = _table(tmp_path, "t", **{"target-file-size": "16 kb"})
    msgs = _commit(t, _batches(3, 6, 4000, "deduplicate", keys=40_000), 1)
    assert spills
    assert any(len(m.new_files) > 1 for m in msgs)  # rolled
    for m in msgs:
        files = m.new_files
        # the merged output is one sorted run cut into files: key ranges do not overlap
        for a, b in itertools.pairwise(files):
            assert a.max_key != b.min_key
        assert all(f.level == 0 for f in files)
    assert {(r["k"], r["p"]): (r["v"], r["s"]) for r in _content(t)} == _model(
        _batches(3, 6, 4000, "deduplicate", keys=40_000))


def test_max_num_file_handles_folds_runs(tmp_path, spills):
    t = _table(tmp_path, "t", **{"local-sort.max-num-file-handles": "2"})
    batches = _batches(11, 6, 2500, "deduplicate")
    msgs = _commit(t, batches, 1)
    assert all(len(m.new_files) == 1 for m in msgs)
    assert {(r["k"], r["p"]): (r["v"], r["s"]) for r in _content(t)} == _model(batches)


def test_max_disk_size_falls_back_to_level0_flushes(tmp_path, monkeypatch):
    peak = []
    original = spill_mod.SpillDirectory.write_run

    def write_run(self, chunks, schema, key_names):
        run = original(self, chunks, schema, key_names)
        peak.append(self.disk_bytes)
        return run

    monkeypatch.setattr(spill_mod.SpillDirectory, "write_run", write_run)
    t = _table(tmp_path, "t", **{"write-buffer-spill.max-disk-size": "96 kb"})
    batches = _batches(5, 8, 2500, "deduplicate")
    msgs = _commit(t, batches, 1)
    assert peak and max(peak) <= 96 * 1024
    assert any(len(m.new_files) > 1 for m in msgs)  # the budget forced real flushes
    assert {(r["k"], r["p"]): (r["v"], r["s"]) for r in _content(t)} == _model(batches)


def test_spill_files_are_removed_on_abort_close_failure_and_gc(tmp_path, spills, private_tmp):
    t = _table(tmp_path, "t")
    batches = _batches(1, 3, 2500, "deduplicate")

    def spilled_writer() -> TableWriter:
        w = t.new_writer("u")
        for b in batches:
            w.write_arrow(b)
        assert _leftovers(private_tmp)  # runs are on local disk, outside the table
        return w

    w = spilled_writer()
    w.abort()
    assert _leftovers(private_tmp) == []
    w.close()

    w = spilled_writer()
    w.close()
    assert _leftovers(private_tmp) == []

    with pytest.raises(RuntimeError, match="boom"), t.new_writer("u") as w:
        for b in batches:
            w.write_arrow(b)
        raise RuntimeError("boom")
    assert _leftovers(private_tmp) == []

    w = spilled_writer()
    del w
    gc.collect()
    assert _leftovers(private_tmp) == []
    assert not [f for d, _, fs in os.walk(tmp_path / "wh") for f in fs if f.endswith(".arrow")]
    assert t.latest_snapshot() is None


def test_a_failure_while_merging_runs_leaves_no_files(tmp_path, spills, private_tmp, monkeypatch):
    t = _table(tmp_path, "t")
    w = t.new_writer("u")
    for b in _batches(2, 4, 2500, "deduplicate"):
        w.write_arrow(b)
    calls = []
    original = spill_mod.SpillRun.batches

    def failing(self):
        for i, batch in enumerate(original(self)):
            calls.append(i)
            if len(calls) > 6:
                raise OSError("disk gone")
            yield batch

    monkeypatch.setattr(spill_mod.SpillRun, "batches", failing)
    with pytest.raises(OSError, match="disk gone"):
        w.prepare_commit()
    w.abort()
    w.close()
    assert _leftovers(private_tmp) == []
    data_files = [f for d, _, fs in os.walk(tmp_path / "wh") for f in fs if f.endswith(".parquet")]
    assert data_files == []


def test_spilling_default_and_kept_off_combinations(tmp_path):
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    pk = cat.create_table("db.pk", SCHEMA, primary_keys=["k", "p"], options={"bucket": "1"})
    off = cat.create_table("db.off", SCHEMA, primary_keys=["k", "p"],
                           options={"bucket": "1", "write-buffer-spillable": "false"})
    inp = cat.create_table("db.inp", SCHEMA, primary_keys=["k", "p"],
                           options={"bucket": "1", "changelog-producer": "input"})
    app = cat.create_table("db.app", SCHEMA)
    assert pk.new_writer("u").spilling  # unset: on, as Paimon does for bounded writes
    assert not off.new_writer("u").spilling
    assert not inp.new_writer("u").spilling  # the changelog is each flush's raw input
    assert not app.new_writer("u").spilling  # append files are unsorted arrival order


def test_changelog_input_keeps_flushing_level0_files(tmp_path, spills):
    t = _table(tmp_path, "t", **{"changelog-producer": "input"})
    batches = _batches(4, 4, 2500, "deduplicate")
    msgs = _commit(t, batches, 1)
    assert spills == []
    assert sum(len(m.new_files) for m in msgs) > len(msgs)
    assert all(m.new_changelog for m in msgs)
    assert {(r["k"], r["p"]): (r["v"], r["s"]) for r in _content(t)} == _model(batches)


def test_key_batches_never_split_a_key():
    keys = np.repeat(np.arange(50), np.random.default_rng(0).integers(1, 9, 50))
    t = pa.table({"k": keys, "p": pa.array(["a"] * len(keys))})
    parts = list(spill_mod.key_batches(t, ["k", "p"], rows=6))
    assert sum(p.num_rows for p in parts) == t.num_rows and len(parts) > 10
    for a, b in itertools.pairwise(parts):
        assert a.column("k")[-1].as_py() < b.column("k")[0].as_py()


@pytest.mark.parametrize("engine", ["deduplicate", "aggregation", "partial-update"])
def test_tiny_run_batches_and_merge_steps_give_the_same_content(tmp_path, monkeypatch, spills, engine):
    """Runs of many small batches (keys with several records straddle would-be cuts) and a merge
    that yields often: the k-way merge must still see all of a key's records at once."""
    import lake_assets.ops.write_spill as write_mod

    monkeypatch.setattr(spill_mod, "MIN_BATCH_ROWS", 1)
    monkeypatch.setattr(spill_mod, "MAX_BATCH_ROWS", 7)
    monkeypatch.setattr(write_mod, "SPILL_MERGE_ROWS", 10)
    spilled = _table(tmp_path, "spilled", engine)
    whole = _table(tmp_path, "whole", engine, **{"write-buffer-spillable": "false", "write-buffer-size": "1 gb"})
    batches = _batches(21, 5, 2500, engine, keys=600)  # ~4 records per key per batch
    msgs = _commit(spilled, batches, 1)
    _commit(whole, batches, 1)
    assert spills and all(len(m.new_files) == 1 for m in msgs)
    assert _content(spilled) == _content(whole)


def test_commit_time_merge_of_many_runs_is_bounded_per_chunk(tmp_path, spills, monkeypatch):
    """The merge of a bucket's spilled runs gathers at most about two steps of rows per merge call,
    however many runs there are (it used to take a batch-sized slice of every run per step)."""
    from lake_assets.ops import write_spill as write_mod

    monkeypatch.setattr(write_mod, "SPILL_MERGE_ROWS", 500)
    sizes: list[int] = []
    original = Level0Flush._merge_chunk

    def merge_chunk(self, chunk):
        sizes.append(chunk.num_rows)
        return original(self, chunk)

    monkeypatch.setattr(Level0Flush, "_merge_chunk", merge_chunk)
    t = _table(tmp_path, "many_runs")
    batches = _batches(11, 24, 1500, "deduplicate", keys=20_000)
    _commit(t, batches, 1)
    assert len(spills) >= 16  # many runs per bucket
    runs_per_bucket = len(spills) // 2 + 1
    # min rows + step rows, plus the frontier key's other versions (a few per run: spill runs keep raw records)
    assert sizes and max(sizes) <= 2 * 500 + 4 * runs_per_bucket
    assert {(k, p): (v, s) for k, p, v, s in (r.values() for r in _content(t))} == _model(batches)


def test_run_batches_are_sized_so_a_full_fan_in_holds_one_write_buffer(tmp_path, monkeypatch):
    """Each spilled batch holds about write-buffer-size / local-sort.max-num-file-handles bytes, so
    the commit-time merge (one batch per run, at most that many runs) holds about one buffer."""
    from lake_assets.ops.spill import MIN_SPILL_BATCH_BYTES, SPILL_BATCH_BYTES, spill_batch_bytes

    assert spill_batch_bytes(256 * 2**20, 128) == SPILL_BATCH_BYTES
    assert spill_batch_bytes(64 * 2**20, 128) == 512 * 1024
    assert spill_batch_bytes(2**20, 128) == MIN_SPILL_BATCH_BYTES
    seen: list[int] = []
    original = spill_mod.SpillRun.batches

    def batches(self):
        for b in original(self):
            seen.append(b.nbytes)
            yield b

    monkeypatch.setattr(spill_mod.SpillRun, "batches", batches)
    t = _table(tmp_path, "sized", **{"write-buffer-size": "2 mb", "local-sort.max-num-file-handles": "8"})
    batches_in = _batches(5, 6, 20_000, "deduplicate", keys=200_000)
    _commit(t, batches_in, 1)
    assert seen and max(seen) <= 2 * 256 * 1024  # 2 mb / 8 handles, plus a row group's rounding
    assert {(k, p): (v, s) for k, p, v, s in (r.values() for r in _content(t))} == _model(batches_in)
