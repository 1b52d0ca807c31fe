"""`LakeTablesComponent` through the real `dg` CLI (dagster-dg-cli, a dev dependency): a dg project
scaffolds the component with `dg scaffold defs`, `dg check defs` loads it, `dg list defs` lists its
definitions, and a broken lake.yaml fails `dg check defs` with lake.yaml's own message.

Each command runs `dg` in a subprocess on a minimal dg project in a temp folder (what
`create-dagster project` lays out, without its uv environment: dg uses the active Python, whose
path holds this repo and the project's `src`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.dagster.helpers import REPO

TYPE = "lake_assets.defs.component.LakeTablesComponent"
DG = Path(sys.executable).parent / "dg"


def _dg(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert DG.exists(), f"{DG} is missing: dagster-dg-cli is a dev dependency (pip install -e '.[dev]')"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(project / "src"), str(REPO)]),
           "PATH": f"{DG.parent}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}
    env.pop("DAGSTER_HOME", None)  # dg needs no instance; the session's would only add its warnings
    return subprocess.run([str(DG), *args], cwd=project, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dg project (`[tool.dg]` in pyproject.toml, definitions loaded from its defs folder)."""
    root = tmp_path_factory.mktemp("dg") / "lakeproj"
    package = root / "src" / "lakeproj"
    (package / "defs").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "defs" / "__init__.py").write_text("")
    (package / "definitions.py").write_text(textwrap.dedent("""\
        from pathlib import Path

        import dagster as dg


        @dg.definitions
        def defs() -> dg.Definitions:
            return dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
        """))
    (root / "pyproject.toml").write_text(textwrap.dedent("""\
        [project]
        name = "lakeproj"
        version = "0.1.0"
        requires-python = ">=3.11"
        dependencies = ["dagster", "lake_assets[dagster]"]

        [tool.dg]
        directory_type = "project"

        [tool.dg.project]
        root_module = "lakeproj"
        registry_modules = ["lake_assets.defs.component"]
        """))
    return root


@pytest.fixture(scope="module")
def scaffolded(project: Path) -> Path:
    done = _dg(project, "scaffold", "defs", TYPE, "tables")
    assert done.returncode == 0, done.stdout + done.stderr
    return project / "src" / "lakeproj" / "defs" / "tables"


def test_scaffold_writes_defs_yaml_and_a_starter_lake_yaml(scaffolded: Path) -> None:
    assert yaml.safe_load((scaffolded / "defs.yaml").read_text()) == {
        "type": TYPE, "attributes": {"config_file": "lake.yaml"}}
    starter = yaml.safe_load((scaffolded / "lake.yaml").read_text())
    assert [t["identifier"] for t in starter["tables"]] == ["db.events"]


def test_check_and_list_defs(project: Path, scaffolded: Path) -> None:
    checked = _dg(project, "check", "defs")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "All definitions loaded successfully" in checked.stdout + checked.stderr

    listed = _dg(project, "list", "defs", "--json")
    assert listed.returncode == 0, listed.stderr
    defs: dict[str, Any] = json.loads(listed.stdout)
    assert {a["asset_key"] for a in defs["assets"]} == {
        "db/events_ingest", "db/events_compaction", "db/events_expiry", "db/events_orphans"}
    compaction = next(a for a in defs["assets"] if a["asset_key"] == "db/events_compaction")
    assert compaction["dependency_keys"] == ["db/events_ingest"] and compaction["group_name"] == "db_events"
    assert {s["name"] for s in defs["sensors"]} == {
        "lake_small_file_sensor", "lake_automation_sensor", "lake_compaction_automation_sensor",
        "lake_health_sensor"}
    assert {r["name"] for r in defs["resources"]} >= {"warehouse", "spark", "lake_io_manager"}
    assert {c["name"] for c in defs["asset_checks"]} == {
        "small_files", "level0_age", "snapshot_retention", "orphan_bytes", "declaration",
        # the jobs' own checks (lake_assets.job_checks), declared on their assets
        "compacted_small_files", "retained_snapshots_readable", "orphans_older_than_bound"}


def test_check_defs_reports_a_bad_lake_yaml(project: Path, scaffolded: Path, tmp_path: Path) -> None:
    config = scaffolded / "lake.yaml"
    good = tmp_path / "lake.yaml"
    shutil.copy(config, good)
    data = yaml.safe_load(config.read_text())
    data["tables"][0]["ingest"]["format"] = "xml"
    config.write_text(yaml.safe_dump(data))
    try:
        checked = _dg(project, "check", "defs")
    finally:
        shutil.copy(good, config)
    assert checked.returncode != 0
    assert "tables[0] (db.events).ingest.format: Input should be 'parquet', 'csv' or 'json'" in (
        checked.stdout + checked.stderr)
