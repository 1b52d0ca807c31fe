"""The `FileStore` seam: operations take a store, `compact` takes its unit runner, one writer config."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import LakeError
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.ops.compact import CompactionPlan, compact, run_compaction_task
from lake_assets.spec.snapshot import CommitKind
from lake_assets.store.file_store import FileStore

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])


def _table(wh: str, **options: str):
    cat = Catalog(wh)
    cat.create_database("db")
    opts = {"bucket": "2", "write-only": "true", **options}
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id", "p"], partition_keys=["p"], options=opts)
    for r in range(3):
        ids = list(range(r * 5, 40 + r * 5))
        t.write_arrow(pa.table({"id": ids, "p": [f"p{i % 2}" for i in ids], "v": [f"r{r}" for _ in ids]},
                               schema=SCHEMA))
    return cat.get_table("db.t")


def _parquet_files(wh: str) -> set[str]:
    return {os.path.join(root, n) for root, _, names in os.walk(wh) for n in names if n.endswith(".parquet")}


def test_table_verbs_work_on_one_store(tmp_path):
    t = _table(str(tmp_path))
    assert isinstance(t.store, FileStore)
    # the table's identity is the store's: no second snapshot manager or schema to drift apart
    assert t.snapshot_manager is t.store.snapshot_manager and t.paths is t.store.paths
    t.update_schema().add_column("note", pa.string()).commit()
    assert t.store.schema.field_names[-1] == "note" and t.schema is t.store.schema


def test_compact_runs_the_units_with_the_given_runner(tmp_path):
    t = _table(str(tmp_path))
    before = t.to_arrow().sort_by([("p", "ascending"), ("id", "ascending")])
    seen: list[CompactionPlan] = []

    def run_in_order(store: FileStore, plan: CompactionPlan) -> list[CommitMessage]:
        seen.append(plan)
        return [run_compaction_task(store, task) for task in plan.tasks]

    result = compact(t.store, full=True, run_tasks=run_in_order)
    assert len(seen) == 1 and seen[0].snapshot_id == 3 and result.tasks == len(seen[0].tasks) == 4
    latest = t.latest_snapshot()
    assert latest.commit_kind == CommitKind.COMPACT and result.snapshot_id == latest.id
    assert result.files_in == 12 and result.files_out == 4
    assert t.to_arrow().sort_by([("p", "ascending"), ("id", "ascending")]).equals(before)


def test_a_failing_runner_commits_nothing(tmp_path):
    wh = str(tmp_path)
    t = _table(wh)
    files = _parquet_files(wh)

    def fail(store: FileStore, plan: CompactionPlan) -> list[CommitMessage]:
        raise LakeError("unit failed on an executor")

    with pytest.raises(LakeError, match="unit failed"):
        compact(t.store, full=True, run_tasks=fail)
    assert t.latest_snapshot().id == 3 and _parquet_files(wh) == files


def test_writer_and_compaction_take_one_writer_config(tmp_path):
    t = _table(str(tmp_path), **{"data-file.prefix": "d-", "changelog-file.prefix": "c-",
                                 "changelog-producer": "lookup"})
    assert t.store.data_file_config().prefix == "d-"
    assert t.store.data_file_config(changelog=True).prefix == "c-"
    t.compact(full=True)
    names = {os.path.basename(p) for p in _parquet_files(str(tmp_path))}
    assert names and all(n.startswith(("d-", "c-")) for n in names)
    assert any(n.startswith("c-") for n in names)  # the lookup changelog of the compaction


def test_operations_do_not_import_table():
    """ops/ and store/ work on a FileStore: none of their modules imports the Table facade."""
    import ast
    import pathlib

    import lake_assets

    root = pathlib.Path(lake_assets.__file__).parent
    offenders = []
    for path in [*root.glob("ops/**/*.py"), *root.glob("store/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "lake_assets.table":
                offenders.append(str(path.relative_to(root)))
    assert not offenders
