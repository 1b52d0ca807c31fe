"""Resources: the warehouse (storage union) and the Spark job launcher."""

from lake_assets.defs.resources.spark import SparkJobResource
from lake_assets.defs.resources.storage import LocalStorage, S3Storage, Storage
from lake_assets.defs.resources.warehouse import WarehouseResource

__all__ = ["LocalStorage", "S3Storage", "SparkJobResource", "Storage", "WarehouseResource"]
