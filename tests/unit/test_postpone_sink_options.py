"""Paimon's write options of postpone (and append) tables that lake_assets declares
(option_rules.py): ``partition.sink-strategy`` is a distribution of rows to writer tasks, taken
and checked; ``visibility-callback.*`` (wait after a batch commit for another job's compaction,
ops/visibility_wait.py) are taken and checked."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog, OptionError

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


def test_visibility_callback_options_are_taken_and_checked(catalog: Catalog):
    # the wait itself: tests/unit/test_visibility_wait.py
    t = catalog.create_table("db.pk", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2", "visibility-callback.enabled": "false",
                                      "visibility-callback.timeout": "5 min",
                                      "visibility-callback.check-interval": "1 s"})
    t.write_arrow(rows([1]))
    t.refresh().compact()
    assert t.to_arrow().num_rows == 1
    with pytest.raises(OptionError, match=r"visibility-callback\.timeout"):
        catalog.create_table("db.bad", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                             options={"bucket": "-2", "visibility-callback.timeout": "soon"})
