"""A compaction unit that only relabels files to a higher level (an upgrade: Paimon's
``CompactResult`` with the file's ``upgrade(level)``, no row read or written) builds no reader and
no writer; a unit that rewrites builds each once. The commit is the same either way."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import lake_assets.ops.compact.rewrite as rewrite
from lake_assets import Catalog
from lake_assets.formats.data_file import DataFileWriter
from lake_assets.ops.compact import plan_compaction, run_compaction_task
from lake_assets.ops.read import SplitReader

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the real SplitReader and DataFileWriter built by compaction units."""
    built = {"reader": 0, "writer": 0}

    class CountingReader(SplitReader):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            built["reader"] += 1
            super().__init__(*args, **kwargs)

    class CountingWriter(DataFileWriter):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            built["writer"] += 1
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(rewrite, "SplitReader", CountingReader)
    monkeypatch.setattr(rewrite, "DataFileWriter", CountingWriter)
    return built


def test_relabel_only_units_build_no_reader_or_writer(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    t = catalog.create_table("db.r", SCHEMA, primary_keys=["k"], options={"bucket": "4"})
    t.write_arrow(pa.table({"k": list(range(100)), "v": [f"v{i}" for i in range(100)]}, schema=SCHEMA))
    tasks = plan_compaction(t.store, full=True).tasks
    assert len(tasks) == 4
    # one level-0 file per bucket, no deletes: a full compaction relabels it to the top level
    assert all({s.kind for s in task.sections} == {"upgrade"} for task in tasks)
    built = _counting(monkeypatch)
    messages = [run_compaction_task(t.store, task) for task in tasks]
    assert built == {"reader": 0, "writer": 0}
    top = t.store.schema.core_options.num_levels - 1
    for task, msg in zip(tasks, messages, strict=True):
        assert [f.file_name for f in msg.compact_after] == [f.file_name for f in task.input_files]
        assert {f.level for f in msg.compact_after} == {top}
    # the table's own compaction (plan, units in a pool, commit) relabels the same way
    before = t.to_arrow().sort_by("k")
    t.compact(full=True)
    assert built == {"reader": 0, "writer": 0}
    assert {f.level for s in t.plan() for f in s.files} == {top}
    assert t.to_arrow().sort_by("k").equals(before)


def test_rewriting_units_build_each_once(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    t = catalog.create_table("db.w", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    for round_ in range(2):  # two level-0 files per bucket: merged, not relabelled
        t.write_arrow(pa.table({"k": list(range(50)), "v": [f"r{round_}-{i}" for i in range(50)]}, schema=SCHEMA))
    tasks = plan_compaction(t.store, full=True).tasks
    assert tasks and all(any(s.kind == "rewrite" for s in task.sections) for task in tasks)
    built = _counting(monkeypatch)
    messages = [run_compaction_task(t.store, task) for task in tasks]
    assert built == {"reader": len(tasks), "writer": len(tasks)}
    assert sum(f.row_count for m in messages for f in m.compact_after) == 50
