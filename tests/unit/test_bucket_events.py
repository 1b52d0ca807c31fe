"""The vectorized replay of Paimon's BucketAssigner over one partition's placements and move
decrements (`lsm/bucket_events.py`) against the event-by-event replay, on random batches: known
and same-batch decrements, buckets over the target, gaps below existing buckets, several
assigners, targets of 1 to 4."""

from __future__ import annotations

import numpy as np
import pytest

from lake_assets.errors import OptionError
from lake_assets.lsm import bucket_events
from lake_assets.lsm.bucket_events import place_in_arrival_order, replay_one_by_one


def _case(rng: np.random.Generator) -> tuple[dict[int, int], int, int, np.ndarray, np.ndarray, np.ndarray,
                                               np.ndarray, np.ndarray]:
    n = int(rng.integers(1, 4))
    target = int(rng.integers(1, 5))
    used = rng.choice(12, size=int(rng.integers(0, 8)), replace=False)
    if rng.random() < 0.6:  # no gap below an existing bucket: the vectorized path throughout
        used = np.arange(len(used))
    counts = {int(b): int(rng.integers(0, target + 2)) for b in used}
    places = int(rng.integers(0, 40))
    decs = int(rng.integers(0, 30))
    times = rng.permutation(places + decs + 5)
    place_times = np.sort(times[:places]) if rng.random() < 0.3 else times[:places]
    owners = rng.integers(0, n, size=places)
    dec_times = times[places:places + decs].copy()
    dec_buckets = np.full(decs, -1, dtype=np.int64)
    dec_sources = np.full(decs, -1, dtype=np.int64)
    known = list(counts) or [0]
    for j in range(decs):
        earlier = np.flatnonzero(place_times < dec_times[j])
        used = set(dec_sources[:j].tolist())
        free = [int(p) for p in earlier if int(p) not in used]
        if free and rng.random() < 0.5:  # a key placed earlier in the batch moves out again
            dec_sources[j] = free[int(rng.integers(0, len(free)))]
        else:
            dec_buckets[j] = known[int(rng.integers(0, len(known)))]
    if decs and places and dec_buckets[0] >= 0 and rng.random() < 0.2:  # at a placement's arrival: first
        dec_times[0] = place_times[0]
    return counts, n, target, owners, place_times, dec_times, dec_buckets, dec_sources


@pytest.mark.parametrize("seed", range(2))
def test_vectorized_replay_places_as_event_by_event(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Small batches: the vectorized path forced (it is taken for batches of many events per
    bucket with slots), an assigner with a gap still replayed event by event."""
    monkeypatch.setattr(bucket_events, "EVENTS_PER_BUCKET", 0)
    replayed = []
    monkeypatch.setattr(bucket_events, "replay_one_by_one",
                        lambda *a: replayed.append(1) or replay_one_by_one(*a))  # type: ignore[func-returns-value]
    rng = np.random.default_rng(seed)
    for _ in range(300):
        counts, n, target, owners, place_times, dec_times, dec_buckets, dec_sources = _case(rng)
        expected_counts = dict(counts)
        expected = np.full(len(owners), -1, dtype=np.int32)
        replay_one_by_one(expected_counts, n, target, owners, np.arange(len(owners)), place_times, dec_times,
                          dec_buckets, dec_sources, expected, "db.t")
        got = place_in_arrival_order(counts, n, target, owners, place_times, dec_times, dec_buckets, dec_sources,
                                     "db.t")
        assert got.tolist() == expected.tolist()
        assert {b: c for b, c in counts.items() if c} == {b: c for b, c in expected_counts.items() if c}
    assert 0 < len(replayed) < 100  # of about 400 assigners placing


def test_many_moves_through_one_bucket_keep_javas_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Target 2, bucket 0 full: each move out frees a slot the next placement takes; placements
    with no freed slot open bucket 1, then 2 (lowest unused), and a key placed into bucket 1 and
    moved out again frees its slot there for the last placement."""
    monkeypatch.setattr(bucket_events, "EVENTS_PER_BUCKET", 0)
    counts = {0: 2}
    owners = np.zeros(6, dtype=np.int64)
    place_times = np.array([1, 3, 4, 5, 7, 9])
    dec_times = np.array([0, 2, 8])
    dec_buckets = np.array([0, 0, -1])
    dec_sources = np.array([-1, -1, 2])  # the third placement (bucket 1) moves out at 8
    got = place_in_arrival_order(counts, 1, 2, owners, place_times, dec_times, dec_buckets, dec_sources, "db.t")
    assert got.tolist() == [0, 0, 1, 1, 2, 1]
    assert counts == {0: 2, 1: 2, 2: 1}


def test_too_many_buckets_is_refused_by_name() -> None:
    with pytest.raises(OptionError, match="more than 32767 buckets"):
        place_in_arrival_order(dict.fromkeys(range(32767), 1), 1, 1, np.zeros(2, dtype=np.int64), np.array([0, 1]),
                               np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                               np.zeros(0, dtype=np.int64), "db.t")
