"""Fixtures of the Spark tests: the shared local SparkSession, `spark`, is in tests/conftest.py (the
Dagster tests' in-process jobs use it too)."""
