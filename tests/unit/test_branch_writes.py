"""The ``branch`` option a table's schema may carry (Paimon 0.9+ ``CoreOptions.BRANCH``).

Java 0.9's ``FileStoreTableFactory`` and ``AbstractFileStore.snapshotManager`` read a table whose
schema carries ``branch = b1`` from ``branch/branch-b1``'s snapshots, tags and consumers, with the
schema it was opened with; lake_assets opens a branch by its identifier only, so such a table is
refused for every operation, naming the option, and nothing changes. ``branch = main`` (Java's
``isMainBranch``: ``equals("main")``, untrimmed, case-sensitive) is the main branch.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from lake_assets import Catalog, UnsupportedFeatureError


def _table(catalog: Catalog, **options: str):
    t = catalog.create_table("db.kv", pa.schema([("k", pa.int64()), ("v", pa.int64())]), primary_keys=["k"],
                             options={"bucket": "1", **options})
    t.write_arrow(pa.table({"k": [1, 2], "v": [1, 1]}, schema=t.arrow_schema))
    return t


def _carry(t, value: str) -> None:
    """A schema that carries ``branch`` as another engine's ALTER would leave it."""
    schema = json.loads(t.file_io.read_bytes(t.paths.schema_file(0)))
    schema["id"] = 1
    schema["options"]["branch"] = value
    t.file_io.write_bytes(t.paths.schema_file(1), json.dumps(schema).encode())


def _files(t) -> dict[str, bytes]:
    return {s.path: t.file_io.read_bytes(s.path) for s in t.file_io.walk_files(t.paths.root)}


@pytest.mark.parametrize("value", ["b1", " main", "MAIN"])
def test_a_table_carrying_another_branch_is_refused_for_everything(catalog: Catalog, value: str) -> None:
    _carry(_table(catalog), value)
    t = catalog.get_table("db.kv")
    before = _files(t)
    calls = {
        "read": t.to_arrow,
        "stream from": lambda: t.read_changes(1, 1),
        "write to": lambda: t.write_arrow(pa.table({"k": [3], "v": [3]}, schema=t.arrow_schema)),
        "compact": lambda: t.compact(full=True),
        "expire snapshots of": lambda: t.expire_snapshots(retain_max=1, retain_min=1),
        "remove orphan files of": lambda: t.remove_orphan_files(dry_run=True),
        "tag": lambda: t.create_tag("x", 1),
        "roll back": lambda: t.rollback_to(snapshot_id=1),
    }
    for verb, call in calls.items():
        with pytest.raises(UnsupportedFeatureError, match=rf"Cannot {verb} db\.kv: .*option branch = {value!r}"):
            call()
    assert _files(t) == before


def test_branch_main_is_the_main_branch(catalog: Catalog) -> None:
    t = _table(catalog, branch="main")
    t.write_arrow(pa.table({"k": [3], "v": [2]}, schema=t.arrow_schema))
    assert sorted(t.to_arrow()["k"].to_pylist()) == [1, 2, 3]


def test_creating_or_altering_a_table_onto_another_branch_is_refused(catalog: Catalog) -> None:
    with pytest.raises(UnsupportedFeatureError, match=r"branch='b1' is not supported"):
        _table(catalog, branch="b1")
    t = _table(catalog)
    with pytest.raises(UnsupportedFeatureError, match=r"branch='b1' is not supported"):
        t.update_schema().set_option("branch", "b1").commit()
    assert t.schema.id == 0
