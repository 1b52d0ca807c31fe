"""The connector keys the registry refuses by name (`REFUSED_ENGINE_RULES`): ``branch`` stored in a
schema, Flink's stored partition filter ``scan.partitions`` and ``scan.fallback-branch`` (refused
for streams only), each with why and what the user can do (`lake_assets.refusal_actions`).
`lake_assets.option_rules` merges them into the registry after the accepted engine options
(`lake_assets.option_rules_engines`)."""

from __future__ import annotations

from lake_assets.option_types import KEY_SLOT, OptionRule
from lake_assets.refusal_actions import USE_PAIMON, remove_option


def _rules(*rows: OptionRule) -> dict[str, OptionRule]:
    return {r.key: r for r in rows}


_SCAN_PARTITIONS = ("Flink's batch and lookup reads of a table carrying it read only these partitions "
                    "(FlinkTableSource, PartitionLoader); lake_assets' reads read all")
# Flink's docs give it as a query's option; stored in the table it limits every Flink read.
_SCAN_PARTITIONS_ACTION = (f"{remove_option(KEY_SLOT)} and filter the reads here by the partition columns "
                           "instead; Flink's reads then read every partition too, unless a query passes the option "
                           f"as a hint (/*+ OPTIONS('{KEY_SLOT}' = '...') */), where it belongs")


_FALLBACK_BRANCH = ("Paimon's streaming reads of a table carrying it ignore it and its incremental batch reads pass "
                    "the table's snapshot ids to the fallback branch unconverted, so lake_assets refuses streams "
                    "and change reads; its batch reads take the partitions the table's branch lacks from that "
                    "branch, as Paimon 0.9+'s FallbackReadFileStoreTable (lake_assets.ops.fallback_read)")
_FALLBACK_BRANCH_ACTION = ("read the table in batch (those reads take the fallback branch's partitions, as "
                           "Paimon's do), or, if streams of the table's own branch are what you want (Paimon's "
                           f"streams ignore the option), {remove_option(KEY_SLOT)}, which also stops Paimon's "
                           "batch reads from falling back")


def _refused(key: str, description: str, refuses: tuple[str, ...], why: str, action: str,
             fallback_keys: tuple[str, ...] = ()) -> OptionRule:
    return OptionRule(key, "string", None, description, supported=(), refuses=refuses, why=why, action=action,
                      fallback_keys=fallback_keys)


_BRANCH = ("Paimon 0.9+ reads and writes a table whose schema carries it on that branch (FileStoreTableFactory: "
           "the snapshots, tags and consumers of branch/branch-<name>, with the schema it was opened with); "
           "lake_assets opens a branch by its identifier db.t$branch_<name> only, and would read and write the "
           "main branch's snapshots instead")
_BRANCH_ACTION = ("open the branch by its identifier, db.t$branch_<name> (lake_assets then uses that branch's own "
                  f"schema, not this one), or {USE_PAIMON}")
_ALL_OPS = ("READ", "STREAM", "WRITE", "COMPACT", "EXPIRE", "ORPHANS", "TAG", "ROLLBACK", "SCHEMA_CHANGE")

REFUSED_ENGINE_RULES: dict[str, OptionRule] = _rules(
    # Java compares the name with equals("main") (BranchManager.isMainBranch): exact, untrimmed
    OptionRule("branch", "string", "main", "The branch a table's reads and writes use (Paimon 0.9+; engines set it "
               "in memory when they open db.t$branch_<name>).", supported=("main",), refuses=_ALL_OPS,
               why=_BRANCH, action=_BRANCH_ACTION, fold="exact"),
    _refused("scan.partitions", "Partitions Flink's reads read (k=v,...;... or max_pt(); Flink connector; "
             "its own key in Paimon 0.9 to 1.0: lookup.dynamic-partition).", ("READ", "STREAM"), _SCAN_PARTITIONS,
             _SCAN_PARTITIONS_ACTION, ("lookup.dynamic-partition",)),
    _refused("scan.fallback-branch", "Branch whose partitions batch reads take where the table's branch has "
             "none (Paimon 0.9+).", ("STREAM",), _FALLBACK_BRANCH,
             _FALLBACK_BRANCH_ACTION),
)


__all__ = ["REFUSED_ENGINE_RULES"]
