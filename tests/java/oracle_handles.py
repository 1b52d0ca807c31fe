"""Handles of the Java oracle's long-lived objects: an open stream writer and a streaming scan."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from .oracle_values import decode_result, encode_rows

if TYPE_CHECKING:
    from .oracle import PaimonJava


class JavaWriter:
    """An open Java stream writer (see :meth:`PaimonJava.open_writer`)."""

    def __init__(self, java: PaimonJava, handle: int, commit_user: str) -> None:
        self.java, self.handle, self.commit_user = java, handle, commit_user

    def write(
        self, data: pa.Table | Sequence[Mapping[str, Any]], kinds: Sequence[str] | None = None,
        schema: pa.Schema | None = None,
    ) -> None:
        """Buffer rows (RowKind per row in ``kinds``)."""
        columns, rows = encode_rows(data, schema)
        self.java.call("writer_write", handle=self.handle, columns=columns, rows=rows,
                       kinds=list(kinds) if kinds is not None else None)

    def compact(self, partition: Sequence[Any] = (), bucket: int = 0, full: bool = True) -> None:
        """Ask for a compaction of one bucket; it lands with the next commit."""
        self.java.call("writer_compact", handle=self.handle, partition=list(partition), bucket=bucket, full=full)

    def commit(self, commit_identifier: int, *, wait_compaction: bool = True, filter_committed: bool = False):
        """prepareCommit + commit under ``commit_identifier``; returns ``{"committed", "snapshot_id"}``."""
        return self.java.call("writer_commit", handle=self.handle, commit_identifier=commit_identifier,
                              wait_compaction=wait_compaction, filter_committed=filter_committed)

    def close(self) -> None:
        """Release the writer."""
        self.java.call("writer_close", handle=self.handle)

    def __enter__(self) -> JavaWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class JavaStream:
    """An open Java streaming scan (see :meth:`PaimonJava.stream`)."""

    def __init__(self, java: PaimonJava, handle: int) -> None:
        self.java, self.handle = java, handle
        self.checkpoint: int | None = None

    def next(self) -> pa.Table:
        """The next plan's rows with ``_row_kind`` (empty when no new snapshot); updates ``checkpoint``."""
        res = self.java.call("stream_next", handle=self.handle)
        self.checkpoint = res.get("checkpoint")
        return decode_result(res, with_kinds=True)

    def notify_checkpoint_complete(self, checkpoint: int | None = None) -> None:
        """Flink's checkpoint completion: with ``consumer-id`` set this moves the consumer."""
        self.java.call("stream_notify", handle=self.handle,
                       checkpoint=self.checkpoint if checkpoint is None else checkpoint)

    def close(self) -> None:
        """Forget the scan."""
        self.java.call("stream_close", handle=self.handle)
