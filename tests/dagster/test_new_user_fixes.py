"""What a new user hit: summed job durations, the ingest description, the CLI in docs/dagster.md."""

from __future__ import annotations

from pathlib import Path

from lake_assets.defs.assets.metadata import merge_summaries

REPO = Path(__file__).resolve().parents[2]


def test_summed_durations_have_no_float_noise() -> None:
    merged = merge_summaries([{"duration_s": 17.557}, {"duration_s": 17.558}, {"duration_s": 17.558}])
    assert merged["duration_s"] == 52.673 and repr(merged["duration_s"]) == "52.673"


def test_docs_launch_jobs_through_the_workspace() -> None:
    # `dagster job launch -m ...` names a location the running `make dagster` does not have
    text = (REPO / "docs" / "dagster.md").read_text()
    assert "dagster job launch -m" not in text
    assert "dagster job launch -w workspace.yaml" in text


def test_ingest_materialized_outside_its_job_is_tagged_and_described(tmp_path: Path, in_process_jobs: list[str]
                                                                      ) -> None:
    import dagster as dg

    from lake_assets.defs.config import load_config
    from lake_assets.defs.factory import build_definitions
    from tests.dagster.helpers import DAYS, write_lake

    defs = build_definitions(load_config(write_lake(tmp_path)))
    asset = next(a for a in defs.assets if dg.AssetKey(["db", "events_ingest"]) in a.keys)
    description = asset.descriptions_by_key[dg.AssetKey(["db", "events_ingest"])]
    assert "`day=<day>`" in description  # Markdown shows <day> only inside code
    with dg.instance_for_test() as instance:
        # as the UI's Materialize button or `dagster asset materialize` do: no job, no job tags
        result = dg.materialize([asset], partition_key=DAYS[0], instance=instance, resources=defs.resources)
        assert result.success
        tags = instance.get_run_by_id(result.run_id).tags
    assert tags["lake/table"] == "db.events" and tags["lake/job"] == "ingest"
    assert in_process_jobs == ["ingest"]  # in-process: in_process_jobs.py


def test_docs_cli_examples_name_assets_and_jobs_of_the_repo_lake_yaml() -> None:
    """`--select` and `-j` of docs/dagster.md's commands exist in the repo's code location (one named
    airline/flights_partition_expiry, which a table without partition.expiration-time does not have)."""
    import re

    from lake_assets.defs.config import load_config
    from lake_assets.defs.factory import build_definitions

    text = (REPO / "docs" / "dagster.md").read_text().replace("\\\n", " ")
    selections = set(re.findall(r"--select ([\w/]+)", text))
    jobs = set(re.findall(r" -j (\S+)", text))
    assert "airline/flights_ingest" in selections and jobs
    defs = build_definitions(load_config(REPO / "lake.yaml"))
    keys = {k.to_user_string() for a in defs.assets or [] for k in a.keys}  # type: ignore[union-attr]
    assert selections - keys == set()
    for job in jobs:
        defs.resolve_job_def(job)


def test_declared_options_compare_as_paimon_reads_them() -> None:
    """An option lake.yaml declares matches the table's when Paimon reads the same value: another
    spelling of the number or duration, or the key's older spelling (a fallback key) on either side."""
    from lake_assets.defs.declaration import option_differences

    assert option_differences({"bucket": "04", "snapshot.time-retained": "1h"},
                              {"bucket": "4", "snapshot.time-retained": "60 min"}) == []
    assert option_differences({"ignore-delete": "true"}, {"partial-update.ignore-delete": "true"}) == []
    assert option_differences({"partial-update.ignore-delete": "true"}, {"ignore-delete": "true"}) == []
    assert option_differences({"ignore-delete": "true"}, {}) == [
        "option ignore-delete: lake.yaml declares 'true', the table does not set it (so false, Paimon's default)"]
    assert option_differences({"bucket": "4"}, {"bucket": "2"}) == [
        "option bucket: lake.yaml declares '4', the table has '2'"]


def test_loading_the_code_location_prints_no_beta_warnings() -> None:
    """Every step's process loads the code location: Dagster's beta warnings for the features the
    factory uses (code references, single-run backfills) printed some 200 lines per run."""
    import warnings

    import dagster as dg

    from lake_assets.defs.config import load_config
    from lake_assets.defs.factory import build_definitions

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        build_definitions(load_config(REPO / "lake.yaml"))
    assert not [w for w in caught if issubclass(w.category, dg.BetaWarning)]
