"""Registry rows of the options of the commit itself: retries, empty commits (Paimon's
``commit.force-create-snapshot`` and ``snapshot.ignore-empty-commit``, `lake_assets.ops.commit_empty`)
and the wait for visibility after a batch commit (`lake_assets.ops.visibility_wait`).
`lake_assets.option_rules` merges them into the registry in their place.
"""

from __future__ import annotations

from lake_assets.option_types import OptionRule

R = OptionRule
COMMIT_RULES: dict[str, OptionRule] = {r.key: r for r in (
    R("commit.max-retries", "int", 10, "Retries of a commit that lost the race for a snapshot id.", minimum=0),
    R("commit.min-retry-wait", "duration", 10, "First wait between commit retries."),
    R("commit.max-retry-wait", "duration", 10_000, "Longest wait between commit retries."),
    R("commit.timeout", "duration", None, "Time after which a retrying commit gives up (never).",
      note="accepted; lake_assets bounds retries by commit.max-retries only"),
    R("commit.force-create-snapshot", "bool", False, "Streaming commits without changes still create a "
      "snapshot.", note="as Paimon's Flink committer: every streaming commit (a commit identifier other than "
      "the batch one: a Spark micro-batch, the core commit API) with no changes creates an APPEND snapshot "
      "with no files, carrying its commit user and identifier (ops/commit_empty.py); batch commits, "
      "overwrites and compactions are not affected; a micro-batch no Spark task ran for has no commit user "
      "and commits nothing"),
    R("visibility-callback.enabled", "bool", False, "After a batch commit, wait until the rows it wrote "
      "into bucket-postpone (or, with deletion vectors, at level 0) have been compacted by another job.",
      note="as Paimon HEAD's VisibilityWaitCallback, every batch commit of lake_assets' writers (Table.write_arrow "
      "and the core commit API with BATCH_COMMIT_IDENTIFIER, write_table, df.write, the ingest job) to a "
      "primary-key table in postpone bucket mode or with deletion vectors waits after it landed until a later "
      "snapshot no longer lists the files it added there (ops/visibility_wait.py: each check reads only the "
      "deltas of the snapshots committed since the last one); files its own inline compaction removed are not "
      "waited for; streaming commits and compactions never wait; on timeout CommitNotVisibleError says the "
      "commit landed (its snapshot ids)"),
    R("visibility-callback.timeout", "duration", 1_800_000, "Longest wait of visibility-callback.enabled.",
      note="read by the visibility wait (ops/visibility_wait.py); then CommitNotVisibleError"),
    R("visibility-callback.check-interval", "duration", 10_000, "Interval of the checks of "
      "visibility-callback.enabled.", note="read by the visibility wait (ops/visibility_wait.py)"),
    R("snapshot.ignore-empty-commit", "bool", True, "Commits without changes create no snapshot.",
      note="false: as Paimon 1.x's batch commits (BatchWriteBuilder, pypaimon), a batch commit with no "
      "changes (Table.write_arrow of no rows, df.write or an ingest of an empty input, the core commit API) "
      "creates an APPEND snapshot with no files (ops/commit_empty.py); streaming commits then do too, as "
      "Paimon's streaming commits never skip one; overwrites and compactions are not affected"),
)}
del R

__all__ = ["COMMIT_RULES"]
