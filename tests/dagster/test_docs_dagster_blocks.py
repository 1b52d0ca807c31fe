"""docs/dagster.md's configuration blocks are what the code accepts: the lake.yaml reference loads
as written and names every setting, and the Component's defs.yaml names a class that exists.
(Its shell blocks: tests/dagster/test_new_user_fixes.py and test_concurrency.py; README's Python
blocks: tests/unit/test_readme.py; docs/features.md's: tests/unit/test_docs_features.py; docs/format.md
and docs/storage.md have no code blocks.)"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import yaml

from lake_assets.defs.config import parse_config
from lake_assets.defs.config.branches import BranchConfig, BranchMaintenance
from lake_assets.defs.config.models import IngestConfig
from lake_assets.defs.config.policy import MaintenancePolicy, OrphanPolicy
from lake_assets.defs.config.runtime import AutomationConfig, SparkConfig

REPO = Path(__file__).resolve().parents[2]


def _yaml_blocks() -> list[str]:
    return re.findall(r"^```yaml\n(.*?)^```", (REPO / "docs" / "dagster.md").read_text(), flags=re.S | re.M)


def test_lake_yaml_reference_loads_and_names_every_setting(tmp_path: Path) -> None:
    [reference] = [b for b in _yaml_blocks() if b.startswith("warehouse:")]
    config = parse_config(yaml.safe_load(reference), base_dir=tmp_path, source="docs/dagster.md")
    assert config.table("db.table").maintenance.orphans.older_than == "1d"
    [dev, audit] = config.table("db.table").branch_specs()
    assert (dev.identifier, audit.maintenance.retain_max, audit.maintenance.compaction_cron) == (
        "db.table$branch_dev", 20, None)
    documented = set(re.findall(r"^\s*(?:- |# )?(\w+):", reference, flags=re.M)) | set(  # commented: optional
        re.findall(r"[{,] ?(\w+):", reference))
    for model in (SparkConfig, AutomationConfig, IngestConfig, MaintenancePolicy, OrphanPolicy, BranchConfig,
                  BranchMaintenance):
        missing = set(model.model_fields) - documented
        assert not missing, f"docs/dagster.md's lake.yaml reference lacks {model.__name__} {sorted(missing)}"


def test_component_block_names_the_component() -> None:
    [component] = [yaml.safe_load(b) for b in _yaml_blocks() if b.startswith("type:")]
    module, _, name = component["type"].rpartition(".")
    assert hasattr(importlib.import_module(module), name) and component["attributes"] == {"config_file": "lake.yaml"}
