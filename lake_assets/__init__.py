"""lake_assets: keeps Apache Paimon lakehouse tables healthy.

The core (this package without ``spark`` and ``defs``) reads, writes and maintains Paimon tables
on a local disk, in memory or on S3 (`lake_assets.io`), without Spark or Dagster.

The public names below are imported on first use (`lake_assets.lazy_exports`): every process that
imports any module of the package (a Spark Python worker, a Dagster code location, a job) runs this
file first, and it must not pay for the modules of verbs it never calls (issue 17 §3).
``from lake_assets import Catalog`` and ``lake_assets.Catalog`` work as before; type checkers see
the imports below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_assets.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from lake_assets.catalog import Catalog
    from lake_assets.errors import (
        AlreadyExistsError,
        CatalogError,
        CommitConflictError,
        CommitError,
        CommitFileMissingError,
        CommitNotVisibleError,
        CommitStateUnknownError,
        ConcurrentMaintenanceError,
        CorruptMetadataError,
        InvalidArgumentError,
        InvalidCommitMessageError,
        InvalidDataError,
        InvalidIdentifierError,
        LakeError,
        NoSuchDatabaseError,
        NoSuchTableError,
        OptionError,
        SchemaError,
        SnapshotNotFoundError,
        UnsafePathError,
        UnsupportedFeatureError,
        WriterStateLostError,
    )
    from lake_assets.ops.commit_message import CommitMessage
    from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
    from lake_assets.table import Table

_ERRORS = "lake_assets.errors"

# public name -> the module that defines it
_EXPORTS = {
    "BATCH_COMMIT_IDENTIFIER": "lake_assets.spec.snapshot",
    "AlreadyExistsError": _ERRORS,
    "Catalog": "lake_assets.catalog",
    "CatalogError": _ERRORS,
    "CommitConflictError": _ERRORS,
    "CommitError": _ERRORS,
    "CommitFileMissingError": _ERRORS,
    "CommitKind": "lake_assets.spec.snapshot",
    "CommitMessage": "lake_assets.ops.commit_message",
    "CommitNotVisibleError": _ERRORS,
    "CommitStateUnknownError": _ERRORS,
    "ConcurrentMaintenanceError": _ERRORS,
    "CorruptMetadataError": _ERRORS,
    "InvalidArgumentError": _ERRORS,
    "InvalidCommitMessageError": _ERRORS,
    "InvalidDataError": _ERRORS,
    "InvalidIdentifierError": _ERRORS,
    "LakeError": _ERRORS,
    "NoSuchDatabaseError": _ERRORS,
    "NoSuchTableError": _ERRORS,
    "OptionError": _ERRORS,
    "SchemaError": _ERRORS,
    "Snapshot": "lake_assets.spec.snapshot",
    "SnapshotNotFoundError": _ERRORS,
    "Table": "lake_assets.table",
    "UnsafePathError": _ERRORS,
    "UnsupportedFeatureError": _ERRORS,
    "WriterStateLostError": _ERRORS,
}

__all__ = [
    "BATCH_COMMIT_IDENTIFIER",
    "AlreadyExistsError",
    "Catalog",
    "CatalogError",
    "CommitConflictError",
    "CommitError",
    "CommitFileMissingError",
    "CommitKind",
    "CommitMessage",
    "CommitNotVisibleError",
    "CommitStateUnknownError",
    "ConcurrentMaintenanceError",
    "CorruptMetadataError",
    "InvalidArgumentError",
    "InvalidCommitMessageError",
    "InvalidDataError",
    "InvalidIdentifierError",
    "LakeError",
    "NoSuchDatabaseError",
    "NoSuchTableError",
    "OptionError",
    "SchemaError",
    "Snapshot",
    "SnapshotNotFoundError",
    "Table",
    "UnsafePathError",
    "UnsupportedFeatureError",
    "WriterStateLostError",
]


if not TYPE_CHECKING:  # checkers see the imports above, and a name not among them stays an error
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
