"""lake_assets: keeps Apache Paimon lakehouse tables healthy.

The core (this package without ``spark`` and ``defs``) reads, writes and maintains Paimon tables
on a local disk, in memory or on S3 (`lake_assets.io`), without Spark or Dagster.
"""

from lake_assets.catalog import Catalog
from lake_assets.errors import (
    AlreadyExistsError,
    CatalogError,
    CommitConflictError,
    CommitError,
    CommitFileMissingError,
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
)
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot
from lake_assets.table import Table

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
]
