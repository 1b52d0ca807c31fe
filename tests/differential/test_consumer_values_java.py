"""Consumer files' ``nextSnapshot`` as Paimon Java 0.9 reads them (`Consumer.fromJson`, Jackson
into a ``long``): for every value of `tests/reliability/test_trust_consumers.py` Java's listing of
the consumer gives the position we read, or fails where we raise `CorruptMetadataError`."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog, CorruptMetadataError
from tests.java.oracle import JavaError, PaimonJava
from tests.reliability.test_trust_consumers import VALUES

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def test_java_reads_each_consumer_value_as_we_do(java: PaimonJava, wh: str, lake: Catalog) -> None:
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    java.write(wh, "db.t", pa.table({"k": [1], "v": ["a"]}, schema=SCHEMA))
    manager = lake.get_table("db.t").store.consumer_manager()
    path = Path(lake.get_table("db.t").paths.consumer_file("x"))
    path.parent.mkdir(exist_ok=True)
    seen = {}
    for text in VALUES:
        path.write_text(text)
        try:
            java_value: int | None = java.consumers(wh, "db.t")["x"]
        except JavaError as exc:
            assert exc.mentions("Cannot deserialize") or exc.mentions("out of range") \
                or exc.mentions("No content") or exc.mentions("Non-standard token"), (text, exc)
            java_value = None
        try:
            ours: int | None = manager.consumers()["x"].next_snapshot
        except CorruptMetadataError:
            ours = None
        seen[text] = (java_value, ours)
    assert all(j == o for j, o in seen.values()), {t: v for t, v in seen.items() if v[0] != v[1]}
    assert {t: j for t, (j, _) in seen.items()} == VALUES  # the table the reliability test uses is Java's
