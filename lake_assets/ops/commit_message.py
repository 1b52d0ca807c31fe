"""What a writer hands to the committer: the files it produced per (partition, bucket)."""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, fields
from typing import Any

from lake_assets.spec.manifest import DataFileMeta, SimpleStats


@dataclass(frozen=True)
class CommitMessage:
    """Files one writer produced for one (partition, bucket), not yet visible to readers.

    Small and serializable (``to_json``/``from_json``, or pickle) so that distributed writers can
    send them to a single committer.
    """

    partition: bytes
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    new_changelog: tuple[DataFileMeta, ...] = ()
    compact_changelog: tuple[DataFileMeta, ...] = ()

    def is_empty(self) -> bool:
        return not (
            self.new_files or self.compact_before or self.compact_after or self.new_changelog
            or self.compact_changelog
        )

    def all_written_files(self) -> list[DataFileMeta]:
        """Files this message's writer created (what an abort must delete).

        Upgraded files (same name before and after compaction, only the level changes) are not
        new: they stay referenced by the table and must never be deleted on abort.
        """
        upgraded = {f.file_name for f in self.compact_before}
        after = [f for f in self.compact_after if f.file_name not in upgraded]
        return [*self.new_files, *after, *self.new_changelog, *self.compact_changelog]

    def to_json(self) -> str:
        return json.dumps(_encode(asdict(self)))

    @classmethod
    def from_json(cls, text: str) -> CommitMessage:
        d = json.loads(text)
        files = {f.name for f in fields(cls)} - {"partition", "bucket", "total_buckets"}
        kwargs: dict[str, Any] = {
            "partition": base64.b64decode(d["partition"]),
            "bucket": d["bucket"],
            "total_buckets": d["total_buckets"],
        }
        for name in files:
            kwargs[name] = tuple(_file_from_dict(x) for x in d.get(name, []))
        return cls(**kwargs)


def _encode(v: Any) -> Any:
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, dict):
        return {k: _encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_encode(x) for x in v]
    return v


def _stats_from_dict(d: dict) -> SimpleStats:
    nulls = d["null_counts"]
    return SimpleStats(
        base64.b64decode(d["min_values"]),
        base64.b64decode(d["max_values"]),
        None if nulls is None else tuple(nulls),
    )


def _file_from_dict(d: dict) -> DataFileMeta:
    kw = dict(d)
    for k in ("min_key", "max_key"):
        kw[k] = base64.b64decode(kw[k])
    if kw.get("embedded_file_index") is not None:
        kw["embedded_file_index"] = base64.b64decode(kw["embedded_file_index"])
    kw["key_stats"] = _stats_from_dict(kw["key_stats"])
    kw["value_stats"] = _stats_from_dict(kw["value_stats"])
    for k in ("extra_files", "value_stats_cols", "write_cols", "write_cols_sequences"):
        if kw.get(k) is not None:
            kw[k] = tuple(kw[k])
    return DataFileMeta(**kw)
