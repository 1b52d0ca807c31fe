"""Dagster layer: assets, checks, sensors and schedules that keep the tables of ``lake.yaml`` healthy.

The code location is `lake_assets.defs.definitions`. Nothing here imports pyspark: Spark runs in the
jobs under ``jobs/`` / `lake_assets.spark.jobs`, launched as subprocesses through Dagster Pipes.
"""
