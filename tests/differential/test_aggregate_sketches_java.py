"""rbm32, rbm64, hll_sketch and theta_sketch against Paimon Java 0.9 (which has all four).

- The fold itself: many key groups of values Java's own libraries serialized (DataSketches 4.2 and
  RoaringBitmap 1.0.5 as the 0.9 bundle ships them: HLL_4/6/8 compact and updatable images of
  several lg_k in LIST, SET and HLL mode, Java's own union results fed back in (out of order, HIP
  carried), Theta ordered / unordered of several sizes, empty and single-item; bitmaps with and
  without runOptimize, 64-bit keys that grow every ART node kind) merged by the aggregation engine
  must be byte-identical to Paimon's FieldAggregator folding the same groups. One JVM call per
  function for all the groups.
- A table: Java writes several commits, we read, compact and write on top (and the reverse),
  every read byte-identical to Java's reads of its own table (`Scenario`).
- Estimates: our merged sketch estimates what one sketch built from all the values estimates
  (exactly in exact mode, within the sketch's error otherwise), and Java reads our bytes with
  the estimate we compute.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pyarrow as pa
import pytest

from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.options import CoreOptions
from tests.java.oracle import PaimonJava

from .scenario import C, Scenario, W, assert_agree

SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
FUNCTION_OF = {"rbm32": "rbm32", "rbm64": "rbm64", "hll": "hll_sketch", "theta": "theta_sketch"}


def _merge_groups(function: str, groups: Sequence[Sequence[bytes | None]]) -> list[bytes | None]:
    """Each group as the records of one key, merged by the aggregation engine."""
    keys = [k for k, g in enumerate(groups) for _ in g]
    values = [v for g in groups for v in g]
    table = pa.table({
        "k": pa.array(keys, type=pa.int64()),
        "v": pa.array(values, type=pa.binary()),
        SEQ: pa.array(range(len(keys)), type=pa.int64()),
        KIND: pa.array([0] * len(keys), type=pa.int8()),
    })
    engine = Aggregation([("k", pa.int64()), ("v", pa.binary())], ["k"],
                         CoreOptions({"merge-engine": "aggregation", "fields.v.aggregate-function": function}))
    merged = engine.merge(table, ["k"])
    assert merged.column("k").to_pylist() == list(range(len(groups)))
    return merged.column("v").to_pylist()


def _sets(rng: random.Random, n: int, *, high: int, sizes: Sequence[int]) -> list[list[int]]:
    out = []
    for _ in range(n):
        size = rng.choice(sizes)
        if rng.random() < 0.4:  # runs of consecutive values
            starts = [rng.randrange(high - 8) for _ in range(max(1, size // 8))]
            out.append([s + d for s in starts for d in range(8)])
        else:
            out.append([rng.randrange(high) for _ in range(size)])
    return out


def _inputs(java: PaimonJava, rng: random.Random, kind: str) -> list[bytes]:
    values: list[bytes] = []
    if kind == "hll":
        for lg_k, hll_type, form in [(12, "HLL_4", "compact"), (11, "HLL_8", "updatable"), (14, "HLL_6", "compact"),
                                     (10, "HLL_4", "updatable"), (12, "HLL_8", "compact")]:
            sets = _sets(rng, 10, high=10**9, sizes=(0, 1, 5, 60, 400, 3000, 20000))
            values += java.sketch_make("hll", sets, lg_k=lg_k, hll_type=hll_type, form=form)
    elif kind == "theta":
        for lg_k, form in [(12, "ordered"), (10, "unordered"), (14, "ordered"), (9, "ordered")]:
            sets = _sets(rng, 12, high=10**9, sizes=(0, 1, 2, 50, 3000, 20000))
            values += java.sketch_make("theta", sets, lg_k=lg_k, form=form)
    elif kind == "rbm32":
        for form in ("optimized", "plain"):
            sets = _sets(rng, 15, high=2**31 - 1, sizes=(0, 1, 3, 40, 5000)) + _sets(
                rng, 10, high=300_000, sizes=(1, 3, 100, 5000, 70_000))
            values += java.sketch_make("rbm32", sets, form=form)
    else:
        for form in ("optimized", "plain"):
            sets = _sets(rng, 10, high=2**63, sizes=(0, 1, 3, 40)) + _sets(rng, 10, high=2**40, sizes=(100, 800))
            # dense high keys: Node4 -> 16 -> 48 -> 256 growth and prefix splits
            sets += [[(k << 16) + rng.randrange(1 << 16) for k in rng.sample(range(300), n)]
                     for n in (3, 10, 30, 60, 200)]
            sets += [[(1 << 48) * rng.randrange(4) + rng.randrange(1 << 20) for _ in range(50)] for _ in range(5)]
            values += java.sketch_make("rbm64", sets, form=form)
    return values


@pytest.mark.parametrize("kind", ["rbm32", "rbm64", "hll", "theta"])
def test_fold_is_byte_identical_to_java(java: PaimonJava, kind: str) -> None:
    rng = random.Random(f"sketch-{kind}")
    pool: list[bytes | None] = list(_inputs(java, rng, kind))
    groups = [[rng.choice(pool) if rng.random() > 0.1 else None for _ in range(rng.randrange(1, 5))]
              for _ in range(120)]
    expected = java.sketch_fold(FUNCTION_OF[kind], groups)
    # Java's own results go back in as inputs (HLL: out-of-order sketches carrying a HIP)
    pool += [r for r in expected if r is not None]
    groups += [[rng.choice(pool) for _ in range(rng.randrange(2, 4))] for _ in range(80)]
    expected = java.sketch_fold(FUNCTION_OF[kind], groups)
    got = _merge_groups(FUNCTION_OF[kind], groups)
    bad = [i for i, (g, e) in enumerate(zip(got, expected, strict=True)) if g != e]
    assert not bad, f"{len(bad)} of {len(groups)} groups differ from Java, e.g. group {bad[0]}"
    assert sum(len([v for v in g if v is not None]) > 1 for g in groups) > 150  # most groups really merge


def _build(java: PaimonJava, kind: str, sets: Sequence[Sequence[int]]) -> list[bytes]:
    return java.sketch_make(kind, sets, lg_k=12)


@pytest.mark.parametrize("kind", ["hll", "theta"])
def test_merged_estimate_matches_one_sketch_of_all_values(java: PaimonJava, kind: str) -> None:
    rng = random.Random(f"estimate-{kind}")
    groups, singles = [], []
    for size in (3, 30, 300, 5000, 40_000):  # exact (LIST / SET, Theta exact) up to estimation mode
        parts = [[rng.randrange(10**12) for _ in range(rng.randrange(1, size + 1))] for _ in range(4)]
        groups.append(_build(java, kind, parts))
        singles.append(sorted({v for p in parts for v in p}))
    merged = _merge_groups(FUNCTION_OF[kind], groups)
    ours = java.sketch_estimate(kind, [m for m in merged if m is not None])
    one_sketch = java.sketch_estimate(kind, _build(java, kind, singles))
    for est, single, values in zip(ours, one_sketch, singles, strict=True):
        if len(values) < 200:  # exact modes (HLL LIST/SET, Theta below k): the estimate is the count
            assert est == single == pytest.approx(len(values), rel=0.01)
        else:
            assert est == pytest.approx(single, rel=0.05)
            assert est == pytest.approx(len(values), rel=0.05)


def test_bitmap_unions_hold_every_value(java: PaimonJava) -> None:
    rng = random.Random("bitmaps")
    parts32 = [[rng.randrange(2**31 - 1) for _ in range(300)] for _ in range(5)]
    parts64 = [[rng.randrange(2**63) for _ in range(300)] for _ in range(5)]
    (r32,) = _merge_groups("rbm32", [java.sketch_make("rbm32", parts32)])
    (r64,) = _merge_groups("rbm64", [java.sketch_make("rbm64", parts64)])
    assert r32 is not None and r64 is not None
    assert java.sketch_estimate("rbm32", [r32]) == [len({v for p in parts32 for v in p})]
    assert java.sketch_estimate("rbm64", [r64]) == [sorted({v for p in parts64 for v in p})]


def test_table_rounds_agree_with_java(java: PaimonJava, wh: str) -> None:
    """Java writes commits of serialized bitmaps and sketches into an aggregation table; our
    merged reads equal Java's byte for byte, and so do Java's reads of what we write and compact
    (write-buffer merges, merge on read and compaction all fold the four functions)."""
    rng = random.Random("rounds")
    cols = {"r32": "rbm32", "r64": "rbm64", "h": "hll", "t": "theta"}

    def values(kind: str, n: int) -> list[bytes]:
        high = 2**40 if kind == "rbm64" else 10**6
        return java.sketch_make(kind, [[rng.randrange(high) for _ in range(rng.randrange(1, 400))]
                                       for _ in range(n)], lg_k=11)

    def commit(keys: Sequence[int], null_every: int = 0) -> W:
        made = {c: values(kind, len(keys)) for c, kind in cols.items()}
        rows = []
        for i, k in enumerate(keys):
            row: dict[str, object] = {"k": k, **{c: made[c][i] for c in cols}}
            if null_every and i % null_every == 0:
                row["h"] = None
            rows.append(row)
        return W(*rows)

    schema = pa.schema([pa.field("k", pa.int64(), nullable=False),
                        *(pa.field(c, pa.binary()) for c in cols)])
    # changelog-producer = lookup: Java 0.9 reads and compacts such tables through LookupMergeFunction
    # (a key's newest record above level 0, plus level 0), as lake_assets does (lsm/lookup_merge.py)
    options = {"merge-engine": "aggregation", "bucket": "2", "changelog-producer": "lookup",
               **{f"fields.{c}.aggregate-function": FUNCTION_OF[kind] for c, kind in cols.items()}}
    steps = [commit([1, 2, 3, 1]), commit([1, 2, 4], null_every=2), commit([2, 3, 5, 2]), C(),
             commit([1, 5, 6]), C(full=False)]
    sc = Scenario(java, wh, schema, ["k"], options, steps, compare_changes=False, compare_streams=False)
    assert_agree(sc.run_all(), what=("states",))



def test_partial_update_sequence_group_agrees_with_java(java: PaimonJava, wh: str) -> None:
    """The four functions inside a partial-update sequence group (group sequences arriving in
    order; out of order, Java folds older records with aggReversed, see aggregate_sketches)."""
    rng = random.Random("partial-update")
    cols = {"r32": "rbm32", "r64": "rbm64", "h": "hll", "t": "theta"}

    def commit(keys: Sequence[int], seq: int) -> W:
        made = {c: java.sketch_make(kind, [[rng.randrange(10**6) for _ in range(rng.randrange(1, 200))]
                                           for _ in keys], lg_k=12) for c, kind in cols.items()}
        return W(*({"k": k, "g": seq, "other": f"v{seq}", **{c: made[c][i] for c in cols}}
                   for i, k in enumerate(keys)))

    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("g", pa.int64()), ("other", pa.string()),
                        *(pa.field(c, pa.binary()) for c in cols)])
    options = {"merge-engine": "partial-update", "fields.g.sequence-group": ",".join(cols),
               **{f"fields.{c}.aggregate-function": FUNCTION_OF[kind] for c, kind in cols.items()}}
    steps = [commit([1, 2, 1], 1), commit([1, 3], 2), C(), commit([2, 3, 3], 3), C(full=False)]
    sc = Scenario(java, wh, schema, ["k"], options, steps, compare_changes=False, compare_streams=False)
    assert_agree(sc.run_all(("java", "lake-java")), what=("states",))
