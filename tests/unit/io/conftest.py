"""The S3 backend of the contract suite runs against the reliability suite's moto server on loopback."""

from tests.reliability.conftest import s3_server, s3_warehouse

__all__ = ["s3_server", "s3_warehouse"]
