"""A deletion-vector unit's level-0 file whose merge keeps every row but changes value columns is
written as a splice (`ops.compact.splice_rewrite`): the file and its manifest entry are those a
whole rewrite writes (a twin table written the same rounds with the splice off), for aggregation
and partial-update tables of many column types; tables whose files the splice cannot make
(file index, ORC, Parquet bloom filters) are written whole."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.ops.compact import rewrite

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("name", pa.string()), ("qty", pa.int32()),
    ("amount", pa.float64()), ("price", pa.decimal128(12, 2)), ("day", pa.date32()), ("note", pa.string()),
])
AGGREGATION = {"merge-engine": "aggregation", "fields.qty.aggregate-function": "sum",
               "fields.amount.aggregate-function": "sum", "fields.price.aggregate-function": "sum",
               "fields.day.aggregate-function": "max", "fields.note.aggregate-function": "last_non_null_value"}
PARTIAL_UPDATE = {"merge-engine": "partial-update"}


def _rows(ids: np.ndarray, round_: int, partial: bool) -> pa.Table:
    n = len(ids)
    gap = [partial and (i + round_) % 3 == 0 for i in ids.tolist()]
    return pa.table({
        "id": ids,
        "name": [f"n{i % 13}" for i in ids.tolist()],
        "qty": pa.array([None if g else (i % 7) - round_ for i, g in zip(ids.tolist(), gap, strict=True)], pa.int32()),
        "amount": pa.array([None if i % 5 == 0 else i * 0.25 + round_ for i in ids.tolist()]),
        "price": pa.array([decimal.Decimal(i % 100 + round_) / 4 for i in ids.tolist()], pa.decimal128(12, 2)),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=(i * 3 + round_) % 50) for i in ids.tolist()]),
        "note": pa.array([None if g or i % 4 else f"r{round_}" for i, g in zip(ids.tolist(), gap, strict=True)]),
    }, schema=SCHEMA).slice(0, n)


def _spy(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count the splices per table; tables named ``whole`` never splice (the twin to compare with)."""
    real = rewrite.spliced_rewrite
    counts: Counter[str] = Counter()

    def spy(store, split, writer, meta, rows, merged, level, rollings):  # type: ignore[no-untyped-def]
        table = Path(store.paths.root).name
        out = None if table == "whole" else real(store, split, writer, meta, rows, merged, level, rollings)
        counts[f"{table}:{'spliced' if out is not None else 'whole'}"] += 1
        return out

    monkeypatch.setattr(rewrite, "spliced_rewrite", spy)
    return counts


def _files(table) -> list:  # type: ignore[no-untyped-def]
    return sorted((f for s in table.plan() for f in s.files), key=lambda f: (f.level, f.min_key, f.min_sequence_number))


_OWN = {"file_name", "creation_time_ms"}


@pytest.mark.parametrize(("options", "partial"), [pytest.param(AGGREGATION, False, id="aggregation"),
                                                  pytest.param(PARTIAL_UPDATE, True, id="partial-update")])
def test_a_spliced_file_is_the_file_a_whole_rewrite_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           options: dict[str, str], partial: bool) -> None:
    counts = _spy(monkeypatch)
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    opts = {"bucket": "2", "deletion-vectors.enabled": "true", "file.compression": "zstd", **options}
    spliced = cat.create_table("db.spliced", SCHEMA, primary_keys=["id"], options=opts)
    whole = cat.create_table("db.whole", SCHEMA, primary_keys=["id"], options=opts)
    rng = np.random.default_rng(7)
    for round_ in range(4):
        ids = np.arange(3_000) if round_ == 0 else np.sort(rng.choice(3_000, 400, replace=False))
        for t in (spliced, whole):
            t.write_arrow(_rows(ids, round_, partial))
        assert spliced.to_arrow().sort_by("id").equals(whole.to_arrow().sort_by("id"))
        mine, theirs = _files(spliced), _files(whole)
        assert len(mine) == len(theirs)
        for a, b in zip(mine, theirs, strict=True):
            assert {k: v for k, v in dataclasses.asdict(a).items() if k not in _OWN} == \
                   {k: v for k, v in dataclasses.asdict(b).items() if k not in _OWN}
    assert counts["spliced:spliced"] >= 4 and not counts["spliced:whole"], counts
    # the bytes too: each spliced file is the whole rewrite's file
    for a, b in zip(_files(spliced), _files(whole), strict=True):
        pa_, pb = (_path(t, f) for t, f in ((spliced, a), (whole, b)))
        assert Path(pa_).read_bytes() == Path(pb).read_bytes()


def _path(table, meta) -> str:  # type: ignore[no-untyped-def]
    for split in table.plan():
        if any(f.file_name == meta.file_name for f in split.files):
            return str(table.store.data_file_path(split.partition, split.bucket, meta))
    raise AssertionError(meta.file_name)


@pytest.mark.parametrize("extra", [
    pytest.param({"file-index.bloom-filter.columns": "name"}, id="file-index"),
    pytest.param({"file.format": "orc"}, id="orc"),
    pytest.param({"parquet.bloom.filter.enabled#name": "true"}, id="parquet-bloom"),
])
def test_files_the_splice_cannot_make_are_written_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        extra: dict[str, str]) -> None:
    counts = _spy(monkeypatch)
    cat = Catalog(str(tmp_path))
    cat.create_database("db")
    opts = {"bucket": "1", "deletion-vectors.enabled": "true", **AGGREGATION, **extra}
    table = cat.create_table("db.t", SCHEMA, primary_keys=["id"], options=opts)
    plain = cat.create_table("db.plain", SCHEMA, primary_keys=["id"],
                             options={**opts, "deletion-vectors.enabled": "false"})
    for round_, ids in enumerate((np.arange(500), np.arange(0, 500, 3), np.arange(0, 500, 7))):
        for t in (table, plain):
            t.write_arrow(_rows(ids, round_, False))
    assert counts["t:whole"] >= 2 and not counts["t:spliced"], counts
    assert table.to_arrow().sort_by("id").equals(plain.to_arrow().sort_by("id"))


def test_a_table_off_the_local_file_system_is_written_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The splice reads the level-0 file's bytes again: only from a local file system."""
    counts = _spy(monkeypatch)
    cat = Catalog("memory://dv-splice-remote")
    cat.create_database("db")
    table = cat.create_table("db.remote", SCHEMA, primary_keys=["id"],
                             options={"bucket": "1", "deletion-vectors.enabled": "true", **AGGREGATION})
    for round_, ids in enumerate((np.arange(500), np.arange(0, 500, 3), np.arange(0, 500, 7))):
        table.write_arrow(_rows(ids, round_, False))
    assert counts["remote:whole"] >= 2 and not counts["remote:spliced"], counts
    assert table.to_arrow().num_rows == 500
