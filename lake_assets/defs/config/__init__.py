"""lake.yaml: the tables, the warehouse and the Spark launcher, validated with pydantic."""

from lake_assets.defs.config.branches import BranchConfig, BranchMaintenance
from lake_assets.defs.config.fields import parse_duration
from lake_assets.defs.config.loading import CONFIG_ENV, LakeConfigError, config_path, load_config, parse_config
from lake_assets.defs.config.models import IngestConfig, LakeConfig, TableConfig
from lake_assets.defs.config.policy import ChangelogPolicy, MaintenancePolicy, OrphanPolicy
from lake_assets.defs.config.runtime import AutomationConfig, FreshnessConfig, SparkConfig

__all__ = [
    "CONFIG_ENV",
    "AutomationConfig",
    "BranchConfig",
    "BranchMaintenance",
    "ChangelogPolicy",
    "FreshnessConfig",
    "IngestConfig",
    "LakeConfig",
    "LakeConfigError",
    "MaintenancePolicy",
    "OrphanPolicy",
    "SparkConfig",
    "TableConfig",
    "config_path",
    "load_config",
    "parse_config",
    "parse_duration",
]
