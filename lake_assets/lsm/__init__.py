"""LSM-tree storage helpers: bucket assignment."""
