"""Where each file of a table lives (the directory layout of a Paimon table).

This module is the trust boundary for paths. Every file name that comes from storage (manifests,
snapshots, listings) or across a process boundary (commit messages) is checked as a plain file
name with `check_file_name`, and every path of a table is built by `TablePaths`, whose methods
only ever join plain names under the root. Code that deletes or walks on a local disk also asks
`TablePaths.ensure_inside` with ``resolve_links``, so that a symlinked directory cannot lead a
delete out of the table.
"""

from __future__ import annotations

import operator
import os
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_assets.errors import CorruptMetadataError, UnsafePathError

if TYPE_CHECKING:
    from lake_assets.io.file_io import FileIO, FileStatus

# A path component on common filesystems (ext4, xfs, APFS) and S3 keys per segment: 255 bytes.
MAX_FILE_NAME_BYTES = 255
# Option values that become the start of file names (`data-file.prefix`): room is left for the
# "<uuid>-<counter>.parquet" that follows them, and for ".<name>.<uuid>.tmp" temporary files.
MAX_PREFIX_BYTES = 128


_UNSAFE_CHAR = re.compile(r"[\x00-\x1f\x7f/\\]")


def _problem(name: object, max_bytes: int, *, allow_empty: bool = False) -> str | None:
    """Why ``name`` is not a plain file name (None when it is one)."""
    if not isinstance(name, str):
        return f"it is a {type(name).__name__}, not a string"
    if not name:
        return None if allow_empty else "it is empty"
    if name in (".", ".."):
        return "it names a directory"
    bad = _UNSAFE_CHAR.search(name)  # one C-level scan: names are checked per manifest entry
    if bad is not None:
        return "it contains a path separator" if bad.group() in "/\\" else "it contains a control character"
    if not name.isascii() or len(name) > max_bytes:  # ASCII is one byte a character: no need to encode
        try:
            size = len(name.encode("utf-8"))
        except UnicodeEncodeError:
            return "it is not valid UTF-8 text"
        if size > max_bytes:
            return f"it is {size} bytes long (at most {max_bytes})"
    return None


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}...({len(text)} characters)"


def check_file_name(name: object, what: str) -> str:
    """Return ``name`` if it is a plain file name: no separators, not ``.``/``..``, no control
    characters, at most 255 bytes. ``what`` says where it came from, e.g. "data file of db.t"."""
    why = _problem(name, MAX_FILE_NAME_BYTES)
    if why is not None:
        raise UnsafePathError(f"Unsafe file name {_show(name)} for {what}: {why}")
    return name  # type: ignore[return-value]


def check_path_part(value: object, what: str) -> str:
    """Return ``value`` if it may start a file name (an option such as ``data-file.prefix``):
    like `check_file_name`, but it may be empty and is at most 128 bytes."""
    why = _problem(value, MAX_PREFIX_BYTES, allow_empty=True)
    if why is not None:
        raise UnsafePathError(f"Unsafe value {_show(value)} for {what}: {why}")
    return value  # type: ignore[return-value]


# The table directory's own sub-directories (and Paimon's ``branch/``): no data directory may be one.
RESERVED_DIRS = frozenset({"schema", "snapshot", "manifest", "index", "tag", "consumer", "changelog",
                           "statistics", "branch", "expiring"})


def check_data_directory(value: object, what: str) -> str:
    """The ``data-file.path-directory`` value ``value`` as a relative path of plain directory
    names under the table (a trailing ``/`` dropped, as Java's ``Path`` drops it), or
    `UnsafePathError`: no absolute path, scheme (``s3://``, ``C:``), ``.``/``..`` or empty segment,
    and not one of the table's own directories (`RESERVED_DIRS`)."""
    if not isinstance(value, str) or not value.strip("/"):
        raise UnsafePathError(f"Unsafe value {_show(value)} for {what}: it names no directory")
    if value.startswith("/") or ":" in value:
        raise UnsafePathError(f"Unsafe value {_show(value)} for {what}: it must be a relative path inside the "
                              "table directory (no absolute path, scheme or drive)")
    text = value[:-1] if value.endswith("/") else value
    for part in text.split("/"):
        check_file_name(part, what)
    if text.split("/")[0] in RESERVED_DIRS:
        raise UnsafePathError(f"Unsafe value {_show(value)} for {what}: it is inside the table's own "
                              f"{text.split('/')[0]!r} directory")
    return text


@dataclass(frozen=True)
class TablePaths:
    """Paths of one table's directories and files, rooted at ``root``.

    File-name arguments are checked with `check_file_name` (raising `UnsafePathError`), so a
    path built here never leaves ``root``. ``data_directory`` (``data-file.path-directory``,
    checked by `check_data_directory`) puts the partition and bucket directories below
    ``root/<data_directory>``, as Paimon 1.x's ``FileStorePathFactory`` does.

    ``branch`` (Paimon 0.9+'s ``branch`` option, a ``db.t$branch_<name>`` identifier): the schema,
    snapshot, tag, consumer and changelog directories are the branch's own, under
    ``root/branch/branch-<name>`` (`meta_root`), as Paimon's ``BranchManager.branchPath``; data,
    manifest, index and statistics files stay the table's (a branch shares them with main).
    """

    root: str
    data_directory: str | None = None
    branch: str | None = None

    @property
    def meta_root(self) -> str:
        """The root of the branch's own metadata directories: the table's root on the main branch."""
        if self.branch is None:
            return self.root
        name = check_file_name(f"branch-{self.branch}", f"branch under {self.root}")
        return posixpath.join(self.root, "branch", name)

    @property
    def data_root(self) -> str:
        """Where the partition and bucket directories live: the root, or its data directory."""
        if self.data_directory is None:
            return self.root
        return posixpath.join(self.root, check_data_directory(self.data_directory, f"data directory of {self.root}"))

    @property
    def schema_dir(self) -> str:
        return posixpath.join(self.meta_root, "schema")

    @property
    def snapshot_dir(self) -> str:
        return posixpath.join(self.meta_root, "snapshot")

    @property
    def manifest_dir(self) -> str:
        return posixpath.join(self.root, "manifest")

    @property
    def tag_dir(self) -> str:
        return posixpath.join(self.meta_root, "tag")

    @property
    def consumer_dir(self) -> str:
        return posixpath.join(self.meta_root, "consumer")

    @property
    def changelog_dir(self) -> str:
        """Long-lived changelogs: snapshot JSON kept after the snapshot expired (decoupled lifecycle)."""
        return posixpath.join(self.meta_root, "changelog")

    @property
    def index_dir(self) -> str:
        return posixpath.join(self.root, "index")

    @property
    def statistics_dir(self) -> str:
        return posixpath.join(self.root, "statistics")

    def schema_file(self, schema_id: int) -> str:
        return posixpath.join(self.schema_dir, f"schema-{_int(schema_id)}")

    def snapshot_file(self, snapshot_id: int) -> str:
        return posixpath.join(self.snapshot_dir, f"snapshot-{_int(snapshot_id)}")

    def changelog_file(self, snapshot_id: int) -> str:
        return posixpath.join(self.changelog_dir, f"changelog-{_int(snapshot_id)}")

    def manifest_file(self, name: str) -> str:
        return posixpath.join(self.manifest_dir, check_file_name(name, f"manifest under {self.root}"))

    def statistics_file(self, name: str) -> str:
        return posixpath.join(self.statistics_dir, check_file_name(name, f"statistics under {self.root}"))

    def index_file(self, name: str) -> str:
        return posixpath.join(self.index_dir, check_file_name(name, f"index file under {self.root}"))

    def tag_file(self, name: str) -> str:
        return posixpath.join(self.tag_dir, check_file_name(f"tag-{name}", f"tag under {self.root}"))

    def consumer_file(self, consumer_id: str) -> str:
        return posixpath.join(
            self.consumer_dir, check_file_name(f"consumer-{consumer_id}", f"consumer under {self.root}")
        )

    def bucket_dir(self, partition_path: str, bucket: int) -> str:
        bucket_name = "bucket-postpone" if bucket == -2 else f"bucket-{_int(bucket)}"
        if partition_path:
            # Partition paths are `k=v` segments with '/' and control characters escaped
            # (spec/partition.py); each segment is still checked, as the last line of defence.
            for part in partition_path.split("/"):
                check_file_name(part, f"partition directory under {self.root}")
            return posixpath.join(self.data_root, partition_path, bucket_name)
        return posixpath.join(self.data_root, bucket_name)

    def data_file(self, partition_path: str, bucket: int, file_name: str) -> str:
        return posixpath.join(
            self.bucket_dir(partition_path, bucket), check_file_name(file_name, f"data file under {self.root}")
        )

    # ---------------------------------------------------------------- containment
    def is_inside(self, path: str) -> bool:
        """Whether ``path`` names something strictly below the root (lexically, after ``..`` folding)."""
        root = self.root.rstrip("/") or "/"
        norm = posixpath.normpath(path)
        return norm != root and norm.startswith(root if root == "/" else root + "/")

    def ensure_inside(self, paths: Iterable[str], *, resolve_links: bool = False) -> list[str]:
        """Return ``paths`` if every one is inside the table, else raise `UnsafePathError` (before
        anything is done with any of them).

        With ``resolve_links`` (local disks, where the caller deletes), each file's directory is
        resolved through symlinks too: a symlinked directory pointing out of the table fails.
        The file itself may be a symlink: deleting it removes the link, not its target.
        """
        out = list(paths)
        real_root = os.path.realpath(self.root) if resolve_links else ""
        checked: set[str] = set()
        for p in out:
            if not self.is_inside(p):
                raise UnsafePathError(f"Refusing to touch {p!r}: it is not inside the table directory {self.root}")
            if not resolve_links:
                continue
            parent = posixpath.dirname(posixpath.normpath(p))
            if parent in checked:
                continue
            real = os.path.realpath(parent)
            if real != real_root and not real.startswith(real_root.rstrip("/") + "/"):
                raise UnsafePathError(
                    f"Refusing to touch {p!r}: its directory resolves (through a symlink) to {real!r}, "
                    f"outside the table directory {self.root}"
                )
            checked.add(parent)
        return out


def list_prefixed(file_io: FileIO, directory: str, prefix: str, what: str) -> list[tuple[str, str, FileStatus]]:
    """``(name after the prefix, path, status)`` of every file in ``directory`` named ``<prefix><name>``
    (tags, consumers), for code that must see all of them (expiry protects what they hold).

    Nothing is skipped that could hold something: a name another engine wrote with a character we
    would refuse to create (Paimon Java accepts "release\\n") is still listed, its path taken from
    the listing itself (so it stays in ``directory``). An entry that is a directory (Java turns a
    name with '/' into one) cannot be interpreted: `CorruptMetadataError`, never a silent skip.
    Temporary files (".tag-x.<uuid>.tmp") and other names are not entries.
    """
    out = []
    for st in file_io.list_status(directory):
        base = posixpath.basename(st.path.rstrip("/"))
        if not base.startswith(prefix) or base == prefix:
            continue
        if st.is_dir:
            raise CorruptMetadataError(
                f"Cannot interpret {what} entry {base!r} under {directory}: it is a directory (a name "
                "with '/' written by another engine?); refusing to go on without knowing what it holds"
            )
        out.append((base[len(prefix):], posixpath.join(directory, base), st))
    return out


def _int(value: int) -> int:
    # Ids become file names: a bool or a string here would be a caller's bug, not a name.
    if isinstance(value, bool):
        raise UnsafePathError(f"Expected an integer id for a file name, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise UnsafePathError(f"Expected an integer id for a file name, got {value!r}") from None
