"""A tag created with its own retention expires at the next commit, whatever the table's options:
Paimon Java 0.9's committer runs its tag expiry (``TagTimeExpire``) after every commit of a table
that is not write-only, and so does lake_assets' (``ops/commit_lifecycle.py``). Each engine's
commit expires the other's tag; tags without a retention stay."""

from __future__ import annotations

from datetime import timedelta

import pyarrow as pa

from lake_assets import Catalog
from tests.java.oracle import PaimonJava

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("v", pa.string())])


def test_each_engines_commit_expires_tags_past_their_own_retention(java: PaimonJava, tmp_path) -> None:
    wh = str(tmp_path / "wh")
    java.create_table(wh, "db.t", SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    java.write(wh, "db.t", pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    t = Catalog(wh).get_table("db.t")
    t.create_tag("ours-short", time_retained=timedelta(milliseconds=1))
    t.create_tag("ours-plain")
    java.write(wh, "db.t", pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
    assert sorted(java.tags(wh, "db.t")) == ["ours-plain"]  # Java's commit expired our tag
    t.create_tag("ours-short-2", time_retained=timedelta(milliseconds=1))
    t.write_arrow(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    assert sorted(t.tags()) == ["ours-plain"]  # and ours does too
    assert sorted(java.tags(wh, "db.t")) == ["ours-plain"]


def test_no_commit_of_a_write_only_table_expires_tags(java: PaimonJava, tmp_path) -> None:
    """Java 0.9's committer of a ``write-only`` table has no tag expiry; neither has ours."""
    wh = str(tmp_path / "wh")
    java.create_table(wh, "db.w", SCHEMA, primary_keys=["id"], options={"bucket": "1", "write-only": "true"})
    java.write(wh, "db.w", pa.table({"id": [1], "v": ["a"]}, schema=SCHEMA))
    t = Catalog(wh).get_table("db.w")
    t.create_tag("short", time_retained=timedelta(milliseconds=1))
    java.write(wh, "db.w", pa.table({"id": [2], "v": ["b"]}, schema=SCHEMA))
    t.write_arrow(pa.table({"id": [3], "v": ["c"]}, schema=SCHEMA))
    assert list(java.tags(wh, "db.w")) == ["short"] and list(t.tags()) == ["short"]
