"""When a commit with no changes still creates a snapshot, as Paimon decides it.

Paimon's ``FileStoreCommitImpl.commit`` skips the APPEND snapshot of a commit with no new data,
changelog or index files only while its ``ignoreEmptyCommit`` flag is set; COMPACT snapshots are
made only from compaction changes, so an empty commit is always an APPEND snapshot with no files
(an empty delta manifest list, the base carried over, record counts, watermark and index
manifest as the latest snapshot's). Who sets the flag:

- batch commits (``BatchWriteBuilderImpl``, pypaimon): ``snapshot.ignore-empty-commit``, default
  true (Paimon 1.x; 0.9's batch commits always skip);
- streaming commits (``StreamWriteBuilderImpl``, Flink's sink with checkpoints): never skip.
  Flink's committer commits at a checkpoint only when its writers sent commit messages, unless
  ``commit.force-create-snapshot`` is set (``CommitterOperator.commitUpToCheckpoint``), which
  makes one empty commit per checkpoint. lake_assets' streaming commits (a Spark micro-batch,
  the core API with an identifier other than the batch one) commit nothing without changes
  unless one of the two options asks for it.

Overwrites follow their own rule in Paimon and here (``FileStoreCommitImpl.overwrite`` never
reads the flag): a static overwrite (a named partition, the whole table, a truncation) always
commits, an empty OVERWRITE snapshot when it replaces and adds nothing; a dynamic overwrite of no
new files replaces nothing and commits nothing. Compactions commit only what they changed.
"""

from __future__ import annotations

from lake_assets.options import CoreOptions
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER


def commits_empty_snapshot(options: CoreOptions, commit_identifier: int) -> bool:
    """Whether a commit of no changes with ``commit_identifier`` creates an (empty) APPEND snapshot."""
    if commit_identifier == BATCH_COMMIT_IDENTIFIER:
        return not options.ignore_empty_commit
    # a streaming commit: Paimon's never skips (ignore-empty-commit=false keeps that), and
    # commit.force-create-snapshot makes Flink commit at every checkpoint
    return options.commit_force_create_snapshot or not options.ignore_empty_commit


__all__ = ["commits_empty_snapshot"]
