"""Every maintenance operation on session 14's table kinds, interleaved at random with writes:
deletion-vector tables of three merge engines (lookup changelog too), append tables with vectors
and `Table.delete_where`, `data-file.path-directory` with bitmap index v2 files, cross-partition
upsert (plain and with vectors: hash index and key index), row tracking and data evolution
(compacted since session 16).

After every step each retained snapshot and tag reads the rows it had when committed, no file it
references (data, .index, deletion vector and hash index files) is gone, and health() counts the
latest snapshot's files (`tests.property.table_kinds`). Engines read the same histories in
tests/differential/test_maintenance_kinds_java.py and tests/interop/test_maintenance_kinds_interop.py.
"""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets import Catalog
from tests.property.table_kinds import KINDS, OPS, History

STEPS = st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 1 << 16)), min_size=4, max_size=22)


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
def test_retained_snapshots_and_tags_survive_maintenance(kind: str, steps: list[tuple[str, int]]) -> None:
    with tempfile.TemporaryDirectory() as wh:
        catalog = Catalog(wh)
        catalog.create_database("db")
        history = History(KINDS[kind], KINDS[kind].create(catalog))
        for op, arg in steps:
            history.step(op, arg)
            history.check()
