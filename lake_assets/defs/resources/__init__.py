"""Resources: the warehouse (storage union), the Spark job launcher and one table for assets."""

from lake_assets.defs.resources.spark import SparkJobResource
from lake_assets.defs.resources.storage import LocalStorage, S3Storage, Storage
from lake_assets.defs.resources.tables import LakeTableResource
from lake_assets.defs.resources.warehouse import WarehouseResource

__all__ = ["LakeTableResource", "LocalStorage", "S3Storage", "SparkJobResource", "Storage", "WarehouseResource"]
