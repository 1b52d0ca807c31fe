"""The hash index codec and the dynamic-bucket assigner, on their own (no table)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from lake_assets.errors import CorruptMetadataError, OptionError
from lake_assets.lsm.sorted_sets import merge_sorted_unique, sorted_unique
from lake_assets.ops.dynamic_bucket import DynamicBucketAssigner, assigner_ids, partition_hash
from lake_assets.spec.binary_row import EMPTY_ROW
from lake_assets.spec.hash_index import HASH_INDEX, decode_hashes, encode_hashes
from lake_assets.spec.manifest import FileKind, IndexManifestEntry

P = EMPTY_ROW


def h(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int32)


def test_hash_index_file_is_big_endian_int32s() -> None:
    data = encode_hashes(h(1, -1, 2**31 - 1, -(2**31)))
    assert data == bytes.fromhex("00000001" "ffffffff" "7fffffff" "80000000")
    assert decode_hashes(data, "f").tolist() == [1, -1, 2**31 - 1, -(2**31)]
    assert decode_hashes(b"", "f").tolist() == []


def test_torn_hash_index_file_is_refused() -> None:
    with pytest.raises(CorruptMetadataError, match="index-x has 6 bytes"):
        decode_hashes(b"\0" * 6, "index-x")


def _files(store: dict[str, bytes]) -> Callable[[str, bytes], None]:
    """``write_file`` into a dict standing for ``index/``."""
    return store.__setitem__


def test_new_keys_fill_buckets_to_the_target_in_arrival_order() -> None:
    a = DynamicBucketAssigner("db.t", [], lambda n: b"", target_row_num=3)
    assert a.assign(P, h(50, 40, 30, 50, 20, 10, 0, 60)).tolist() == [0, 0, 0, 0, 1, 1, 1, 2]
    # known keys keep their bucket; a new one goes to the first bucket with room
    assert a.assign(P, h(10, 70, 40, 80, 90)).tolist() == [1, 2, 0, 2, 3]


def test_loaded_index_decides_known_keys_and_counts_toward_the_target() -> None:
    store: dict[str, bytes] = {"i0": encode_hashes(h(5, 6, 7)), "i1": encode_hashes(h(8))}
    entries = [IndexManifestEntry(FileKind.ADD, P, 0, HASH_INDEX, "i0", 12, 3),
               IndexManifestEntry(FileKind.ADD, P, 1, HASH_INDEX, "i1", 4, 1)]
    a = DynamicBucketAssigner("db.t", entries, store.__getitem__, target_row_num=3)
    # 8 stays in 1; bucket 0 is full, so new keys go to 1 (two slots left), then a new bucket 2
    assert a.assign(P, h(8, 100, 6, 101, 102)).tolist() == [1, 1, 0, 1, 2]
    out = a.prepare_commit(_files(store))
    assert set(out) == {(P, 1), (P, 2)}  # bucket 0 got only known keys: its index is unchanged
    before1, after1 = out[(P, 1)].before, out[(P, 1)].after
    assert [e.file_name for e in before1] == ["i1"]
    assert after1[0].row_count == 3 and decode_hashes(store[after1[0].file_name], "x").tolist() == [8, 100, 101]
    assert out[(P, 2)].before == ()
    # the new files are the next round's base
    a.assign(P, h(102, 103))
    again = a.prepare_commit(_files(store))
    assert again[(P, 2)].before == out[(P, 2)].after
    assert decode_hashes(store[again[(P, 2)].after[0].file_name], "x").tolist() == [102, 103]


def test_ignore_previous_writes_only_the_new_keys_but_assigns_by_the_old_index() -> None:
    store = {"i0": encode_hashes(h(5, 6))}
    entries = [IndexManifestEntry(FileKind.ADD, P, 0, HASH_INDEX, "i0", 8, 2)]
    a = DynamicBucketAssigner("db.t", entries, store.__getitem__, target_row_num=2, ignore_previous=True)
    assert a.assign(P, h(6, 9)).tolist() == [0, 1]
    out = a.prepare_commit(_files(store))
    assert decode_hashes(store[out[(P, 0)].after[0].file_name], "x").tolist() == [6]
    assert out[(P, 0)].before == ()  # replaces nothing: the overwrite's commit drops i0 with the partition


def test_several_assigners_own_interleaved_buckets() -> None:
    a = DynamicBucketAssigner("db.t", [], lambda n: b"", target_row_num=2, num_assigners=3)
    keys = h(*range(30))
    buckets = a.assign(P, keys)
    owner = assigner_ids(partition_hash(P), keys, 3)
    assert ((buckets % 3) == owner).all()
    assert sorted(set(buckets.tolist())) == list(range(15))
    assert np.bincount(buckets).tolist() == [2] * 15


def test_partitions_have_their_own_buckets() -> None:
    p1, p2 = b"\0\0\0\1" + b"\0" * 8 + b"a" + b"\0" * 7, b"\0\0\0\1" + b"\0" * 8 + b"b" + b"\0" * 7
    a = DynamicBucketAssigner("db.t", [], lambda n: b"", target_row_num=1)
    assert a.assign(p1, h(1, 2)).tolist() == [0, 1]
    assert a.assign(p2, h(2, 1)).tolist() == [0, 1]


def test_bad_targets_and_too_many_buckets_are_refused() -> None:
    with pytest.raises(OptionError, match="target-row-num must be >= 1"):
        DynamicBucketAssigner("db.t", [], lambda n: b"", target_row_num=0)
    a = DynamicBucketAssigner("db.t", [], lambda n: b"", target_row_num=1, num_assigners=16000)
    with pytest.raises(OptionError, match="more than 32767 buckets"):
        a.assign(P, h(*range(100_000)))


def test_sorted_sets_of_hashes_match_numpys_set_operations() -> None:
    rng = np.random.default_rng(14)
    for n, m in ((0, 0), (0, 5), (5, 0), (1, 1), (1000, 300), (300, 1000)):
        base = np.unique(rng.integers(-50, 2000, n, dtype=np.int64).astype(np.int32))
        more = rng.integers(-60, 2100, m, dtype=np.int64).astype(np.int32)  # repeats, any order
        assert np.array_equal(sorted_unique(more), np.unique(more))
        merged = merge_sorted_unique(base, more)
        assert merged.dtype == np.int32 and np.array_equal(merged, np.union1d(base, more))
    base = h(-5, 1, 9)
    assert sorted_unique(base) is base  # sorted and distinct already: no copy
    assert merge_sorted_unique(base, h(9, 1, 1)) is base  # nothing new: the same array


def test_a_hash_in_two_files_takes_the_later_files_bucket() -> None:
    # two writers each recorded hash 7 (and 3): Paimon's loader lets the later file win
    store = {"i0": encode_hashes(h(3, 7, 9)), "i1": encode_hashes(h(1, 3, 7))}
    entries = [IndexManifestEntry(FileKind.ADD, P, 0, HASH_INDEX, "i0", 12, 3),
               IndexManifestEntry(FileKind.ADD, P, 4, HASH_INDEX, "i1", 12, 3)]
    a = DynamicBucketAssigner("db.t", entries, store.__getitem__, target_row_num=100)
    assert a.assign(P, h(9, 7, 3, 1)).tolist() == [0, 4, 4, 4]
    later_first = [entries[1], entries[0]]
    b = DynamicBucketAssigner("db.t", later_first, store.__getitem__, target_row_num=100)
    assert b.assign(P, h(9, 7, 3, 1)).tolist() == [0, 0, 0, 4]


def test_writers_of_a_table_share_what_they_loaded_and_see_every_new_file(tmp_path) -> None:
    # Index files never change: a second writer starting from the same files reuses the loaded
    # index (no read), and one starting from the files the first wrote reads none back either.
    store = {"i0": encode_hashes(h(5, 6, 7)), "i1": encode_hashes(h(8))}
    entries = [IndexManifestEntry(FileKind.ADD, P, 0, HASH_INDEX, "i0", 12, 3),
               IndexManifestEntry(FileKind.ADD, P, 1, HASH_INDEX, "i1", 4, 1)]
    reads: list[str] = []

    def read(name: str) -> bytes:
        reads.append(name)
        return store[name]

    def writer(files: list[IndexManifestEntry]) -> DynamicBucketAssigner:
        return DynamicBucketAssigner("db.t", files, read, target_row_num=3, cache_scope=str(tmp_path))

    first = writer(entries)
    assert first.assign(P, h(8, 100, 6)).tolist() == [1, 1, 0]
    assert sorted(reads) == ["i0", "i1"]
    out = first.prepare_commit(_files(store))
    second = writer(entries)  # the same files: nothing read again, same answers, own counts
    assert second.assign(P, h(8, 100, 6, 101, 102)).tolist() == [1, 1, 0, 1, 2]
    assert writer(entries).assign(P, h(101)).tolist() == [1]  # the second's new keys stayed its own
    assert sorted(reads) == ["i0", "i1"]
    after = [entries[0], *out[(P, 1)].after]  # the first writer's commit replaced bucket 1's file
    third = writer(after)
    assert third.assign(P, h(100, 101, 8)).tolist() == [1, 1, 1]  # bucket 1 holds 8 and 100: room for 101
    assert sorted(reads) == ["i0", "i1"]  # the new file came from the first writer, not from disk
    # another table's writer with the same file names shares nothing
    other = DynamicBucketAssigner("db.u", entries, read, target_row_num=3, cache_scope=str(tmp_path / "u"))
    other.assign(P, h(1))
    assert sorted(reads) == ["i0", "i0", "i1", "i1"]
