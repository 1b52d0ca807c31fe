"""Runs one table operation and signals itself at a named step (the crash-injection worker).

Usage: python crash_worker.py WAREHOUSE TABLE OP POINT OCCURRENCE PARAMS_JSON [KILL|INT]

KILL (the default) dies on the spot; INT is Ctrl-C: a KeyboardInterrupt unwinds through the
operation's own cleanup, which must not delete anything a landed commit references.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from datetime import datetime, timedelta

import pyarrow as pa

from lake_assets import Catalog


def main() -> None:
    warehouse, ident, op, point, occurrence, params = sys.argv[1:7]
    sig = signal.SIGINT if sys.argv[7:8] == ["INT"] else signal.SIGKILL
    params_d = json.loads(params)
    table = Catalog(warehouse).get_table(ident)
    seen = {"n": 0}

    def hook(step: str) -> None:
        if step == point:
            seen["n"] += 1
            if seen["n"] == int(occurrence):
                os.kill(os.getpid(), sig)

    table.fault_hook = hook
    if op == "write":
        data = pa.table(params_d["data"], schema=table.arrow_schema)
        writer = table.new_writer(params_d["user"], write_only=params_d.get("write_only", True))
        writer.write_arrow(data)
        table.new_committer(params_d["user"]).commit(writer.prepare_commit(), params_d["identifier"])
    elif op == "write_arrow":
        table.write_arrow(pa.table(params_d["data"], schema=table.arrow_schema))
    elif op == "compact":
        table.compact(full=params_d.get("full", False))
    elif op == "expire":
        table.expire_snapshots(retain_min=params_d["retain_min"], older_than=datetime.now() + timedelta(days=1))
    elif op == "expire_changelogs":
        from lake_assets.ops.expire import expire_changelogs

        # older_than_ms=0: only the retain_max rule expires changelogs
        expire_changelogs(table.store, retain_min=1, retain_max=params_d["retain_max"], older_than_ms=0)
    elif op == "tag":
        table.create_tag(params_d["name"])
    elif op == "rollback":
        table.rollback_to(snapshot_id=params_d["snapshot_id"])
    elif op == "orphans":
        table.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    else:
        raise SystemExit(f"unknown op {op}")
    print("completed without reaching", point, file=sys.stderr)


if __name__ == "__main__":
    main()
