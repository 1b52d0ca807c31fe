"""One small hierarchy of errors raised by lake_assets.

Every error names the table (or file) and the problem, e.g.
``Cannot commit to db.orders: file data-x-0.parquet was already deleted``.
"""

from __future__ import annotations


class LakeError(Exception):
    """Base class of every error lake_assets raises on purpose."""


class CatalogError(LakeError):
    """A catalog-level problem (database or table missing, already there, bad identifier)."""


class NoSuchDatabaseError(CatalogError):
    """The database does not exist."""


class NoSuchTableError(CatalogError):
    """The table does not exist."""


class AlreadyExistsError(CatalogError):
    """The database or table already exists."""


class InvalidIdentifierError(CatalogError):
    """A database or table name that would escape the warehouse or is not well formed."""


class UnsafePathError(LakeError):
    """A file name or path that is not a plain name inside the table directory (``../x``, ``/abs``,
    a control character, an over-long name, a symlink leading out of the table)."""


class SchemaError(LakeError):
    """Input data or a schema change does not fit the table's schema."""


class InvalidDataError(LakeError):
    """A value that cannot be stored: a null primary key, an overflow, an unknown row kind."""


class NullInNotNullColumnError(InvalidDataError):
    """A data file would hold a null in a NOT NULL ``column``: typically rows of a file written
    before the column was made NOT NULL, which a compaction would rewrite (Paimon's readers cannot
    decode a required column holding nulls)."""

    def __init__(self, message: str, *, column: str) -> None:
        super().__init__(message)
        self.column = column


class UnsupportedFeatureError(LakeError):
    """An option or feature of the Paimon format that lake_assets does not implement (yet)."""


class OptionError(LakeError):
    """An unknown, malformed or contradictory table option."""


class CorruptMetadataError(LakeError):
    """A snapshot, schema, manifest or data file that cannot be decoded."""


class MissingDataFileError(CorruptMetadataError):
    """A data file that a snapshot lists is not in storage (see `ConcurrentMaintenanceError` for
    the case where the snapshot itself was expired meanwhile: then nothing is corrupt)."""


class ConcurrentMaintenanceError(LakeError):
    """A read lost a race with compaction and snapshot expiry: the snapshot it planned was expired
    and its files removed while it read. Nothing is corrupt: plan the read again and retry."""


class SnapshotNotFoundError(LakeError):
    """A snapshot, tag or point in time that the table does not have."""


class CommitError(LakeError):
    """A commit did not happen."""


class InvalidCommitMessageError(CommitError):
    """A commit message that does not fit the table (a file name that is not plain, a bucket out of
    range, a partition of the wrong arity, an impossible level or sequence range, an unknown schema).

    Nothing was committed and nothing was deleted.
    """


class CommitConflictError(CommitError):
    """A commit lost against a concurrent commit it cannot be rebased onto.

    Nothing was committed and the files this commit wrote were removed; refresh and redo the work.
    """


class CommitFileMissingError(CommitError):
    """A commit message adds a file that is not in storage: typically a checkpoint replayed after its
    snapshot was committed, compacted away and expired (so "already committed" can no longer be
    seen). Nothing was committed and nothing was deleted: the message's other files may be live."""


class CommitStateUnknownError(CommitError):
    """It is unknown whether the commit landed (e.g. storage failed while creating the snapshot).

    Never clean up after this error: the files may be referenced by a committed snapshot.
    Retrying with the same commit user and identifier resolves the state.
    """


class WriterStateLostError(LakeError):
    """A writer found that rows it prepared in an earlier round never landed and their files are
    gone (that round's commit failed or was aborted): it refuses further use. Write the rows of
    the failed commits and of the writer's current round again through a new writer."""


class CommitNotVisibleError(LakeError):
    """The commit LANDED (``snapshot_ids``), but ``visibility-callback.enabled`` waited
    ``visibility-callback.timeout`` in vain for another job's compaction to make its rows visible
    (``pending`` files still in ``bucket-postpone`` or, with deletion vectors, at level 0).

    Not a failed commit: never write the rows again and never clean up its files; compact the table.
    """

    def __init__(self, message: str, *, table: str, snapshot_ids: tuple[int, ...], pending: int) -> None:
        super().__init__(message)
        self.table = table
        self.snapshot_ids = snapshot_ids
        self.pending = pending


class InvalidArgumentError(LakeError, ValueError):
    """An argument of a call that is not well formed (a time that does not parse, an unknown mode);
    also a ValueError, which such mistakes raised before."""
