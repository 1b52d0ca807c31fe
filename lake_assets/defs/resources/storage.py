"""Where the warehouse lives: a discriminated union of storage settings (``kind: local | s3``)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import dagster as dg
from pydantic import Field

# The variable naming what a job passes on to its executors (`lake_assets.spark.jobs.session`, which
# this layer does not import: the Dagster layer never imports the Spark one).
EXECUTOR_ENV_VAR = "LAKE_ASSETS_EXECUTOR_ENV"


class LocalStorage(dg.Config):
    """A warehouse on a local (or mounted) filesystem."""

    kind: Literal["local"] = "local"
    path: str = Field(description="Warehouse directory; relative paths in lake.yaml resolve against its folder.")

    def warehouse_url(self) -> str:
        return self.path

    def catalog_options(self) -> dict[str, Any]:
        return {}

    def job_options(self) -> dict[str, str]:
        return {}

    def job_env(self) -> dict[str, str]:
        return {}


class S3Storage(dg.Config):
    """A warehouse in S3 or an S3-compatible store (MinIO, Ceph): secrets never go on a command line."""

    kind: Literal["s3"] = "s3"
    url: str = Field(description="s3://bucket/prefix of the warehouse.")
    endpoint_url: str | None = Field(default=None, description="Endpoint of an S3-compatible store.")
    region: str | None = Field(default=None, description="AWS region name.")
    key: str | None = Field(default=None, description="Access key id (use {env: NAME} in lake.yaml).")
    secret: str | None = Field(default=None, description="Secret access key (use {env: NAME} in lake.yaml).")
    options: dict[str, str] = Field(default_factory=dict, description="Extra fsspec/s3fs storage options.")

    def warehouse_url(self) -> str:
        return self.url

    def catalog_options(self) -> dict[str, Any]:
        """Storage options for `Catalog` in this process (s3fs keyword arguments)."""
        out: dict[str, Any] = dict(self.options)
        if self.endpoint_url:
            out["endpoint_url"] = self.endpoint_url
        if self.region:
            out["client_kwargs"] = {"region_name": self.region}
        if self.key:
            out["key"] = self.key
        if self.secret:
            out["secret"] = self.secret
        return out

    def job_options(self) -> dict[str, str]:
        """Non-secret options passed to jobs as ``--storage-option k=v``."""
        out = dict(self.options)
        if self.endpoint_url:
            out["endpoint_url"] = self.endpoint_url
        if self.region:
            out["client_kwargs"] = json.dumps({"region_name": self.region})
        return out

    def job_env(self) -> dict[str, str]:
        """Credentials for the job's environment, where botocore (under s3fs) finds them; the job
        passes them on to its executors (``LAKE_ASSETS_EXECUTOR_ENV``), which on a cluster do not
        inherit the driver's environment."""
        env = {}
        if self.key:
            env["AWS_ACCESS_KEY_ID"] = self.key
        if self.secret:
            env["AWS_SECRET_ACCESS_KEY"] = self.secret
        if self.region:
            env["AWS_DEFAULT_REGION"] = self.region
        if env:
            env[EXECUTOR_ENV_VAR] = ",".join(sorted(env))
        return env


Storage = Annotated[LocalStorage | S3Storage, Field(discriminator="kind")]
