"""Where each file of a table lives (the directory layout of a Paimon table)."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass


@dataclass(frozen=True)
class TablePaths:
    """Paths of one table's directories and files, rooted at ``root``."""

    root: str

    @property
    def schema_dir(self) -> str:
        return posixpath.join(self.root, "schema")

    @property
    def snapshot_dir(self) -> str:
        return posixpath.join(self.root, "snapshot")

    @property
    def manifest_dir(self) -> str:
        return posixpath.join(self.root, "manifest")

    @property
    def tag_dir(self) -> str:
        return posixpath.join(self.root, "tag")

    @property
    def consumer_dir(self) -> str:
        return posixpath.join(self.root, "consumer")

    @property
    def changelog_dir(self) -> str:
        """Long-lived changelogs: snapshot JSON kept after the snapshot expired (decoupled lifecycle)."""
        return posixpath.join(self.root, "changelog")

    @property
    def index_dir(self) -> str:
        return posixpath.join(self.root, "index")

    @property
    def statistics_dir(self) -> str:
        return posixpath.join(self.root, "statistics")

    def schema_file(self, schema_id: int) -> str:
        return posixpath.join(self.schema_dir, f"schema-{schema_id}")

    def snapshot_file(self, snapshot_id: int) -> str:
        return posixpath.join(self.snapshot_dir, f"snapshot-{snapshot_id}")

    def changelog_file(self, snapshot_id: int) -> str:
        return posixpath.join(self.changelog_dir, f"changelog-{snapshot_id}")

    def manifest_file(self, name: str) -> str:
        return posixpath.join(self.manifest_dir, name)

    def tag_file(self, name: str) -> str:
        return posixpath.join(self.tag_dir, f"tag-{name}")

    def consumer_file(self, consumer_id: str) -> str:
        return posixpath.join(self.consumer_dir, f"consumer-{consumer_id}")

    def bucket_dir(self, partition_path: str, bucket: int) -> str:
        bucket_name = "bucket-postpone" if bucket == -2 else f"bucket-{bucket}"
        if partition_path:
            return posixpath.join(self.root, partition_path, bucket_name)
        return posixpath.join(self.root, bucket_name)

    def data_file(self, partition_path: str, bucket: int, file_name: str) -> str:
        return posixpath.join(self.bucket_dir(partition_path, bucket), file_name)
