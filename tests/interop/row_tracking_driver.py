"""pypaimon 2.1 side of the row-tracking / data-evolution interop tests (run under ``.venv-paimon``).

One call runs a list of steps from a JSON file, so a test pays for one pypaimon process however
many writes, updates and reads it needs:

* ``{"op": "create", "table": "db.t", "schema": "<ipc>", "partition_keys": [...], "options": {...}}``
* ``{"op": "write", "table": "db.t", "data": "<ipc>", "columns": [...] | null}`` - one batch write and
  commit; with ``columns``, pypaimon's column-subset write of new rows (``with_write_type``)
* ``{"op": "update", "table": "db.t", "data": "<ipc>", "columns": [...]}`` - pypaimon's
  ``update_by_arrow_with_row_id`` (``data`` holds ``_ROW_ID`` and the columns), one commit
* ``{"op": "read", "table": "db.t", "out": "<ipc>", "columns": [...] | null, "snapshot_id": n | null,
  "tag": name | null}``
* ``{"op": "global_index", "table": "db.t", "column": "c", "drop": bool}`` - pypaimon's
  ``create_global_index`` (btree) of one column, or its ``drop_global_index``
* ``{"op": "tag", "table": "db.t", "tag": name, "snapshot_id": n}`` and ``{"op": "rollback",
  "table": "db.t", "to": n | name}`` - pypaimon's ``create_tag`` and ``rollback_to``
* ``{"op": "changes", "table": "db.t", "out": "<ipc>", "columns": [...], "snapshots": [n, ...]}`` - what
  pypaimon's streaming scan reads for each of those snapshots (its follow-up plan of the
  snapshot), concatenated, with a ``_snapshot`` column

Never imports lake_assets: PYTHONPATH is dropped for this interpreter.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import pyarrow as pa


def _read_ipc(path: str) -> pa.Table:
    with pa.ipc.open_stream(path) as reader:
        return reader.read_all()


def _write_ipc(table: pa.Table, path: str) -> None:
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def _catalog(warehouse: str) -> Any:
    from pypaimon import CatalogFactory

    return CatalogFactory.create({"warehouse": warehouse})


def _step(cat: Any, step: dict[str, Any]) -> None:
    op = step["op"]
    if op == "create":
        from pypaimon import Schema

        cat.create_database(step["table"].partition(".")[0], True)
        schema = Schema.from_pyarrow_schema(_read_ipc(step["schema"]).schema,
                                            partition_keys=step.get("partition_keys") or None,
                                            options=step.get("options") or {})
        cat.create_table(step["table"], schema, False)
        return
    table = cat.get_table(step["table"])
    if op == "read":
        if step.get("snapshot_id") is not None:
            table = table.copy({"scan.snapshot-id": str(step["snapshot_id"])})
        if step.get("tag") is not None:
            table = table.copy({"scan.tag-name": step["tag"]})
        builder = table.new_read_builder()
        if step.get("columns"):
            builder = builder.with_projection(step["columns"])
        splits = builder.new_scan().plan().splits()
        result = builder.new_read().to_arrow(splits)
        if result is None:
            from pypaimon.schema.data_types import PyarrowFieldParser

            result = PyarrowFieldParser.from_paimon_schema(builder.read_type()).empty_table()
        _write_ipc(result, step["out"])
        return
    if op == "changes":
        _changes(table, step)
        return
    if op == "tag":
        table.create_tag(step["tag"], step["snapshot_id"])
        return
    if op == "rollback":
        table.rollback_to(step["to"])
        return
    if op == "global_index":
        (table.drop_global_index if step.get("drop") else table.create_global_index)(step["column"], "btree")
        return
    builder = table.new_batch_write_builder()
    commit = builder.new_commit()
    data = _read_ipc(step["data"])
    try:
        if op == "write":
            writer = builder.new_write()
            if step.get("columns"):
                writer.with_write_type(step["columns"])
            try:
                writer.write_arrow(data)
                commit.commit(writer.prepare_commit())
            finally:
                writer.close()
        elif op == "update":
            update = builder.new_update().with_update_type(step["columns"])
            commit.commit(update.update_by_arrow_with_row_id(data))
        else:
            raise SystemExit(f"error: unknown step {op!r}")
    finally:
        commit.close()


def _changes(table: Any, step: dict[str, Any]) -> None:
    builder = table.new_stream_read_builder().with_projection(step["columns"])
    scan = builder.new_streaming_scan()
    parts = []
    for sid in step["snapshots"]:
        snapshot = scan._snapshot_manager.get_snapshot_by_id(sid)
        plan = scan._create_follow_up_plan(snapshot)
        got = builder.new_read().to_arrow(plan.splits()) if plan is not None and plan.splits() else None
        if got is not None and got.num_rows:
            parts.append(got.append_column("_snapshot", pa.array([sid] * got.num_rows, pa.int64())))
    _write_ipc(pa.concat_tables(parts) if parts else pa.table({"_snapshot": pa.array([], pa.int64())}), step["out"])


def main(argv: list[str]) -> None:
    if len(argv) != 3 or argv[0] != "steps":
        raise SystemExit("usage: row_tracking_driver.py steps <warehouse> <steps.json>")
    with open(argv[2]) as f:
        steps = json.load(f)
    cat = _catalog(argv[1])
    for step in steps:
        _step(cat, step)


if __name__ == "__main__":
    main(sys.argv[1:])
