"""pypaimon 2.1 side of the peer-kinds sweep (run under ``.venv-paimon``): a list of steps from a JSON
file in one process, so a test module pays for one pypaimon process per batch of work.

* ``{"op": "create", "table": "db.t", "schema": "<ipc>", "primary_keys": [...], "options": {...}}``
* ``{"op": "write", "table": "db.t", "data": "<ipc>"}`` - one batch write and commit
* ``{"op": "alter", "table": "db.t", "changes": [["add", name, TYPE] | ["rename", old, new] | ["drop", name]]}``
  - ``catalog.alter_table``, one schema per change
* ``{"op": "tag", "table": "db.t", "tag": name, "snapshot_id": n, "time_retained": "1 h" | null}``,
  ``{"op": "rename_tag", "table": "db.t",
  "tag": old, "to": new}``, ``{"op": "replace_tag", "table": "db.t", "tag": name, "snapshot_id": n}``
* ``{"op": "consumer", "table": "db.t", "id": name, "next_snapshot": n}`` - pypaimon's consumer file
* ``{"op": "rollback", "table": "db.t", "to": n | name}`` - pypaimon's ``rollback_to``
* ``{"op": "upsert", "table": "db.t", "data": "<ipc>", "keys": [...], "columns": [...] | null}`` - a
  data-evolution table's ``upsert_by_arrow_with_key`` (matched keys updated in place, the rest
  appended), one commit
* ``{"op": "update_where", "table": "db.t", "column": c, "equals": v, "set": {c: v}}`` - its
  ``update_by_predicate``, one commit
* ``{"op": "read", "table": "db.t", "out": "<ipc>", "snapshot_id": n | null, "tag": name | null,
  "columns": [...] | null}``

A step with ``"errors": "<json path>"`` does not stop the run when it fails: its exception's type and
message are appended to that file (a list), so a test pins what pypaimon refuses. Never imports
lake_assets: PYTHONPATH is dropped for this interpreter.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pyarrow as pa


def _read_ipc(path: str) -> pa.Table:
    with pa.ipc.open_stream(path) as reader:
        return reader.read_all()


def _write_ipc(table: pa.Table, path: str) -> None:
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)


def _alter(cat: Any, identifier: str, changes: list[list[str]]) -> None:
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    for change in changes:
        kind, name, arg = [*change, ""][:3]
        if kind == "add":
            cat.alter_table(identifier, [SchemaChange.add_column(name, AtomicType(arg))], False)
        elif kind == "rename":
            cat.alter_table(identifier, [SchemaChange.rename_column(name, arg)], False)
        elif kind == "drop":
            cat.alter_table(identifier, [SchemaChange.drop_column(name)], False)
        else:
            raise SystemExit(f"error: unknown schema change {kind!r}")


def _read(table: Any, step: dict[str, Any]) -> None:
    if step.get("snapshot_id") is not None:
        table = table.copy({"scan.snapshot-id": str(step["snapshot_id"])})
    if step.get("tag") is not None:
        table = table.copy({"scan.tag-name": step["tag"]})
    builder = table.new_read_builder()
    if step.get("columns"):
        builder = builder.with_projection(step["columns"])
    result = builder.new_read().to_arrow(builder.new_scan().plan().splits())
    if result is None:
        from pypaimon.schema.data_types import PyarrowFieldParser

        result = PyarrowFieldParser.from_paimon_schema(builder.read_type()).empty_table()
    _write_ipc(result, step["out"])


def _step(cat: Any, step: dict[str, Any]) -> None:
    op, identifier = step["op"], step["table"]
    if op == "create":
        from pypaimon import Schema

        cat.create_database(identifier.partition(".")[0], True)
        schema = Schema.from_pyarrow_schema(_read_ipc(step["schema"]).schema,
                                            primary_keys=step.get("primary_keys") or None,
                                            options=step.get("options") or {})
        cat.create_table(identifier, schema, False)
        return
    if op == "alter":
        _alter(cat, identifier, step["changes"])
        return
    table = cat.get_table(identifier)
    if op == "read":
        _read(table, step)
    elif op == "tag":
        table.create_tag(step["tag"], step["snapshot_id"], time_retained=step.get("time_retained"))
    elif op == "rename_tag":
        table.rename_tag(step["tag"], step["to"])
    elif op == "replace_tag":
        table.replace_tag(step["tag"], step["snapshot_id"])
    elif op == "consumer":
        from pypaimon.consumer.consumer import Consumer

        table.consumer_manager().reset_consumer(step["id"], Consumer(next_snapshot=step["next_snapshot"]))
    elif op == "rollback":
        table.rollback_to(step["to"])
    elif op in ("upsert", "update_where"):
        builder = table.new_batch_write_builder()
        update, commit = builder.new_update(), builder.new_commit()
        try:
            if op == "upsert":
                if step.get("columns"):
                    update = update.with_update_type(step["columns"])
                messages = update.upsert_by_arrow_with_key(_read_ipc(step["data"]), step["keys"])
            else:
                predicate = update.new_predicate_builder().equal(step["column"], step["equals"])
                messages = update.update_by_predicate(predicate, step["set"])
            commit.commit(messages)
        finally:
            commit.close()
    elif op == "write":
        builder = table.new_batch_write_builder()
        writer, commit = builder.new_write(), builder.new_commit()
        try:
            writer.write_arrow(_read_ipc(step["data"]))
            commit.commit(writer.prepare_commit())
        finally:
            writer.close()
            commit.close()
    else:
        raise SystemExit(f"error: unknown step {op!r}")


def main(argv: list[str]) -> None:
    if len(argv) != 3 or argv[0] != "steps":
        raise SystemExit("usage: peer_steps_driver.py steps <warehouse> <steps.json>")
    from pypaimon import CatalogFactory

    with open(argv[2]) as f:
        steps = json.load(f)
    cat = CatalogFactory.create({"warehouse": argv[1]})
    for step in steps:
        if "errors" not in step:
            _step(cat, step)
            continue
        try:
            _step(cat, step)
        except Exception as exc:  # recorded for the test to pin; the run goes on
            errors = []
            if os.path.exists(step["errors"]):
                with open(step["errors"]) as f:
                    errors = json.load(f)
            errors.append({"table": step["table"], "op": step["op"], "error": f"{type(exc).__name__}: {exc}"})
            with open(step["errors"], "w") as f:
                json.dump(errors, f)


if __name__ == "__main__":
    main(sys.argv[1:])
