"""Every option's value is validated at create and ALTER against the one table of option rules."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_assets import Catalog, OptionError
from lake_assets.option_rules import RULES
from lake_assets.options import KNOWN_OPTIONS, LAKE_ASSETS_OPTIONS, CoreOptions

SCHEMA = pa.schema([("k", pa.int32()), ("v", pa.string())])


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"bucket": "0"}, OptionError, r"'bucket': '0'.*-1.*>= 1"),
        ({"bucket": "-5"}, OptionError, r"'bucket': '-5'"),
        ({"bucket": "99999999999"}, OptionError, r"32-bit"),
        ({"bucket": "2", "compaction.small-file-ratio": "lots"}, OptionError, r"small-file-ratio.*not a number"),
        ({"bucket": "2", "compaction.small-file-ratio": "1.5"}, OptionError, r"between 0 and 1"),
        ({"bucket": "2", "compaction.small-file-ratio": "NaN"}, OptionError, r"between 0 and 1"),
        ({"bucket": "2", "compaction.small-file-ratio": "nan"}, OptionError, r"not a number"),  # Java: NaN only
        ({"bucket": "2", "write-only": "yes"}, OptionError, r"'write-only'.*'true' or 'false'"),
        ({"bucket": "2", "snapshot.time-retained": "forever"}, OptionError, r"not a duration"),
        ({"bucket": "2", "write-buffer-size": "0 mb"}, OptionError, r"at least 1"),
        ({"bucket": "2", "num-sorted-run.compaction-trigger": "0"}, OptionError, r"at least 1"),
        ({"bucket": "2", "sequence.field.sort-order": "sideways"}, OptionError, r"ascending"),
        ({"bucket": "2", "scan.mode": "sometimes"}, OptionError, r"scan.mode"),
        ({"bucket": "2", "metadata.stats-mode": "all"}, OptionError, r"truncate\(N\)"),
        ({"bucket": "2", "commit.max-retries": "-1"}, OptionError, r"at least 0"),
        ({"bucket": "2", "snapshot.expire.limit": "0"}, OptionError, r"at least 1"),
    ],
)
def test_bad_option_values_fail_at_create(catalog: Catalog, options, error, match):
    with pytest.raises(error, match=match):
        catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options=options)
    assert not catalog.table_exists("db.t")


def test_postpone_bucket_tables_are_created_with_their_options(catalog: Catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"],
                             options={"bucket": "-2", "postpone.default-bucket-num": "3"})
    assert t.schema.core_options.bucket == -2
    with pytest.raises(OptionError, match=r"postpone\.default-bucket-num"):
        catalog.create_table("db.u", SCHEMA, primary_keys=["k"],
                             options={"bucket": "-2", "postpone.default-bucket-num": "0"})


def test_all_problems_reported_at_once_with_suggestions(catalog: Catalog):
    with pytest.raises(OptionError) as info:
        catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={
            "bucket": "0", "write-only": "maybe", "snapshot.num-retained.mni": "3", "compaction.paralelism": "2"})
    msg = str(info.value)
    assert msg.startswith("4 problems with table options")
    assert "'bucket'" in msg and "'write-only'" in msg
    assert "did you mean 'snapshot.num-retained.min'" in msg
    assert "did you mean 'compaction.parallelism'" in msg


def test_alter_validates_values(catalog: Catalog):
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "2"})
    for key, value in (("compaction.small-file-ratio", "lots"), ("write-buffer-size", "-3"),
                       ("snapshot.num-retained.min", "0"), ("changelog.time-retained", "soon")):
        with pytest.raises(OptionError, match=key.replace(".", r"\.")):
            t.update_schema().set_option(key, value).commit()
    assert catalog.get_table("db.t").schema.id == 0


def test_accessors_parse_through_the_rules():
    opts = CoreOptions({"compaction.small-file-ratio": "0.25", "write-buffer-size": "2 mb", "write-only": "TRUE",
                        "snapshot.time-retained": "2 h"})
    assert opts.small_file_ratio == 0.25
    assert opts.write_buffer_size == 2 * 1024 * 1024
    assert opts.write_only is True
    assert opts.snapshot_time_retained_ms == 7_200_000
    with pytest.raises(OptionError, match="small-file-ratio"):
        _ = CoreOptions({"compaction.small-file-ratio": "lots"}).small_file_ratio
    # the known-option sets are the rows of the rule table, no second list to drift
    assert set(RULES) == KNOWN_OPTIONS | LAKE_ASSETS_OPTIONS
