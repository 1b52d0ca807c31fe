"""A table's storage: `FileStore` (`file_store`) and the metadata stores it hands out - snapshots,
manifests, long-lived changelogs, tags and consumers. Use cases live in `lake_assets.ops`."""
