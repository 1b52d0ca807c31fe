"""Postpone-bucket tables (``bucket = -2``) on a branch, both ways against pypaimon 2.1 (Paimon
Java 0.9 predates the mode): pypaimon makes branch ``b1`` from a tag and writes it into
``bucket-postpone``; we write on top and our compaction of the branch assigns the buckets; pypaimon
reads the branch as we do at each step (rows still postponed are invisible to both), writes after
our compaction, and the main branch stays as it was."""

from __future__ import annotations

import pyarrow as pa
import pytest

import tests.interop.test_refuse_unsupported as engines
from lake_assets import Catalog
from tests.interop.paimon import Pypaimon, canonical

pytestmark = pytest.mark.interop

B1 = "db.m$branch_b1"


def _alike(warehouse: str, identifier: str, pypaimon: Pypaimon) -> list[dict]:
    ours = canonical(Catalog(warehouse).get_table(identifier).to_arrow(), ["id"])
    assert canonical(pypaimon.read(warehouse, identifier), ["id"]) == ours
    return ours


def _expected(*parts: pa.Table) -> list[dict]:
    last: dict[int, dict] = {}
    for part in parts:
        last.update({r["id"]: r for r in part.to_pylist()})
    return [last[k] for k in sorted(last)]


def test_postpone_branch_writes_and_compaction_agree_with_pypaimon(tmp_warehouse: str, pypaimon: Pypaimon) -> None:
    w = tmp_warehouse
    pypaimon.create_table(w, "db.m", engines.SCHEMA, primary_keys=["id"],
                          options={"bucket": "-2", "postpone.default-bucket-num": "2"})
    a = engines.batch(range(10), "a")
    pypaimon.write(w, "db.m", a, fixed_bucket=True)  # main's rows in real buckets
    pypaimon.create_tag(w, "db.m", "t1")
    pypaimon.create_branch(w, "db.m", "b1", tag="t1")
    j = engines.batch(range(8, 12), "j")
    pypaimon.write(w, B1, j)  # postponed on the branch
    assert _alike(w, B1, pypaimon) == _expected(a)
    branch = Catalog(w).get_table(B1)
    b = engines.batch(range(5, 15), "b")
    branch.write_arrow(b)  # postponed too
    assert _alike(w, B1, pypaimon) == _expected(a)
    branch.compact()
    assert _alike(w, B1, pypaimon) == _expected(a, j, b)
    c = engines.batch(range(0, 3), "c")
    pypaimon.write(w, B1, c)
    Catalog(w).get_table(B1).compact()
    assert _alike(w, B1, pypaimon) == _expected(a, j, b, c)
    # the main branch: its own snapshot and rows only
    assert _alike(w, "db.m", pypaimon) == _expected(a)
    assert [s.id for s in Catalog(w).get_table("db.m").snapshots()] == [1]
