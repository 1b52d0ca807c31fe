"""The table factory as a Dagster Component: scaffolded as `dg scaffold defs` does, loaded from a
defs.yaml (a lake.yaml file or inline attributes) and from Python, with the same definitions as the
lake.yaml code location."""

from __future__ import annotations

import textwrap
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster.components.testing import create_defs_folder_sandbox

from lake_assets.defs.component import LakeTablesComponent
from lake_assets.defs.config import LakeConfigError, load_config
from lake_assets.defs.factory import build_definitions
from tests.dagster.helpers import write_lake

TYPE = "lake_assets.defs.component.LakeTablesComponent"


def _keys(defs: dg.Definitions) -> set[str]:
    return {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}


def _summary(defs: dg.Definitions) -> tuple:
    repo = defs.get_repository_def()
    return (_keys(defs), {s.name for s in repo.sensor_defs}, {s.name for s in repo.schedule_defs},
            {j.name for j in repo.get_all_jobs()} - {"__ASSET_JOB"})


def test_scaffold_writes_defs_yaml_and_a_starter_lake_yaml_that_loads() -> None:
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=LakeTablesComponent, defs_path="lake")
        assert yaml.safe_load((path / "defs.yaml").read_text()) == {
            "type": TYPE, "attributes": {"config_file": "lake.yaml"}}
        assert (path / "lake.yaml").exists()
        with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
            assert isinstance(component, LakeTablesComponent)
            assert {"db/events_ingest", "db/events_compaction", "db/events_expiry"} <= _keys(defs)
            warehouse = defs.resources["warehouse"]
            assert Path(warehouse.storage.path) == path / "warehouse"  # relative to the component


def test_config_file_gives_the_same_definitions_as_lake_yaml(tmp_path: Path) -> None:
    lake = write_lake(tmp_path / "lake")
    expected = _summary(build_definitions(load_config(lake)))
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=LakeTablesComponent, defs_path="tables",
                                          defs_yaml_contents={"type": TYPE, "attributes": {"config_file": str(lake)}})
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            assert _summary(defs) == expected
            dg.Definitions.validate_loadable(defs)


def test_inline_attributes_validate_like_lake_yaml(tmp_path: Path) -> None:
    lake = yaml.safe_load(write_lake(tmp_path / "lake").read_text())
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=LakeTablesComponent, defs_path="inline",
                                          defs_yaml_contents={"type": TYPE, "attributes": lake})
        with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
            assert component.tables[0]["identifier"] == "db.orders"
            assert {"db/orders_ingest", "db/orders_changelog", "db/events_orphans"} <= _keys(defs)
            assert Path(defs.resources["warehouse"].storage.path) == path / "warehouse"

        lake["tables"][0]["ingest"]["format"] = "xml"
        # Dagster wraps the error in its own: the LakeConfigError among the causes is checked
        with sandbox.swap_defs_file(path / "defs.yaml", {"type": TYPE, "attributes": lake}), \
                pytest.raises(Exception) as failed, sandbox.load_component_and_build_defs(defs_path=path):
            pass
        causes = []
        error: BaseException | None = failed.value
        while error is not None:
            causes.append(error)
            error = error.__cause__ or error.__context__
        [config_error] = [e for e in causes if isinstance(e, LakeConfigError)]
        assert "tables[0] (db.orders).ingest.format: Input should be 'parquet', 'csv' or 'json'" in str(config_error)


def test_python_interface(tmp_path: Path) -> None:
    lake = write_lake(tmp_path / "lake")
    with create_defs_folder_sandbox() as sandbox:
        folder = sandbox.defs_folder_path / "from_python"
        folder.mkdir()
        (folder / "component.py").write_text(textwrap.dedent(f"""
            import dagster as dg
            from lake_assets.defs.component import LakeTablesComponent

            @dg.component_instance
            def load(context: dg.ComponentLoadContext) -> LakeTablesComponent:
                return LakeTablesComponent(config_file={str(lake)!r})
        """))
        with sandbox.load_component_and_build_defs(defs_path=folder) as (component, defs):
            # the folder holds component.py, which holds the instance its function made
            [module] = component.children.values()
            [instance] = module.components.values()
            assert isinstance(instance, LakeTablesComponent)
            assert _summary(defs) == _summary(build_definitions(load_config(lake)))


def test_config_file_and_inline_keys_are_exclusive(tmp_path: Path) -> None:
    with pytest.raises(LakeConfigError, match=r"set config_file or the inline keys \['timezone'\], not both"):
        LakeTablesComponent(config_file="lake.yaml", timezone="UTC").lake_config(tmp_path)
    with pytest.raises(LakeConfigError, match=r"set config_file .* or the inline keys"):
        LakeTablesComponent().lake_config(tmp_path)
