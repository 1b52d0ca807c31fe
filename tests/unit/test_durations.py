"""One duration grammar (Paimon's TimeUtils.parseDuration) and Java's MemorySize grammar, for table
options, lake.yaml and jobs."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lake_assets.defs.config.fields import parse_duration as config_duration
from lake_assets.durations import duration_text, parse_duration, parse_duration_ms, parse_duration_ns
from lake_assets.errors import OptionError
from lake_assets.option_types import parse_memory_size
from lake_assets.options import CoreOptions


@pytest.mark.parametrize(("text", "ms"), [
    ("500", 500), ("500 ms", 500), ("10s", 10_000), (" 10 SEC ", 10_000), ("2 seconds", 2_000),
    ("15 min", 900_000), ("15m", 900_000), ("1 minute", 60_000), ("3 minutes", 180_000),
    ("1 h", 3_600_000), ("2 hours", 7_200_000), ("7d", 604_800_000), ("1 day", 86_400_000),
    ("1500 micros", 1), ("999999 ns", 0), ("0 s", 0),
])
def test_java_forms(text, ms):
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", [
    "1.5 h",      # Java takes whole numbers only
    "1h 30min",   # no compound durations
    "-1 s",       # no sign
    "10 mins",    # "min" has no plural form in Java, "minutes" has
    "h", "", "soon", "1 fortnight", "99999999999999999999 ms",
])
def test_what_java_rejects_is_rejected(text):
    with pytest.raises(OptionError, match="is not a duration"):
        parse_duration_ms(text, "snapshot.time-retained")


def test_nanoseconds_and_timedelta():
    assert parse_duration_ns("3 ns") == 3
    assert parse_duration("90s") == timedelta(seconds=90)


@pytest.mark.parametrize(("value", "text"), [
    (timedelta(hours=1), "1h"), (timedelta(minutes=10), "10min"), (timedelta(seconds=90), "90s"),
    (timedelta(milliseconds=1500), "1500ms"), (timedelta(days=7), "7d"), (timedelta(0), "0ms"),
    (timedelta(microseconds=3), "3000ns"), (timedelta(hours=25), "25h"),
])
def test_duration_text_is_the_grammar_messages_and_flags_use(value, text):
    """Messages name a duration as --older-than and lake.yaml take it, never timedelta's 1:00:00."""
    assert duration_text(value) == text
    assert parse_duration(text) == value
    assert duration_text(-value) == (f"-{text}" if value else text)


def test_every_layer_uses_the_one_grammar():
    # lake.yaml fields and table options (the jobs' arguments call parse_duration_ms) agree on every text
    for text in ("90s", "15 min", "1 h", "7 d"):
        ms = parse_duration_ms(text)
        assert config_duration(text) == timedelta(milliseconds=ms)
        assert CoreOptions({"snapshot.time-retained": text}).snapshot_time_retained_ms == ms
    for text in ("1.5h", "1h30min"):
        with pytest.raises(ValueError, match="is not a duration"):  # pydantic needs a ValueError
            config_duration(text)
        with pytest.raises(OptionError):
            CoreOptions({"snapshot.time-retained": text}).validate()
    # a bare number: milliseconds in a table option (as Paimon), refused in lake.yaml (`timeout: 7200`)
    assert CoreOptions({"snapshot.time-retained": "250"}).snapshot_time_retained_ms == 250
    with pytest.raises(ValueError, match="'7200' has no unit"):
        config_duration("7200")


@pytest.mark.parametrize(("text", "size"), [("1024", 1024), ("64kb", 65536), (" 128 MB ", 128 * 2**20),
                                            ("2 gibibytes", 2 * 2**30), ("1 t", 2**40), ("7 bytes", 7)])
def test_memory_sizes_follow_java(text, size):
    assert parse_memory_size(text) == size


@pytest.mark.parametrize("text", ["1.5 mb", "mb", "-1 kb", "1 kib", "64 kilobytes", "9999999999 tb"])
def test_memory_sizes_java_rejects_are_rejected(text):
    with pytest.raises(OptionError, match="write-buffer-size"):
        parse_memory_size(text, "write-buffer-size")
