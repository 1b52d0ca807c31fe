"""Tags: named snapshots kept as ``tag/tag-<name>`` (the snapshot JSON plus creation time)."""

from __future__ import annotations

import datetime as dt

from lake_assets.catalog_names import check_tag_name
from lake_assets.errors import AlreadyExistsError, CorruptMetadataError, SnapshotNotFoundError
from lake_assets.io.file_io import FileIO
from lake_assets.paths import TablePaths, list_prefixed
from lake_assets.spec.snapshot import Snapshot, Tag

_TAG_PREFIX = "tag-"


def _java_local_datetime(now: dt.datetime) -> list[int]:
    # Jackson writes LocalDateTime as [y, mo, d, h, mi(, s(, nanos))] with trailing zeros omitted.
    parts = [now.year, now.month, now.day, now.hour, now.minute, now.second, now.microsecond * 1000]
    while len(parts) > 5 and parts[-1] == 0:
        parts.pop()
    return parts


class TagManager:
    """Creates, lists and deletes the tags of one table."""

    def __init__(self, file_io: FileIO, paths: TablePaths, table_name: str) -> None:
        self.file_io = file_io
        self.paths = paths
        self.table_name = table_name

    def names(self) -> list[str]:
        """Every tag's name, as listed (see `tags`)."""
        return sorted(name for name, _, _ in list_prefixed(self.file_io, self.paths.tag_dir, _TAG_PREFIX, "tag"))

    def tags(self) -> dict[str, Tag]:
        """Every tag by name (tags that vanish while listing are skipped).

        Expiry and orphan removal keep what these tags hold, so none may be missed: a tag another
        engine named with a character `create` refuses (Paimon Java accepts "release\\n") is read
        through its listed path, and an entry that cannot be read as a tag raises."""
        out = {}
        for name, path, _ in list_prefixed(self.file_io, self.paths.tag_dir, _TAG_PREFIX, "tag"):
            try:
                data = self.file_io.read_bytes(path)
            except FileNotFoundError:
                continue  # deleted while listing
            out[name] = self._parse(name, data)
        return dict(sorted(out.items()))

    def try_get(self, name: str) -> Tag | None:
        try:
            data = self.file_io.read_bytes(self.paths.tag_file(name))
        except FileNotFoundError:
            return None
        return self._parse(name, data)

    def _parse(self, name: str, data: bytes) -> Tag:
        try:
            return Tag.from_json(name, data)
        except CorruptMetadataError as exc:  # name the table (or branch) the damaged tag is of
            raise CorruptMetadataError(f"{exc} (table {self.table_name})") from exc

    def get(self, name: str) -> Tag:
        tag = self.try_get(name)
        if tag is None:
            raise SnapshotNotFoundError(f"Table {self.table_name} has no tag {name!r}")
        return tag

    def create(self, name: str, snapshot: Snapshot, time_retained_s: float | None = None) -> Tag:
        check_tag_name(name, self.table_name)
        tag = Tag(name, snapshot, _java_local_datetime(dt.datetime.now()), time_retained_s)
        if not self.file_io.try_create(self.paths.tag_file(name), tag.to_json().encode()):
            raise AlreadyExistsError(f"Table {self.table_name} already has a tag {name!r}")
        return tag

    def delete(self, name: str) -> None:
        if not self.file_io.delete(self.paths.tag_file(name)):
            raise SnapshotNotFoundError(f"Table {self.table_name} has no tag {name!r}")
