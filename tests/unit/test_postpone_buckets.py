"""How many real buckets the postpone compaction gives a partition compacted for the first time
(ops/postpone.py `new_bucket_num`, Paimon's ``PostponeUtils``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lake_assets.errors import OptionError
from lake_assets.ops.postpone import new_bucket_num
from lake_assets.spec.manifest import DataFileMeta, FileKind, ManifestEntry, SimpleStats


def store(options: dict[str, str]) -> SimpleNamespace:
    return SimpleNamespace(name="db.t", schema=SimpleNamespace(options=options))


def files(*sizes_rows: tuple[int, int]) -> list[ManifestEntry]:
    return [ManifestEntry(FileKind.ADD, b"", -2, -2, DataFileMeta(
        f"data-u-x-s-0-w-y-{i}.parquet", size, rows, b"", b"", SimpleStats.EMPTY, SimpleStats.EMPTY, 0, 0, 0, 0))
        for i, (size, rows) in enumerate(sizes_rows)]


def test_default_bucket_num_is_used_exactly():
    assert new_bucket_num(store({"postpone.default-bucket-num": "3"}), files((10 << 30, 5))) == 3


def test_estimated_from_size_by_default_one_gib_per_bucket():
    assert new_bucket_num(store({}), files((100, 5))) == 1
    assert new_bucket_num(store({}), files((1 << 30, 5))) == 1
    assert new_bucket_num(store({}), files((1 << 30, 5), (1, 1))) == 2
    assert new_bucket_num(store({"postpone.target-size-per-bucket": "64 mb"}), files((200 << 20, 5))) == 4


def test_row_target_takes_precedence_over_size():
    opts = {"postpone.target-row-num-per-bucket": "10", "postpone.target-size-per-bucket": "1 b"}
    assert new_bucket_num(store(opts), files((1000, 25))) == 3


@pytest.mark.parametrize("opts", [{"postpone.default-bucket-num": "0"}, {"postpone.default-bucket-num": "x"},
                                  {"postpone.target-row-num-per-bucket": "-1"}])
def test_bad_values_are_refused_by_name(opts):
    with pytest.raises(OptionError, match=next(iter(opts))):
        new_bucket_num(store(opts), files((1, 1)))
