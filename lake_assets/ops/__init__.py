"""Table operations (use cases) on a `lake_assets.store.file_store.FileStore`: each a pure plan
plus the code that applies it to storage. The metadata stores they use live in `lake_assets.store`."""
