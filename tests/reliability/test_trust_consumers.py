"""Trust boundary: consumer files' ``nextSnapshot`` (issue 14, session 18).

A consumer file (``consumer/consumer-<id>``) is written by other engines' streaming readers and
by hand. Paimon Java 0.9 reads it with Jackson into a ``long`` (`Consumer.fromJson`; the
differential `tests/differential/test_consumer_values_java.py` pins each value below against it).
Every value either reads as Java reads it - and expiry then keeps every snapshot from the lowest
position, a valid reader's included - or is refused as `CorruptMetadataError` naming the file and
the field, and then expiry deletes nothing. A canary beside the table is never touched.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, CorruptMetadataError, LakeError
from lake_assets.spec.snapshot import Consumer

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
READER_AT = 3  # a valid reader's position: snapshots 3.. must survive every expiry below

# consumer file text -> the position Java 0.9 reads (None: Java fails to read it)
VALUES: dict[str, int | None] = {
    '{"nextSnapshot": 2}': 2,
    '{"nextSnapshot": "5"}': 5,
    '{"nextSnapshot": " 5"}': 5,
    '{"nextSnapshot": "-3"}': -3,
    '{"nextSnapshot": 5.7}': 5,           # truncated toward zero
    '{"nextSnapshot": -0.5}': 0,
    '{"nextSnapshot": 1e3}': 1000,
    '{"nextSnapshot": -3}': -3,
    '{"nextSnapshot": 0}': 0,
    '{"nextSnapshot": null}': 0,          # a primitive long's default
    "{}": 0,
    '{"nextSnapshot": 9223372036854775807}': 2**63 - 1,
    '{"nextSnapshot": 9223372036854775808}': None,  # outside a long: Python's int() took it
    '{"nextSnapshot": 1e300}': None,
    '{"nextSnapshot": true}': None,       # int(True) was 1
    '{"nextSnapshot": "abc"}': None,
    '{"nextSnapshot": "5.5"}': None,
    '{"nextSnapshot": "1e3"}': None,
    '{"nextSnapshot": "0x10"}': None,
    '{"nextSnapshot": "5_0"}': None,      # int() took it as 50
    '{"nextSnapshot": "\u0665"}': 5,      # an Arabic-Indic five: Java's Long.parseLong takes it
    '{"nextSnapshot": NaN}': None,
    '{"nextSnapshot": [5]}': None,
    '{"nextSnapshot": {}}': None,
    "[5]": None,
    "": None,
}
# Our own lease field (ops/writer_lease.py) is an integer or absent; anything else is damage
# (``true`` read as 1 made a reader's position a lapsed lease that expiry dropped).
LEASES = {'{"nextSnapshot": 2, "lakeAssetsLeaseUntil": true}': None,
          '{"nextSnapshot": 2, "lakeAssetsLeaseUntil": "9"}': None,
          '{"nextSnapshot": 2, "lakeAssetsLeaseUntil": 1.5}': None}


@pytest.mark.parametrize("text", [*VALUES, *LEASES])
def test_consumer_file_reads_as_java_or_is_corrupt(text: str) -> None:
    expected = {**VALUES, **LEASES}[text]
    if expected is None:
        with pytest.raises(CorruptMetadataError, match="Consumer file consumer-x is corrupt"):
            Consumer.from_json(text, "consumer-x")
    else:
        assert Consumer.from_json(text, "consumer-x").next_snapshot == expected


def test_trailing_text_is_refused_though_java_reads_the_first_object() -> None:
    """Java's Jackson ignores text after the object (FAIL_ON_TRAILING_TOKENS is off) and reads 5;
    a file so torn cannot be trusted to hold the position its reader saved: we refuse, and expiry
    deletes nothing until it is fixed (erring on keeping)."""
    with pytest.raises(CorruptMetadataError, match="consumer-x"):
        Consumer.from_json('{"nextSnapshot": 5} x', "consumer-x")


def test_no_consumer_value_makes_expiry_delete_what_a_reader_needs(tmp_path: Path) -> None:
    """Every value beside a valid reader at snapshot 3, every operation that reads consumers."""
    canary = tmp_path / "canary"
    canary.write_bytes(b"precious")
    catalog = Catalog(str(tmp_path / "wh"))
    catalog.create_database("db")
    for i, (text, expected) in enumerate({**VALUES, **LEASES}.items()):
        t = catalog.create_table(f"db.t{i}", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
        for k in range(5):
            t.write_arrow(pa.table({"k": [k], "v": ["a"]}, schema=SCHEMA))
        manager = t.store.consumer_manager()
        manager.record("reader", READER_AT)
        Path(t.paths.consumer_file("hostile")).write_text(text)
        if expected is None:
            for operation in (lambda t=t: t.expire_snapshots(retain_min=1, retain_max=1),
                              lambda t=t: t.stream(consumer_id="hostile")):
                with pytest.raises(CorruptMetadataError, match="consumer-hostile is corrupt"):
                    operation()
            assert t.snapshot_manager.earliest_id() == 1, text
        else:
            t.expire_snapshots(retain_min=1, retain_max=1)
            # the lowest position holds; never above the valid reader's
            assert t.snapshot_manager.earliest_id() == max(1, min(READER_AT, expected)), text
            # the valid reader still resumes and reads its snapshots
            reader = t.stream(consumer_id="reader")
            assert [b.snapshot_id for b in reader.poll()][:1] == [READER_AT], text
            if expected < 1:  # before the first snapshot, which is there: from it, as Java's scan resumes
                assert [b.snapshot_id for b in t.stream(consumer_id="hostile").poll()][:1] == [1], text
            elif expected > 6:  # past the next snapshot: a clear error (Java would wait and skip), no crash
                with pytest.raises(LakeError, match=f"at snapshot {expected}, past the next snapshot"):
                    t.stream(consumer_id="hostile")
        t.health()
        t.remove_orphan_files(dry_run=False)
    assert canary.read_bytes() == b"precious"
