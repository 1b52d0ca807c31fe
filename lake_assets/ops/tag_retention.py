"""The commit-time check whether some tag has passed its own retention (Paimon's committer runs
TagTimeExpire after every commit of a table that is not write-only, options or not).

Apart from `ops/tag_auto.py` so that a commit imports only this listing check: the expiry itself
(and the deletion machinery it needs) is imported when a tag is due, which is rare."""

from __future__ import annotations

import datetime as dt
import threading
from typing import TYPE_CHECKING

from lake_assets.paths import list_prefixed
from lake_assets.spec.snapshot import Tag

if TYPE_CHECKING:
    from lake_assets.store.file_store import FileStore


def local_create_time(parts: list[int] | None) -> dt.datetime | None:
    """A tag's ``tagCreateTime`` fields as a naive local datetime (None when absent)."""
    if not parts or len(parts) < 3:
        return None
    p = list(parts) + [0] * (7 - len(parts))
    return dt.datetime(p[0], p[1], p[2], p[3], p[4], p[5], p[6] // 1000)


# Per tag file: (size, modification time) as listed -> its (creation time, retention). A tag file is
# written once and replaced whole (Paimon's replace_tag), so an unchanged listing entry means an
# unchanged tag: commit-time expiry then needs one listing, not a GET of every tag per commit.
_retention_seen: dict[str, tuple[tuple[int, int], tuple[list[int] | None, float | None]]] = {}
_retention_lock = threading.Lock()


def expire_tags_if_due(store: FileStore, *, now: dt.datetime | None = None) -> list[str]:
    """`expire_tags` when some tag has passed its own retention, as Paimon's committer checks at
    every commit; otherwise only the tag directory's listing (and tags new or changed since this
    process last read them) is read."""
    now = now or dt.datetime.now()
    listing = list_prefixed(store.file_io, store.paths.tag_dir, "tag-", "tag")
    due = False
    for name, path, status in listing:
        stamp = None if status.modified_ms is None else (status.size, status.modified_ms)
        with _retention_lock:
            seen = _retention_seen.get(path)
        if seen is not None and stamp is not None and seen[0] == stamp:
            create_time, retained_s = seen[1]
        else:
            try:
                tag = Tag.from_json(name, store.file_io.read_bytes(path))
            except FileNotFoundError:
                continue  # deleted while listing
            create_time, retained_s = tag.create_time, tag.time_retained_s
            if stamp is not None:
                with _retention_lock:
                    _retention_seen[path] = (stamp, (create_time, retained_s))
        created = local_create_time(create_time)
        if created is not None and retained_s is not None and created + dt.timedelta(seconds=retained_s) < now:
            due = True
    if not due:
        return []
    from lake_assets.ops.tag_auto import expire_tags

    return expire_tags(store, now=now)


__all__ = ["expire_tags_if_due", "local_create_time"]
