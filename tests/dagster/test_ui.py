"""The Dagster UI on loopback, seen through headless Chromium: the table's asset graph, the
health metadata of a compaction's materialization page, and the compact job's own check.
Screenshots go to tests/dagster/artifacts/.

Skips only when no Chromium is installed and ``apt-get install chromium`` cannot install one.
Every wait is bounded and the webserver and browser process groups are killed in ``finally``.
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from tests.dagster.browser import Browser, find_chromium, kill_group
from tests.dagster.helpers import REPO
from tests.interop.paimon import missing

ARTIFACTS = Path(__file__).parent / "artifacts"
pytestmark = pytest.mark.timeout(420)


@pytest.fixture(scope="module")
def chromium() -> str:
    found = find_chromium()
    if found is None and shutil.which("apt-get") and os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], capture_output=True, timeout=600)
        found = find_chromium()
    if found is None:
        missing("chromium is not installed (`make browser`) and apt-get could not install it")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def webserver(dagster_home: Path, lake_path: Path, ingested, compacted, tmp_path_factory) -> Iterator[str]:
    """`dagster-webserver -w workspace.yaml` on the test instance (which holds the materializations)."""
    port = _free_port()
    log = tmp_path_factory.mktemp("webserver") / "webserver.log"
    env = {**os.environ, "DAGSTER_HOME": str(dagster_home), "LAKE_CONFIG": str(lake_path)}
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(Path(sys.executable).parent / "dagster-webserver"), "-w", "workspace.yaml", "-h", "127.0.0.1",
             "-p", str(port)],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/server_info", timeout=5):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"dagster-webserver did not come up:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield url
    finally:
        kill_group(process)


@pytest.fixture
def browser(chromium: str) -> Iterator[Browser]:
    b = Browser(chromium)
    try:
        yield b
    finally:
        b.close()


def _dismiss_welcome(browser: Browser) -> None:
    """The first visit shows a community dialog over the page."""
    if browser.click_text("Skip"):
        time.sleep(0.5)


def test_asset_graph_shows_the_table_assets(webserver: str, browser: Browser) -> None:
    browser.open(f"{webserver}/locations/lake_assets/asset-groups/db_orders")
    text = browser.wait_for_text("orders_ingest", "orders_compaction", "orders_expiry", "orders_orphans",
                                 "orders_changelog", timeout=120)
    browser.wait_for_text("ago", timeout=60)  # node status loaded (materialized ... ago)
    assert "events_ingest" not in text  # another table, another group
    _dismiss_welcome(browser)
    assert browser.screenshot(ARTIFACTS / "asset_graph.png").stat().st_size > 10_000


def test_materialization_page_shows_health_metadata(webserver: str, browser: Browser) -> None:
    browser.open(f"{webserver}/assets/db/orders_compaction?view=events")
    browser.wait_for_text("Metadata", "small_files_before", "small_files_after", "COMPACT", "file_sizes",
                          timeout=120)
    # the per-bucket health table
    text = browser.wait_for_text("health", "small_file_count", "sorted_runs", "size_amplification_percent",
                                 "compaction_would_trigger", "dt=2024-01-01", timeout=30)
    assert "table_path" in text and "snapshot_id" in text
    _dismiss_welcome(browser)
    browser.scroll_to_text("small_files_before")
    time.sleep(0.5)
    assert browser.screenshot(ARTIFACTS / "compaction_materialization.png").stat().st_size > 10_000


@pytest.fixture(scope="module")
def observed(lake_defs, instance, compacted) -> None:
    """Three ticks of the health sensor on the shared instance, stored as the sensor daemon stores
    them (observations of db/orders_compaction and its checks' evaluations)."""
    from lake_assets.defs.observations import HEALTH_SENSOR

    sensor = lake_defs.resolve_sensor_def(HEALTH_SENSOR)
    for _ in range(3):
        with dg.build_sensor_context(instance=instance, resources=lake_defs.resources) as context:
            tick = sensor.evaluate_tick(context)
        assert tick.asset_events
        for event in tick.asset_events:
            instance.report_runless_asset_event(event)
        time.sleep(1.1)  # distinct timestamps: three points on the plot


def test_asset_page_shows_and_plots_the_tables_health(observed, webserver: str, browser: Browser) -> None:
    # The events tab lists the observations with the health metadata...
    browser.open(f"{webserver}/assets/db/orders_compaction?view=events")
    browser.wait_for_text("Observed", "max_sorted_runs", timeout=120)
    _dismiss_welcome(browser)
    time.sleep(1)
    assert browser.screenshot(ARTIFACTS / "health_events.png").stat().st_size > 10_000
    # ...and the overview's metadata section has a Plots toggle drawing every numeric key over them.
    browser.open(f"{webserver}/assets/db/orders_compaction?view=overview")
    browser.wait_for_text("Plots", timeout=120)
    assert browser.click_text("Plots")
    browser.wait_for_text("small_files", "max_sorted_runs", "max_size_amplification_percent",
                          "snapshots_retained", "oldest_snapshot_age_s", "max_consumer_lag", timeout=120)
    canvases = "document.querySelectorAll('canvas').length"
    deadline = time.monotonic() + 60
    while browser.call("Runtime.evaluate", expression=canvases, returnByValue=True)["result"]["value"] < 1:
        assert time.monotonic() < deadline, "no plot was drawn"
        time.sleep(0.5)
    _dismiss_welcome(browser)
    browser.scroll_to_text("Plots")
    time.sleep(2)
    assert browser.screenshot(ARTIFACTS / "health_plots.png").stat().st_size > 10_000
    # The checks tab: the checks were evaluated with the observation (the current state).
    browser.open(f"{webserver}/assets/db/orders_compaction?view=checks")
    browser.wait_for_text("small_files", "level0_age", timeout=120)
    time.sleep(1)
    assert browser.screenshot(ARTIFACTS / "health_checks.png").stat().st_size > 10_000


def test_checks_tab_shows_the_compact_jobs_own_check(webserver: str, browser: Browser) -> None:
    """The check the compact job reported through Pipes on the compaction's run (conftest's
    ``compacted``), with the metadata the job sent."""
    browser.open(f"{webserver}/assets/db/orders_compaction?view=checks")
    browser.wait_for_text("compacted_small_files", timeout=120)
    _dismiss_welcome(browser)
    assert browser.click_text("compacted_small_files")
    browser.wait_for_text("small_file_threshold", "buckets_over", "postponed_files", timeout=120)
    # the fixture's run passed it; a later compaction of the shared instance with nothing to compact
    # (another test's) leaves the check's latest evaluation skipped, so look in its history
    assert browser.click_text("Execution history")
    browser.wait_for_text("Passed", timeout=120)
    for _ in range(10):  # the community dialog may come back over the page a moment later
        time.sleep(0.5)
        if "Join the Dagster community" in browser.text():
            _dismiss_welcome(browser)
    assert "Join the Dagster community" not in browser.text()
    assert browser.screenshot(ARTIFACTS / "compaction_job_check.png").stat().st_size > 10_000
