"""Demos: ``python -m lake_assets.demo`` (end to end with Dagster and Spark) and ``lake_assets.demo.core``."""
