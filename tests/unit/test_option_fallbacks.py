"""Fallback keys (Paimon's ``withFallbackKeys``): declared on their option's registry row and read as
Java's ``Options.get`` reads them - the option's own key when set, else the first fallback key set -
by the typed accessors, validation and the per-operation refusals (docs/format.md §13)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import OptionError
from lake_assets.option_rules import FALLBACK_OF, RULES, carried_key, rule_for
from lake_assets.options import CoreOptions
from lake_assets.refusal import READS, Op
from lake_assets.spec.data_types import BigIntType, VarCharType
from lake_assets.spec.schema import DataField, TableSchema
from lake_assets.table_support import schema_refusals

from .paimon_option_names import CORE_OPTIONS, FLINK_CONNECTOR_OPTIONS

# Every withFallbackKeys of CoreOptions.java (release-0.9.0, -1.0.1, -1.1.1, -1.2.0, -1.3.2, master
# 5dacde51) and of the Flink connector's options: fallback key -> its option, in declared order.
JAVA_FALLBACKS: dict[str, str] = {
    "snapshot.expire.clean-empty-directories": "snapshot.clean-empty-directories",
    "first-row.ignore-delete": "ignore-delete",
    "deduplicate.ignore-delete": "ignore-delete",
    "partial-update.ignore-delete": "ignore-delete",
    "write.compaction-skip": "write-only",
    "compaction.early-max.file-num": "compaction.max.file-num",  # 0.9-1.0
    "log.scan": "scan.mode",
    "log.scan.timestamp-millis": "scan.timestamp-millis",
    "orc.write.batch-size": "write.batch-size",  # 1.0+
    "changelog-producer.lookup-wait": "lookup-wait",
    "delete-file.thread-num": "file-operation.thread-num",  # 1.3+
    "sink.clustering.by-columns": "clustering.columns",  # 1.3+
    "sink.clustering.strategy": "clustering.strategy",  # 1.3+
    "parquet.variant.shreddingSchema": "variant.shreddingSchema",  # HEAD
    "blob.stored-descriptor-fields": "blob-descriptor-field",  # HEAD
    # FlinkConnectorOptions
    "log.scan.remove-normalize": "scan.remove-normalize",
    "streaming-read.shuffle-bucket-with-partition": "read.shuffle-bucket-with-partition",
    "lookup.dynamic-partition": "scan.partitions",
    "changelog.precommit-compact": "precommit-compact",
}
# Fallback keys that are rows of their own: Flink's clustering keys (declared with their Flink
# meaning of 1.2 and older) and orc.write.batch-size (lake_assets' ORC writer honours it).
OWN_ROWS = {"sink.clustering.by-columns", "sink.clustering.strategy", "orc.write.batch-size"}


def _schema(options: dict[str, str]) -> TableSchema:
    fields = (DataField(0, "id", BigIntType(nullable=False)), DataField(1, "v", VarCharType(2147483647)))
    return TableSchema(0, fields, 1, (), ("id",), {"bucket": "2", **options})


def _blocked(options: dict[str, str]) -> frozenset[Op]:
    return frozenset(op for op in Op if any(r.blocks(op) for r in schema_refusals(_schema(options))))


def test_every_java_fallback_key_of_a_declared_option_is_declared_on_its_row() -> None:
    pinned = {**CORE_OPTIONS, **FLINK_CONNECTOR_OPTIONS}
    assert sorted({k for k, versions in pinned.items() if "fallback key" in versions} - JAVA_FALLBACKS.keys()) == []
    for fallback, primary in JAVA_FALLBACKS.items():
        if fallback in OWN_ROWS:
            assert fallback in RULES and FALLBACK_OF.get(fallback) is None
        elif primary in RULES:
            assert fallback in RULES[primary].fallback_keys and FALLBACK_OF[fallback] == primary
            rule = rule_for(fallback)
            assert rule is not None and rule.key == fallback and rule.fallback_of == primary
            assert (rule.kind, rule.choices, rule.supported, rule.refuses) == (
                RULES[primary].kind, RULES[primary].choices, RULES[primary].supported, RULES[primary].refuses)
        else:  # an option the registry does not declare: its fallback key is as unknown as it is
            assert rule_for(fallback) is None and rule_for(primary) is None
    assert RULES["ignore-delete"].fallback_keys == (
        "first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete")
    assert set(FALLBACK_OF) <= set(JAVA_FALLBACKS)


@pytest.mark.parametrize(("options", "expected"), [
    ({"write.compaction-skip": "true"}, True),
    ({"write.compaction-skip": "TRUE"}, True),
    ({"write-only": "false", "write.compaction-skip": "true"}, False),  # the key itself wins
    ({"write-only": "true", "write.compaction-skip": "false"}, True),
    ({}, False),
])
def test_write_only_reads_its_fallback_key(options: dict[str, str], expected: bool) -> None:
    assert CoreOptions(options).write_only is expected


def test_each_fallback_is_read_by_the_accessors() -> None:
    assert CoreOptions({"snapshot.expire.clean-empty-directories": "true"}).clean_empty_directories is True
    assert CoreOptions({"snapshot.clean-empty-directories": "false",
                        "snapshot.expire.clean-empty-directories": "true"}).clean_empty_directories is False
    for key in ("first-row.ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete"):
        assert CoreOptions({key: "true"}).ignore_delete is True
    opts = CoreOptions({"log.scan": "from-timestamp", "log.scan.timestamp-millis": "1700000000000"})
    assert opts._typed("scan.mode") == "from-timestamp" and opts._typed("scan.timestamp-millis") == 1700000000000
    assert carried_key(opts.raw, "scan.mode") == "log.scan" and carried_key({}, "scan.mode") is None
    # the first fallback key set wins over later ones, whatever their values
    assert carried_key({"partial-update.ignore-delete": "x", "first-row.ignore-delete": "y"},
                       "ignore-delete") == "first-row.ignore-delete"


def test_fallback_values_are_validated_naming_the_key(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])
    with pytest.raises(OptionError, match=r"'write\.compaction-skip': 'yes' is not 'true' or 'false'"):
        cat.create_table("db.a", schema, primary_keys=["id"], options={"bucket": "1", "write.compaction-skip": "yes"})
    with pytest.raises(OptionError, match=r"'log\.scan': 'sometimes' is not one of"):
        cat.create_table("db.b", schema, primary_keys=["id"], options={"bucket": "1", "log.scan": "sometimes"})
    with pytest.raises(OptionError, match=r"'log\.scan\.timestamp-millis': '-5' must be at least 0"):
        cat.create_table("db.c", schema, primary_keys=["id"],
                         options={"bucket": "1", "log.scan.timestamp-millis": "-5"})
    # a fallback key behind its option's own key is never read, as in Java: not validated either
    t = cat.create_table("db.d", schema, primary_keys=["id"],
                         options={"bucket": "1", "write-only": "true", "write.compaction-skip": "yes"})
    assert t.schema.core_options.write_only is True
    t = cat.create_table("db.e", schema, primary_keys=["id"], options={"bucket": "1", "write.compaction-skip": "true"})
    assert t.schema.core_options.write_only is True
    t.write_arrow(pa.table({"id": [1, 2], "v": ["a", "b"]}, schema=schema))
    t.write_arrow(pa.table({"id": [2, 3], "v": ["c", "d"]}, schema=schema))
    # write-only through its fallback key: the writes did not compact, every file stays at level 0
    files = t.store.file_store_scan().live_entries(t.latest_snapshot())
    assert len(files) == 2 and {e.file.level for e in files} == {0}
    with pytest.raises(OptionError, match=r"'snapshot\.expire\.clean-empty-directories': 'maybe'"):
        t.update_schema().set_option("snapshot.expire.clean-empty-directories", "maybe").commit()


def test_stored_fallback_keys_are_refused_as_their_option() -> None:
    """A table another engine wrote: a fallback key is known (no 'unknown option' refusal) and a
    start position or scan mode it stores refuses reads as its option's would, naming it."""
    assert _blocked({"write.compaction-skip": "true"}) == frozenset()
    assert _blocked({"snapshot.expire.clean-empty-directories": "true"}) == frozenset()
    assert _blocked({"log.scan": "latest-full"}) == frozenset()
    assert _blocked({"log.scan": "from-timestamp"}) == READS
    assert _blocked({"log.scan.timestamp-millis": "1700000000000"}) == READS
    (refusal,) = schema_refusals(_schema({"log.scan.timestamp-millis": "1700000000000"}))
    assert refusal.property == "option log.scan.timestamp-millis = '1700000000000'"
    # the option's own key decides when both are set
    assert _blocked({"scan.mode": "latest-full", "log.scan": "from-timestamp"}) == frozenset()
    assert _blocked({"lookup.dynamic-partition": "dt=1"}) == {Op.READ, Op.STREAM}
    # a fallback key is refused exactly as its option: compaction.max.file-num is honoured (fixed-
    # and unaware-bucket append compaction) and ignored by primary-key tables, as Paimon: nothing
    assert _blocked({"compaction.early-max.file-num": "10"}) == _blocked({"compaction.max.file-num": "10"})
    assert _blocked({"compaction.early-max.file-num": "10"}) == frozenset()
