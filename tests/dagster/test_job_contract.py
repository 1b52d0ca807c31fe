"""The arguments every asset builds parse with the Spark jobs' own parsers (no Spark started), so a
drift between the assets and the jobs' CLI shows here rather than as exit code 2 in production."""

import importlib
import re

import pytest

from lake_assets.defs.assets.changelog import changelog_args
from lake_assets.defs.assets.compaction import CompactionConfig, compact_args
from lake_assets.defs.assets.expiry import expire_args
from lake_assets.defs.assets.ingest import ingest_args
from lake_assets.defs.assets.orphans import orphans_args
from lake_assets.defs.config import LakeConfig
from lake_assets.defs.resources import LocalStorage, S3Storage, WarehouseResource
from lake_assets.defs.resources.pipes import CompletedJob
from lake_assets.defs.resources.spark import EXIT_CODES, job_failure
from lake_assets.exit_codes import EXIT_CODE_ADVICE


def _parse(job: str, args: list[str]):
    return importlib.import_module(f"lake_assets.spark.jobs.{job}").build_parser().parse_args(args)


@pytest.fixture
def base() -> list[str]:
    s3 = WarehouseResource(storage=S3Storage(url="s3://b/wh", endpoint_url="http://127.0.0.1:9000", region="x"))
    return s3.job_args("db.orders")


def test_ingest(lake_config: LakeConfig, base: list[str]) -> None:
    ns = _parse("ingest", base + ingest_args(lake_config.table("db.orders"), ["2024-01-02", "2024-01-03"]))
    assert ns.format == "parquet" and ns.overwrite and ns.source is None and not ns.partitions
    [(day2, src2), (day3, src3)] = ns.partition_sources  # one application, one commit per day
    assert (day2, day3) == ("dt=2024-01-02", "dt=2024-01-03")
    assert src2.endswith("landing/orders/2024-01-02/*.parquet") and src3.endswith("landing/orders/2024-01-03/*.parquet")
    assert dict(ns.storage_options) == {"endpoint_url": "http://127.0.0.1:9000",
                                        "client_kwargs": '{"region_name": "x"}'}
    csv = _parse("ingest", base + ingest_args(lake_config.table("db.events"), "2024-01-03"))
    assert csv.format == "csv" and [d for d, _ in csv.partition_sources] == ["day=2024-01-03"]


def test_compact(base: list[str]) -> None:
    config = CompactionConfig(full=True, partitions=["dt=2024-01-01", "dt=2024-01-02/region=eu%2Fw"], max_units=4)
    ns = _parse("compact", base + compact_args(config))
    assert ns.full and ns.max_units == 4
    assert ns.partitions == [(("dt", "2024-01-01"),), (("dt", "2024-01-02"), ("region", "eu/w"))]
    assert not _parse("compact", base + compact_args(CompactionConfig())).partitions


def test_expire(lake_config: LakeConfig, base: list[str]) -> None:
    ns = _parse("expire", base + expire_args(lake_config.table("db.orders").maintenance, dry_run=True))
    assert (ns.retain_min, ns.retain_max, ns.older_than, ns.dry_run) == (2, 5, 3_600_000, True)


def test_remove_orphans(lake_config: LakeConfig) -> None:
    base = WarehouseResource(storage=LocalStorage(path="/wh")).job_args("db.orders")
    policy = lake_config.table("db.orders").maintenance.orphans
    assert _parse("remove_orphans", base + orphans_args(policy, dry_run=True)).dry_run is True
    ns = _parse("remove_orphans", base + orphans_args(policy, dry_run=False))
    assert ns.dry_run is False and ns.older_than == 86_400_000


def test_changelog(lake_config: LakeConfig, base: list[str]) -> None:
    from lake_assets.spark.jobs.changelog import check_targets

    spec = lake_config.table("db.orders")
    ns = _parse("changelog", base + changelog_args(spec))
    assert ns.consumer_id == "dagster-db-orders" and ns.export_path.endswith("export/orders")
    check_targets(ns)
    # without an export target the job only produces the changelog: a consumer there was refused
    # (exit 2 on every run of the asset)
    bare = spec.model_copy(update={"maintenance": spec.maintenance.model_copy(
        update={"changelog": type(spec.maintenance.changelog)()})})
    ns = _parse("changelog", base + changelog_args(bare))
    assert ns.consumer_id is None and ns.export_path is None and ns.export_table is None
    check_targets(ns)


def test_exit_codes_are_the_jobs_own() -> None:
    """The resource explains every exit code the jobs return, with the jobs' meaning, and retries
    only a commit conflict: a code added to (or renumbered in) the jobs shows here."""
    import lake_assets.spark.jobs as jobs_package
    from lake_assets.spark.jobs import errors as job_errors

    job_codes = {name: value for name, value in vars(job_errors).items() if name.startswith("EXIT_")}
    assert set(job_codes.values()) == set(EXIT_CODES)
    assert len(job_codes) == len(EXIT_CODES)  # no two names for one code
    # the codes the jobs package documents are the same set
    documented = {int(c) for c in re.findall(r"^\* (\d+) —", jobs_package.__doc__ or "", re.MULTILINE)}
    assert documented == set(EXIT_CODES)
    for name, code in job_codes.items():
        failure = job_failure("compact", CompletedJob(code, "", []), {})
        assert f"exit code {code} ({EXIT_CODES[code]})" in (failure.description or ""), name
        if code:  # and what to do next, which the user could not tell from the code alone
            assert f". What to do: {EXIT_CODE_ADVICE[code]}." in (failure.description or ""), name
        assert failure.allow_retries == (code == job_errors.EXIT_CONFLICT), name
    assert set(EXIT_CODE_ADVICE) == set(EXIT_CODES) - {0}
