"""Registry rows of partition mark-done (``CoreOptions``; Paimon's Spark writes since 1.0, Flink's
sinks): docs/format.md §13.3.

It is implemented as Paimon's Spark writes do it: with ``partition.end-input-to-done`` lake_assets'
Spark writes write ``_SUCCESS`` files (`lake_assets.ops.mark_done`); the other actions refuse
writes. The ``_SUCCESS`` files are left by orphan removal, as by Paimon's
(`lake_assets.ops.orphan_scope`). `lake_assets.option_rules` merges `MARK_DONE_RULES` into the
registry.
"""

from __future__ import annotations

from lake_assets.option_types import KEY_SLOT, OptionRule
from lake_assets.refusal_actions import set_option

_ANY_VALUE = "any value is accepted at create and ALTER, as Paimon does"

MARK_DONE_ACTIONS = ("success-file", "done-partition", "mark-event", "http-report", "custom")


def mark_done_actions(text: str) -> frozenset[str] | None:
    """The actions of a ``partition.mark-done-action`` value as HEAD's ``partitionMarkDoneActions``
    reads them (enum names), or None where Java fails: ``split(",")`` (trailing empty items
    dropped, as Java's ``String.split``), each item with ``-`` as ``_``, upper-cased, one of
    ``PartitionMarkDoneAction``; no trimming (``' success-file'`` fails in Java)."""
    items = text.split(",")
    while len(items) > 1 and items[-1] == "":
        items.pop()
    names = frozenset(item.replace("-", "_").upper() for item in items)
    known = {a.replace("-", "_").upper() for a in MARK_DONE_ACTIONS}
    return names if names <= known else None


def _mark_done_action_problem(value: object) -> str | None:
    if mark_done_actions(str(value)) is None:
        return f"a comma-separated list of {', '.join(MARK_DONE_ACTIONS)} (no spaces), as Paimon reads it"
    return None


_OTHER_ACTIONS = ("lake_assets' writes run success-file only: done-partition and mark-event need a metastore, "
                  "http-report an HTTP endpoint, custom a Java class")
_OTHER_ACTIONS_ACTION = ("write with Paimon's Flink or Spark writers, which run these actions, or, if nothing needs "
                         f"the other actions' marks, {set_option(KEY_SLOT, 'success-file')}")


def _action_note(action: str) -> str:
    return (f"read by Java only when partition.mark-done-action includes {action}, which refuses lake_assets' "
            f"writes; {_ANY_VALUE}")


MARK_DONE_RULES: dict[str, OptionRule] = {r.key: r for r in (
    # writer_only: a carried value that does not parse refuses writes (and compaction), never opening
    # the table or maintenance; Java reads these keys only when a write marks partitions done
    OptionRule("partition.end-input-to-done", "bool", False, "Writes mark the partitions they wrote done after "
               "their commit (Flink connector in 0.9, CoreOptions since 1.0; boolean).", writer_only=True,
               note="as Paimon's Spark writes (1.0+): lake_assets' Spark writes (df.write, write_table, "
               "write_table_native, the ingest job, each streaming micro-batch) run partition.mark-done-action "
               "after their commit for every partition they wrote; the core's write_arrow does not, as Java's "
               "core BatchTableWrite does not; unpartitioned tables are not marked (lake_assets/ops/mark_done.py)"),
    OptionRule("partition.mark-done-action", "string", "success-file", "How writes mark a partition done: "
               "success-file (a _SUCCESS file in the partition directory), done-partition, mark-event, "
               "http-report, custom; a comma-separated list (CoreOptions).", check=_mark_done_action_problem,
               writer_only=True, supported=("success-file",), refuses=("WRITE",), why=_OTHER_ACTIONS,
               action=_OTHER_ACTIONS_ACTION,
               note="success-file as Paimon's SuccessFileMarkDoneAction (creation and modification times; an "
               "existing file keeps its creation time)"),
    OptionRule("partition.mark-done-action.custom.class", "string", None, "Java class of the custom mark-done "
               "action (Paimon 1.1+).", note=_action_note("custom")),
    OptionRule("partition.mark-done-action.http.url", "string", None, "URL the http-report mark-done action "
               "posts to (Paimon 1.1+).", note=_action_note("http-report")),
    OptionRule("partition.mark-done-action.http.params", "string", None, "Parameters the http-report action "
               "sends (Paimon 1.1+).", note=_action_note("http-report")),
    OptionRule("partition.mark-done-action.http.timeout", "string", None, "Timeout of the http-report action "
               "(a duration; Paimon 1.1 only).", note=_action_note("http-report")),
)}

__all__ = ["MARK_DONE_ACTIONS", "MARK_DONE_RULES", "mark_done_actions"]
