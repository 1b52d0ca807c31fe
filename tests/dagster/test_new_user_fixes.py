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

