"""Paimon's ``BucketAssigner`` over one partition's placements and decrements in arrival order (pure).

A cross-partition ``deduplicate`` batch may move keys out of a partition (each move decrements
the key's old bucket: a free slot) while it places keys into it. Java takes the events one by
one: a placement takes its assigner's lowest bucket holding fewer than the target keys, else the
lowest unused bucket id of its assigner (``assigner``, ``assigner + n``, ...); a decrement frees a
slot of its bucket. `place_in_arrival_order` gives Java's buckets without a step per event.

Per assigner the buckets are taken in ascending id order (a placement only ever reaches a bucket
when every lower one is full at its time): a bucket's free slots (initial ones, and one per
decrement) each serve the first placement reaching the bucket after the slot is free that no earlier
slot served, which a search and a cumulative maximum give per slot (`_served`): per bucket, a
search per slot and one copy of the placements still waiting. The placements it does not serve go on to the next bucket;
past the existing buckets, new bucket ids are opened in ascending order the same way. A decrement of
a key placed earlier in the same batch frees a slot of the bucket that placement got: such releases
are added to their bucket until its served set stops growing (it only grows with more releases, and
a release follows its placement in time, so the fixpoint is Java's). A new bucket id below an
existing one (a gap: no live key in it) would change the buckets above it after its opening; such an
assigner is replayed event by event (`replay_one_by_one`, also the reference the tests compare
with), as is one with many buckets having slots for its events (`EVENTS_PER_BUCKET`), where a step
per bucket would cost more.
"""

from __future__ import annotations

import heapq

import numpy as np

from lake_assets.lsm.bucket_fill import MAX_BUCKETS, too_many_buckets

# A bucket with slots costs the vectorized placement about as much as this many events cost the
# event-by-event replay (measured: ~25 us against ~0.35 us); with more such buckets per event,
# the replay is taken.
EVENTS_PER_BUCKET = 64


def _served(requests: np.ndarray, releases: np.ndarray, free: int) -> np.ndarray:
    """Indices (ascending) of the ``requests`` (sorted arrival times) a bucket serves, having
    ``free`` slots (negative: over the target) and a slot more at each of ``releases`` (arrival
    times; at an equal time the release comes first, as a move's decrement precedes the next
    placement).

    Slots are alike, so the t-th slot in time serves the first request at or after it that no
    earlier slot served: the initial slots the first requests, release t the request at
    ``max(first at or after it, the previous slot's + 1)``, which is ``t + max(free, running
    max of (first at or after release i) - i)``: a cumulative maximum, no step per request."""
    releases = np.sort(releases)
    if free < 0:  # slots freed while the bucket is over the target leave it full
        releases = releases[-free:]
        free = 0
    head = np.arange(min(free, len(requests)))
    if len(head) == len(requests) or not len(releases):
        return head
    steps = np.arange(len(releases))
    at = steps + np.maximum(free, np.maximum.accumulate(np.searchsorted(requests, releases, side="left") - steps))
    return np.concatenate([head, at[at < len(requests)]])


def place_in_arrival_order(counts: dict[int, int], num_assigners: int, target: int, owners: np.ndarray,
                           place_times: np.ndarray, dec_times: np.ndarray, dec_buckets: np.ndarray,
                           dec_sources: np.ndarray, table_name: str) -> np.ndarray:
    """Buckets (int32) of one partition's placements, Java's event by event (see the module doc).

    ``counts``: keys per bucket of the partition, updated here. Placement i has assigner
    ``owners[i]`` and arrival ``place_times[i]``; decrement j arrives at ``dec_times[j]`` and frees
    a slot of bucket ``dec_buckets[j]``, or where that is -1, of the bucket placement
    ``dec_sources[j]`` gets (an earlier placement of the same key). Arrival times are distinct
    between placements, and a decrement's equal to a placement's goes first."""
    out = np.full(len(owners), -1, dtype=np.int32)
    dec_owner = np.where(dec_buckets >= 0, np.abs(np.fmod(dec_buckets, num_assigners)),
                         owners[np.maximum(dec_sources, 0)] if len(owners) else -1)
    for a in np.unique(owners).tolist():
        mine = np.flatnonzero(owners == a)
        mine = mine[np.argsort(place_times[mine], kind="stable")]
        known = (dec_buckets >= 0) & (dec_owner == a)
        dependent = (dec_buckets < 0) & (dec_owner == a)
        local = _place_assigner(counts, num_assigners, target, a, mine, place_times, dec_times[known],
                                dec_buckets[known], dec_times[dependent], dec_sources[dependent], out, table_name)
        if local is None:  # a gap below an existing bucket, or many buckets: event by event
            replay_one_by_one(counts, num_assigners, target, owners, mine, place_times,
                              dec_times[known | dependent], dec_buckets[known | dependent],
                              dec_sources[known | dependent], out, table_name)
        else:
            counts.update(local)
    # decrements of other assigners' buckets with no placement of theirs in this partition
    idle = (dec_buckets >= 0) & ~np.isin(dec_owner, np.unique(owners))
    for b, c in zip(*np.unique(dec_buckets[idle], return_counts=True), strict=True):
        counts[int(b)] = counts.get(int(b), 0) - int(c)
    return out


def _place_assigner(counts: dict[int, int], n: int, target: int, assigner: int, mine: np.ndarray,
                    place_times: np.ndarray, rel_times: np.ndarray, rel_buckets: np.ndarray, dep_times: np.ndarray,
                    dep_sources: np.ndarray, out: np.ndarray, table_name: str) -> dict[int, int] | None:
    """One assigner's placements ``mine`` (sorted by arrival) bucket by bucket; the new counts
    of its buckets, or None where a new bucket would open below an existing one, or where more
    buckets have slots than a step per bucket saves over a step per event."""
    local = {b: c for b, c in counts.items() if abs(b % n) == assigner}
    freed_in = dict(zip(*(x.tolist() for x in np.unique(rel_buckets, return_counts=True)), strict=True))
    for b in freed_in:
        local.setdefault(b, 0)
    existing = sorted(local)
    with_slots = sum(1 for b in existing if target - local[b] + freed_in.get(b, 0) > 0)
    if with_slots * EVENTS_PER_BUCKET > len(mine) + len(rel_times) + len(dep_times):
        return None
    rel_order = np.argsort(rel_buckets, kind="stable")
    rel_sorted = rel_buckets[rel_order]
    waiting, times = mine, place_times[mine]  # placements no lower bucket served, by arrival
    candidate = assigner
    for b in existing:
        lo, hi = np.searchsorted(rel_sorted, [b, b + 1])
        free = target - local[b]
        if not len(waiting) or free + hi - lo <= 0:  # serves nothing: its decrements still land
            local[b] -= int(hi - lo)
            continue
        change, waiting, times = _fill_bucket(b, free, rel_times[rel_order[lo:hi]], waiting, times, dep_times,
                                              dep_sources, out)
        local[b] += change
    while len(waiting):
        while candidate in local:
            candidate += n
        if existing and candidate < existing[-1]:
            out[mine] = -1
            return None
        if candidate >= MAX_BUCKETS:
            raise too_many_buckets(table_name, target)
        local[candidate] = 0
        change, waiting, times = _fill_bucket(candidate, target, np.empty(0, np.int64), waiting, times, dep_times,
                                              dep_sources, out)
        local[candidate] += change
    return local


def _fill_bucket(bucket: int, free: int, freed: np.ndarray, waiting: np.ndarray, times: np.ndarray,
                 dep_times: np.ndarray, dep_sources: np.ndarray,
                 out: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """Serve ``waiting`` placements (arriving at ``times``) from ``bucket`` with ``free`` slots
    and the ``freed`` times of its known decrements; (its count change, the placements left and
    their times). Decrements of keys it serves (``dep_sources``) free slots too, added until the
    served set stops growing."""
    served = _served(times, freed, free)
    out[waiting[served]] = bucket  # the served set only grows below: never undone
    released = 0
    while len(dep_sources):
        now = out[dep_sources] == bucket
        if int(now.sum()) == released:
            break
        released = int(now.sum())
        served = _served(times, np.concatenate([freed, dep_times[now]]), free)
        out[waiting[served]] = bucket
    return len(served) - len(freed) - released, np.delete(waiting, served), np.delete(times, served)


def replay_one_by_one(counts: dict[int, int], n: int, target: int, owners: np.ndarray, mine: np.ndarray,
                      place_times: np.ndarray, dec_times: np.ndarray, dec_buckets: np.ndarray,
                      dec_sources: np.ndarray, out: np.ndarray, table_name: str) -> None:
    """Java's BucketAssigner over the events of placements ``mine`` and the given decrements in
    arrival order, a step per event (a heap of open buckets per assigner, filled lazily). Writes
    ``out`` (by placement) and ``counts``."""
    open_: list[list[int]] = [sorted(b for b, c in counts.items() if abs(b % n) == a and c < target)
                              for a in range(n)]  # sorted: a heap already

    times = np.concatenate([place_times[mine], dec_times])
    is_placement = np.concatenate([np.ones(len(mine), bool), np.zeros(len(dec_times), bool)])
    index = np.concatenate([np.arange(len(mine)), np.arange(len(dec_times))])
    seq = np.lexsort((is_placement, times))  # by arrival; a move's decrement first
    placements, place_owners = mine.tolist(), owners[mine].tolist()
    freed, sources = dec_buckets.tolist(), dec_sources.tolist()
    for placing, i in zip(is_placement[seq].tolist(), index[seq].tolist(), strict=True):
        if not placing:
            b = freed[i] if freed[i] >= 0 else int(out[sources[i]])
            counts[b] = counts.get(b, 0) - 1
            heap = open_[abs(b % n)]
            if counts[b] == target - 1 or b not in heap:
                heapq.heappush(heap, b)
            continue
        heap = open_[place_owners[i]]
        while heap and counts.get(heap[0], 0) >= target:
            heapq.heappop(heap)
        if heap:
            b = heap[0]
        else:
            b = place_owners[i]
            while b in counts:
                b += n
            if b >= MAX_BUCKETS:
                raise too_many_buckets(table_name, target)
            heapq.heappush(heap, b)
        counts[b] = counts.get(b, 0) + 1
        out[placements[i]] = b
