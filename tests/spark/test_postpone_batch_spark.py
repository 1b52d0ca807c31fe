"""Spark batch writes of postpone tables into real buckets (``postpone.batch-write-fixed-bucket``
true or unset, Paimon's default; spark/postpone_routing.py): every batch path (``write_table``,
``df.write.format("lake")`` of unrouted input) writes each partition with its planned count -
the count its files record, else ``postpone.default-bucket-num``, else an estimate on the batch -
and pypaimon 2.1 and pypaimon-rust read what we read. ``false`` still postpones."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog, Table
from lake_assets.spark import write_table
from lake_assets.table_support import Op
from tests.interop.paimon import Pypaimon, PypaimonRust, canonical, missing

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                    ("v", pa.string())])


def rows(ks: range | list[int], dt: str, tag: str) -> pa.Table:
    ks = list(ks)
    return pa.table({"k": ks, "dt": [dt] * len(ks), "v": [f"{tag}{k}" for k in ks]}, schema=SCHEMA)


def make(wh: str, **options: str) -> Table:
    cat = Catalog(wh)
    cat.create_database("db")
    return cat.create_table("db.p", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                            options={"bucket": "-2", **options})


def counts(t: Table) -> dict[str, set[int]]:
    """totalBuckets of the live files per partition (real buckets), and -2 for postponed files."""
    t = t.refresh()
    scan = t.store.file_store_scan(Op.COMPACT)
    out: dict[str, set[int]] = {}
    for e in scan.live_entries(t.store.snapshot_manager.latest()):
        out.setdefault(scan.partition_values(e.partition)[0], set()).add(e.total_buckets)
    return out


def live(t: Table) -> list:
    t = t.refresh()
    return list(t.store.file_store_scan(Op.COMPACT).live_entries(t.store.snapshot_manager.latest()))


def values(t: Table) -> dict[tuple[int, str], str]:
    return {(r["k"], r["dt"]): r["v"] for r in t.refresh().to_arrow().to_pylist()}


@pytest.fixture(scope="module")
def readers() -> tuple[Pypaimon, PypaimonRust] | None:
    py, rust = Pypaimon(), PypaimonRust()
    return (py, rust) if py.available() and rust.available() else None


def read_alike(wh: str, t: Table, readers: tuple[Pypaimon, PypaimonRust] | None) -> None:
    """pypaimon 2.1 and pypaimon-rust read the table as we do (skipped without the paimon venv)."""
    if readers is None:
        missing("pypaimon / pypaimon-rust venv missing (make venv-paimon)")
    py, rust = readers
    ours = canonical(t.refresh().to_arrow(), ["dt", "k"])
    assert canonical(py.read(wh, "db.p").select(SCHEMA.names), ["dt", "k"]) == ours
    assert sorted(rust.read_rows(wh, "db.p"), key=lambda r: (r["dt"], r["k"])) == ours


def test_write_table_plans_counts_existing_keep_new_estimated(spark, tmp_path, readers) -> None:
    wh = str(tmp_path / "wh")
    t = make(wh, **{"postpone.target-row-num-per-bucket": "10"})
    t.write_arrow(rows(range(20), "d1", "a"))  # the core postpones; the compaction gives d1 2 buckets
    t.compact()
    assert counts(t) == {"d1": {2}}
    before = {e.file.file_name for e in live(t)}
    # d1 keeps its 2 buckets (50 rows are well within 32 x 2 buckets); new d2: 25 rows of 10 per
    # bucket -> 3, rounded up to a power of two as Paimon HEAD's decideFixedBucketNum -> 4
    data = pa.concat_tables([rows(range(10, 60), "d1", "b"), rows(range(25), "d2", "b")])
    write_table(spark.createDataFrame(data.to_pandas()).repartition(3), wh, "db.p")
    assert counts(t) == {"d1": {2}, "d2": {4}}
    got = values(t)  # visible at once, no compaction
    assert got == {**{(k, "d1"): "a" + str(k) for k in range(10)}, **{(k, "d1"): f"b{k}" for k in range(10, 60)},
                   **{(k, "d2"): f"b{k}" for k in range(25)}}
    # one writer per bucket: each bucket got one level-0 file
    new = [e for e in live(t) if e.file.file_name not in before]
    assert all(e.file.level == 0 for e in new)  # write-only, as Paimon's fixed-bucket batch sink
    assert len(new) == len({(e.partition, e.bucket) for e in new}) == 6
    read_alike(wh, t, readers)


def test_write_table_with_default_bucket_num_runs_no_statistics(spark, tmp_path, readers) -> None:
    wh = str(tmp_path / "wh")
    t = make(wh, **{"postpone.default-bucket-num": "4"})
    write_table(spark.createDataFrame(rows(range(30), "d1", "a").to_pandas()), wh, "db.p")
    assert counts(t) == {"d1": {4}}
    assert len(values(t)) == 30
    read_alike(wh, t, readers)


def test_unrouted_df_write_stages_new_partitions_then_plans_them(spark, tmp_path, readers) -> None:
    """df.write of unrouted input: the driver saw no rows, so new partitions without a default are
    staged by the tasks and planned at the commit on the whole batch."""
    wh = str(tmp_path / "wh")
    t = make(wh, **{"postpone.target-row-num-per-bucket": "8"})
    data = pa.concat_tables([rows(range(20), "d1", "a"), rows(range(5), "d2", "a")])
    df = spark.createDataFrame(data.to_pandas()).repartition(3)
    df.write.format("lake").mode("append").option("warehouse", wh).save("db.p")
    assert counts(t) == {"d1": {4}, "d2": {1}}  # ceil(20 / 8) = 3 -> 4, ceil(5 / 8)
    assert len(t.refresh().snapshots()) == 1
    assert values(t) == {(k, dt): f"a{k}" for dt, n in (("d1", 20), ("d2", 5)) for k in range(n)}
    assert list((tmp_path / "wh").rglob("bucket-postpone/*")) == []  # the staged files are gone
    # a second unrouted write keeps the recorded counts (planned on the driver, nothing staged)
    df2 = spark.createDataFrame(rows(range(10, 30), "d1", "b").to_pandas()).repartition(2)
    df2.write.format("lake").mode("append").option("warehouse", wh).save("db.p")
    assert counts(t) == {"d1": {4}, "d2": {1}}
    assert values(t)[(15, "d1")] == "b15" and values(t)[(5, "d1")] == "a5"
    read_alike(wh, t, readers)


def test_key_postponed_then_batch_written_reads_as_paimon(spark, tmp_path, readers) -> None:
    """Before the compaction everyone reads the batch write (postponed rows are not visible); the
    postpone compaction then replays the postponed rows after the buckets' rows, so the postponed
    values supersede the later batch write, as Paimon's PostponeBucketTableITCase
    .testWritePostponeBucketThenWriteFixedBucket asserts for Java's compaction."""
    wh = str(tmp_path / "wh")
    t = make(wh)
    t.write_arrow(rows(range(1, 9), "d1", "a"))
    write_table(spark.createDataFrame(rows(range(1, 17), "d1", "B").to_pandas()), wh, "db.p")
    assert values(t) == {(k, "d1"): f"B{k}" for k in range(1, 17)}
    read_alike(wh, t, readers)
    t.refresh().compact()
    assert values(t) == {(k, "d1"): (f"a{k}" if k <= 8 else f"B{k}") for k in range(1, 17)}
    read_alike(wh, t, readers)


def test_option_false_still_postpones(spark, tmp_path) -> None:
    wh = str(tmp_path / "wh")
    t = make(wh, **{"postpone.batch-write-fixed-bucket": "false", "postpone.default-bucket-num": "2"})
    df = spark.createDataFrame(rows(range(10), "d1", "a").to_pandas())
    write_table(df, wh, "db.p")
    df.write.format("lake").mode("append").option("warehouse", wh).save("db.p")
    assert counts(t) == {"d1": {-2}} and values(t) == {}
    t.refresh().compact()
    assert counts(t) == {"d1": {2}} and len(values(t)) == 10


def test_ingest_job_partition_sources_land_in_real_buckets(capsys, spark, tmp_path, readers) -> None:
    """The ingest job (write_table per --partition-source, with --overwrite) writes each day into
    real buckets of its planned count; a re-run replaces the day with the count its new batch
    gets, as Paimon HEAD's overwrite (the replaced layout does not bind)."""
    import pyarrow.parquet as pq

    from lake_assets.spark.jobs import ingest
    from lake_assets.spark.jobs.errors import EXIT_OK
    from tests.spark.test_jobs_common import run_job_main

    wh = str(tmp_path / "wh")
    t = make(wh, **{"postpone.target-row-num-per-bucket": "4"})
    for day, n in (("d1", 10), ("d2", 3)):
        (tmp_path / day).mkdir()
        pq.write_table(rows(range(n), day, "a"), tmp_path / day / "part.parquet")
    args = ["--warehouse", wh, "--table", "db.p", "--format", "parquet", "--overwrite"]
    for day in ("d1", "d2"):
        args += ["--partition-source", f"dt={day}", str(tmp_path / day / "*.parquet")]
    code, out = run_job_main(capsys, ingest.main, *args)
    assert code == EXIT_OK, out
    assert counts(t) == {"d1": {4}, "d2": {1}}  # ceil(10 / 4) = 3 -> 4, ceil(3 / 4)
    assert len(values(t)) == 13
    pq.write_table(rows(range(2), "d1", "b"), tmp_path / "d1" / "part.parquet")
    code, out = run_job_main(capsys, ingest.main, "--warehouse", wh, "--table", "db.p", "--format", "parquet",
                             "--overwrite", "--partition", "dt=d1", "--source", str(tmp_path / "d1" / "*.parquet"))
    assert code == EXIT_OK, out
    assert counts(t) == {"d1": {1}, "d2": {1}}  # 2 rows: one bucket
    assert values(t) == {(0, "d1"): "b0", (1, "d1"): "b1", **{(k, "d2"): f"a{k}" for k in range(3)}}
    read_alike(wh, t, readers)


def test_keys_the_jvm_cannot_hash_route_through_the_counted_udf(spark, tmp_path) -> None:
    """A DOUBLE key has no JVM bucket expression: the per-row count goes to the Arrow UDF, which
    must give every row the bucket the writer gives it (one file per bucket)."""
    wh = str(tmp_path / "wh")
    cat = Catalog(wh)
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.float64(), nullable=False), pa.field("dt", pa.string(), nullable=False)])
    t = cat.create_table("db.d", schema, primary_keys=["k", "dt"], partition_keys=["dt"],
                         options={"bucket": "-2", "postpone.target-row-num-per-bucket": "5"})
    data = pa.table({"k": [k + 0.5 for k in range(30)], "dt": ["d1"] * 20 + ["d2"] * 10}, schema=schema)
    write_table(spark.createDataFrame(data.to_pandas()).repartition(3), wh, "db.d")
    entries = live(t)
    assert {e.total_buckets for e in entries} == {4, 2}
    assert len(entries) == len({(e.partition, e.bucket) for e in entries}) == 6
    assert t.refresh().to_arrow().num_rows == 30


def test_write_table_overwrite_gives_replaced_partitions_the_batchs_count(spark, tmp_path, readers) -> None:
    """Paimon HEAD's SparkPostponeStagedCommitter decides an overwritten partition as a new one
    (postpone.default-bucket-num, else the estimate on the batch), not with its recorded count."""
    wh = str(tmp_path / "wh")
    t = make(wh, **{"postpone.target-row-num-per-bucket": "10"})
    write_table(spark.createDataFrame(rows(range(40), "d1", "a").to_pandas()).repartition(2), wh, "db.p")
    t.write_arrow(rows([100], "d1", "p"))  # waits in bucket-postpone; the overwrite drops it too
    assert counts(t) == {"d1": {4, -2}}
    write_table(spark.createDataFrame(rows(range(5), "d1", "b").to_pandas()).repartition(2), wh, "db.p",
                mode="overwrite", dynamic=True)
    assert counts(t) == {"d1": {1}}
    assert values(t) == {(k, "d1"): f"b{k}" for k in range(5)}
    # with a default count, the default, exactly
    t.update_schema().set_option("postpone.default-bucket-num", "3").commit()
    df = spark.createDataFrame(rows(range(7), "d1", "c").to_pandas())
    df.write.format("lake").mode("overwrite").option("warehouse", wh).option("partitionOverwriteMode", "dynamic") \
        .save("db.p")
    assert counts(t) == {"d1": {3}}
    assert values(t) == {(k, "d1"): f"c{k}" for k in range(7)}
    read_alike(wh, t, readers)


def test_a_write_option_overrides_batch_write_fixed_bucket(spark, tmp_path) -> None:
    """As Paimon's Spark connector (write options over spark.paimon.* conf over the table's
    options): false postpones the rows, true writes real buckets, whatever the table says."""
    wh = str(tmp_path / "wh")
    t = make(wh, **{"postpone.default-bucket-num": "2"})
    df = spark.createDataFrame(rows(range(10), "d1", "a").to_pandas())
    key = "postpone.batch-write-fixed-bucket"
    df.write.format("lake").mode("append").option("warehouse", wh).option(key, "false").save("db.p")
    write_table(df, wh, "db.p", options={key: "false"})
    assert counts(t) == {"d1": {-2}} and values(t) == {}
    t.update_schema().set_option(key, "false").commit()
    df2 = spark.createDataFrame(rows(range(10, 20), "d2", "b").to_pandas())
    df2.write.format("lake").mode("append").option("warehouse", wh).option(key, "true").save("db.p")
    assert counts(t) == {"d1": {-2}, "d2": {2}} and len(values(t)) == 10
    write_table(spark.createDataFrame(rows(range(5), "d3", "c").to_pandas()), wh, "db.p", options={key: "TRUE"})
    assert counts(t)["d3"] == {2}
    with pytest.raises(Exception, match=r"postpone\.batch-write-fixed-bucket.*'perhaps'"):
        df.write.format("lake").mode("append").option("warehouse", wh).option(key, "perhaps").save("db.p")
    from lake_assets.errors import InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match="bucket-num"):
        write_table(df, wh, "db.p", options={"bucket-num": "2"})


def test_spark_paimon_conf_overrides_the_table_below_the_write_option(spark, tmp_path) -> None:
    wh = str(tmp_path / "wh")
    t = make(wh, **{"postpone.default-bucket-num": "2"})
    key = "postpone.batch-write-fixed-bucket"
    spark.conf.set("spark.paimon." + key, "false")
    try:
        write_table(spark.createDataFrame(rows(range(4), "d1", "a").to_pandas()), wh, "db.p")
        assert counts(t) == {"d1": {-2}}
        write_table(spark.createDataFrame(rows(range(4), "d2", "a").to_pandas()), wh, "db.p",
                    options={key: "true"})
        assert counts(t) == {"d1": {-2}, "d2": {2}}
        # HEAD's table-scoped form spark.paimon.<catalog>.<db>.<table>.<key> wins over the global
        # one for its table only (catalog: "lake" or *), below the write option
        spark.conf.set(f"spark.paimon.*.db.p.{key}", "true")
        spark.conf.set(f"spark.paimon.lake.db.other.{key}", "false")
        write_table(spark.createDataFrame(rows(range(4), "d3", "a").to_pandas()), wh, "db.p")
        assert counts(t)["d3"] == {2}
        write_table(spark.createDataFrame(rows(range(4), "d4", "a").to_pandas()), wh, "db.p",
                    options={key: "false"})
        assert counts(t)["d4"] == {-2}
    finally:
        for k in (key, f"*.db.p.{key}", f"lake.db.other.{key}"):
            spark.conf.unset("spark.paimon." + k)


def test_table_scoped_conf_keys_follow_paimon_heads_shape_and_precedence() -> None:
    """OptionUtils.mergeSQLConfWithIdentifier: spark.paimon.<catalog>.<db>.<table>.<key> (each
    segment a name or *) over spark.paimon.<key>; our catalog segment is "lake" or *; the more
    specific of two matching scoped keys wins; other tables' and catalogs' keys do not apply."""
    from lake_assets.spark.postpone_routing import conf_write_options

    n, f = "postpone.default-bucket-num", "postpone.batch-write-fixed-bucket"
    conf = {f"spark.paimon.{n}": "1", f"spark.paimon.*.*.*.{n}": "2", f"spark.paimon.lake.db.*.{n}": "3",
            f"spark.paimon.*.db.p.{n}": "4", f"spark.paimon.lake.db.q.{f}": "false",
            f"spark.paimon.paimon.db.p.{f}": "false", f"spark.paimon.{f}": "true", "spark.sql.x": "y"}
    assert conf_write_options(conf, "db.p") == {n: "3", f: "true"}
    assert conf_write_options({k: v for k, v in conf.items() if "lake.db.*" not in k}, "db.p") == {n: "4", f: "true"}
    assert conf_write_options(conf, "db.q") == {n: "3", f: "false"}
    assert conf_write_options(conf, "other.t") == {n: "2", f: "true"}
    assert conf_write_options(conf) == {n: "1", f: "true"}


def test_ingest_job_write_option(capsys, spark, tmp_path) -> None:
    import pyarrow.parquet as pq

    from lake_assets.spark.jobs import ingest
    from lake_assets.spark.jobs.errors import EXIT_OK
    from tests.spark.test_jobs_common import run_job_main

    wh = str(tmp_path / "wh")
    t = make(wh, **{"postpone.default-bucket-num": "2"})
    pq.write_table(rows(range(6), "d1", "a"), tmp_path / "in.parquet")
    base = ["--warehouse", wh, "--table", "db.p", "--format", "parquet", "--source", str(tmp_path / "in.parquet")]
    code, out = run_job_main(capsys, ingest.main, *base, "--write-option", "postpone.batch-write-fixed-bucket=false")
    assert code == EXIT_OK, out
    assert counts(t) == {"d1": {-2}}
    code, out = run_job_main(capsys, ingest.main, *base, "--write-option", "postpone.default-bucket-num=4",
                             "--overwrite")
    assert code == EXIT_OK, out
    assert counts(t) == {"d1": {4}} and len(values(t)) == 6


def test_a_batch_that_outgrows_a_partition_rescales_it_routed_or_not(spark, tmp_path) -> None:
    """Where Paimon HEAD rescales (a batch needing more than rescale-load-factor x a partition's
    buckets), the partition is rescaled first (an OVERWRITE snapshot) and the batch lands in the
    new count: write_table measures the batch on the driver (no default count) and rescales before
    writing; df.write of unrouted input writes into the recorded count, and its commit rescales and
    replays the written rows into the new count (the old files gone)."""
    from lake_assets.spec.snapshot import CommitKind

    wh = str(tmp_path / "wh")
    t = make(wh, **{"postpone.target-row-num-per-bucket": "1",
                    "postpone.batch-write-fixed-bucket.rescale-load-factor": "4"})
    write_table(spark.createDataFrame(pa.concat_tables([rows(range(2), "d1", "a"), rows(range(2), "d2", "a")])
                                      .to_pandas()), wh, "db.p")
    assert counts(t) == {"d1": {2}, "d2": {2}}  # 40 rows then need 40 > 4 x 2 buckets: 64
    for dt, routed in (("d1", True), ("d2", False)):
        before = t.refresh().snapshot_manager.latest_id()
        df = spark.createDataFrame(rows(range(1, 41), dt, "b").to_pandas()).repartition(3)
        if routed:
            write_table(df, wh, "db.p")
        else:
            df.write.format("lake").mode("append").option("warehouse", wh).save("db.p")
        sm = t.refresh().snapshot_manager
        assert [sm.snapshot(i).commit_kind for i in range(before + 1, sm.latest_id() + 1)] == [
            CommitKind.OVERWRITE, CommitKind.APPEND], dt
        assert counts(t)[dt] == {64}
        assert {k: v for k, v in values(t).items() if k[1] == dt} == {
            (0, dt): "a0", **{(k, dt): f"b{k}" for k in range(1, 41)}}
    from lake_assets.ops.orphans import referenced_files

    # no file left that no snapshot references (the unrouted tasks' files were replayed, then deleted)
    referenced = {f.rsplit("/", 1)[-1] for f in referenced_files(t.refresh().store)}
    assert {p.name for p in (tmp_path / "wh").rglob("data-*")} <= referenced


def test_partition_sink_strategy_hash_clusters_postponed_writes_by_partition(spark, tmp_path) -> None:
    """``partition.sink-strategy`` (Paimon's Spark write requirement): hash gives each partition
    one writer task, so one postponed file per partition; none leaves the rows where they are
    (here every one of 4 tasks writes every partition)."""
    import pandas as pd

    data = pd.concat([rows(range(40), dt, "a").to_pandas() for dt in ("d1", "d2", "d3")])
    files: dict[str, int] = {}
    for strategy in ("none", "hash"):
        wh = str(tmp_path / strategy)
        t = make(wh, **{"postpone.batch-write-fixed-bucket": "false", "partition.sink-strategy": strategy})
        write_table(spark.createDataFrame(data).repartition(4), wh, "db.p")
        per_partition: dict[bytes, int] = {}
        for e in live(t):
            per_partition[e.partition] = per_partition.get(e.partition, 0) + 1
        assert len(per_partition) == 3 and len(values(t.refresh())) == 0
        files[strategy] = max(per_partition.values())
    assert files == {"none": 4, "hash": 1}
