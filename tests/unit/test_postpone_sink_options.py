"""Paimon's write options of postpone (and append) tables that lake_assets declares
(option_rules.py): ``partition.sink-strategy`` is a distribution of rows to writer tasks, taken
and checked; ``visibility-callback.enabled`` (wait after a batch commit for another job's
compaction) is refused on writes by name when true, since no writer here waits."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog, OptionError, UnsupportedFeatureError
from tests.unit.test_option_registry import _carry

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def rows(ks: list[int]) -> pa.Table:
    return pa.table({"k": ks, "dt": ["d1"] * len(ks), "v": [f"v{k}" for k in ks]}, schema=SCHEMA)


@pytest.mark.parametrize("strategy", ["none", "hash", "PARTITION_DYNAMIC"])
def test_partition_sink_strategy_is_taken_by_postpone_and_append_tables(catalog: Catalog, strategy: str):
    pk = catalog.create_table("db.pk", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                              options={"bucket": "-2", "partition.sink-strategy": strategy})
    pk.write_arrow(rows([1, 2]))
    pk.refresh().compact()
    assert pk.refresh().to_arrow().num_rows == 2
    ap = catalog.create_table("db.ap", SCHEMA, partition_keys=["dt"], options={"partition.sink-strategy": strategy})
    ap.write_arrow(rows([1, 2]))
    assert ap.refresh().to_arrow().num_rows == 2


def test_partition_sink_strategy_rejects_values_paimon_lacks(catalog: Catalog):
    with pytest.raises(OptionError, match=r"partition\.sink-strategy"):
        catalog.create_table("db.pk", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2", "partition.sink-strategy": "range"})


def test_visibility_callback_enabled_refuses_writes_by_name_false_writes(catalog: Catalog):
    with pytest.raises(UnsupportedFeatureError, match=r"visibility-callback.enabled.*do not wait"):
        catalog.create_table("db.pk", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2", "visibility-callback.enabled": "true"})
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2", "visibility-callback.enabled": "false",
                                      "visibility-callback.timeout": "5 min",
                                      "visibility-callback.check-interval": "1 s"})
    t.write_arrow(rows([1]))
    t.refresh().compact()
    # a table another engine configured so: reads and compaction work, writes are refused untouched
    _carry(t, **{"visibility-callback.enabled": "true"})
    before = t.snapshot_manager.latest_id()
    assert t.to_arrow().num_rows == 1
    with pytest.raises(UnsupportedFeatureError, match=r"Cannot write to db.pk: option visibility-callback.enabled"):
        t.write_arrow(rows([2]))
    assert t.snapshot_manager.latest_id() == before
