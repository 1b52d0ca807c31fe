"""What the compact jobs' driver does when units failed on executors with a lake error."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from lake_assets import errors as lake_errors
from lake_assets.errors import LakeError
from lake_assets.ops.commit import TableCommitter
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.store.file_store import FileStore


def abort_and_raise(store: FileStore, messages: Sequence[CommitMessage], failed: Sequence[tuple[str, str]],
                    noun: str) -> None:
    """Nothing of the run is committed: delete the output of the units that succeeded (their files
    would be orphans; abort validates the executors' messages and deletes only files no snapshot or
    tag references), then raise the first failure as its lake error class (exit codes follow it)."""
    TableCommitter(store, f"compact-abort-{uuid.uuid4()}").abort(messages)
    name, text = failed[0]
    # the class name came from an executor: only a lake error class of that name, else LakeError
    cls = getattr(lake_errors, name, LakeError)
    if not (isinstance(cls, type) and issubclass(cls, LakeError)):
        cls = LakeError
    more = f" ({len(failed) - 1} more {noun} failed)" if len(failed) > 1 else ""
    raise cls(f"{text}{more}")
