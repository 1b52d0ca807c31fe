"""Empty commits against Paimon Java 0.9 (`lake_assets.ops.commit_empty`).

On a table with ``commit.force-create-snapshot = true`` a streaming commit with no changes makes an
APPEND snapshot with no files. In Java 0.9 that snapshot comes from ``FileStoreCommitImpl.commit``
with ``ignoreEmptyCommit`` false, which every streaming commit has (``StreamWriteBuilderImpl``; the
option itself is read by Flink's ``CommitterOperator``, which then commits at a checkpoint its
writers sent nothing for): the oracle's stream writer commits an identifier it wrote nothing
under, lake_assets' committer does the same, and the snapshots agree field by field except the
times, file names and uuids. A batch commit without changes makes none on either side (0.9's
``BatchWriteBuilderImpl`` always ignores empty commits; ``snapshot.ignore-empty-commit`` is 1.x,
compared with pypaimon in `tests/interop/test_empty_commits_pypaimon.py`). Each engine reads and
streams the other's table across the empty snapshot."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.spec.snapshot import BATCH_COMMIT_IDENTIFIER
from lake_assets.table import Table
from tests.java.oracle import PaimonJava

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string()), ("dt", pa.string())])
ROWS = pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"], "dt": ["d1", "d1", "d2"]}, schema=SCHEMA)
MORE = pa.table({"k": [4], "v": ["d"], "dt": ["d2"]}, schema=SCHEMA)
OPTIONS = {"bucket": "2", "commit.force-create-snapshot": "true"}
USER = "empty-commit-user"
# differ by nature: when, which files (random names) and the snapshot's own uuid (1.x field)
VOLATILE = {"timeMillis", "baseManifestList", "deltaManifestList", "baseManifestListSize",
            "deltaManifestListSize", "changelogManifestList", "changelogManifestListSize", "uuid"}


def _comparable(snapshot: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in snapshot.items() if k not in VOLATILE and v is not None}
    out.pop("version", None)  # Java 0.9 writes version 3 as we do; compared on its own below
    return out


def _files(table: Table, snapshot_id: int) -> list[str]:
    return sorted(f.file_name for split in table.plan(snapshot_id=snapshot_id) for f in split.files)


def test_a_forced_empty_streaming_commit_matches_javas(java: PaimonJava, lake: Catalog, wh: str) -> None:
    for name in ("db.java", "db.lake"):
        java.create_table(wh, name, SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"], options=OPTIONS)
    with java.open_writer(wh, "db.java", commit_user=USER) as writer:
        writer.write(ROWS)
        assert writer.commit(1)["snapshot_id"] == 1
        writer.commit(2)  # nothing written under identifier 2
        writer.write(MORE)
        writer.commit(3)
        writer.commit(4)
    # a batch commit without changes: no snapshot in 0.9 (its batch commits always ignore them)
    java.write(wh, "db.java", SCHEMA.empty_table())
    theirs = java.snapshots(wh, "db.java")
    assert [(s["commitIdentifier"], s["commitKind"], s["deltaRecordCount"]) for s in theirs] == [
        (1, "APPEND", 3), (2, "APPEND", 0), (3, "APPEND", 1), (4, "APPEND", 0)]

    table = lake.get_table("db.lake")
    committer = table.new_committer(USER)
    for identifier, data in ((1, ROWS), (2, None), (3, MORE), (4, None)):
        writer = table.new_writer(USER)
        if data is not None:
            writer.write_arrow(data)
        assert committer.commit(writer.prepare_commit(), identifier) == [identifier]
        writer.close()
    assert table.write_arrow(SCHEMA.empty_table()) is None
    ours = java.snapshots(wh, "db.lake")  # our snapshot files as Java parses them
    assert [_comparable(s) for s in ours] == [_comparable(s) for s in theirs]
    assert [s["version"] for s in ours] == [s["version"] for s in theirs]
    # both empty snapshots list no delta manifests, carry the base over and the index manifest
    for name in ("db.java", "db.lake"):
        t = lake.get_table(name)
        mio = t.store.manifest_io()
        for empty in (2, 4):
            snap, before = t.snapshot(empty), t.snapshot(empty - 1)
            assert mio.read_manifest_list(snap.delta_manifest_list) == []
            assert snap.index_manifest == before.index_manifest
            assert _files(t, empty) == _files(t, empty - 1)
    # each engine reads and streams the other's table across the empty snapshots
    want = pa.concat_tables([ROWS, MORE]).sort_by("k").to_pylist()
    for name in ("db.java", "db.lake"):
        assert java.read(wh, name).sort_by("k").to_pylist() == want
        assert lake.get_table(name).to_arrow().sort_by("k").to_pylist() == want
        assert java.read(wh, name, snapshot_id=2).sort_by("k").to_pylist() == ROWS.sort_by("k").to_pylist()
        # streaming from the empty snapshot 2 on: only key 4 (snapshot 3), on both sides
        stream = java.stream(wh, name, {"scan.mode": "from-snapshot", "scan.snapshot-id": "2"})
        streamed = [row for _ in range(6) for row in stream.next().to_pylist()]
        stream.close()
        assert [(r["k"], r["_row_kind"]) for r in streamed] == [(4, "+I")]
        ours_stream = lake.get_table(name).stream(mode="from-snapshot", snapshot_id=2)
        reader = ours_stream.change_reader()
        changes = [r for b in ours_stream.poll(10) for split in b.splits for r in reader.read(split).to_pylist()]
        assert [(r["k"], r["_row_kind"]) for r in changes] == [(4, "+I")]
    assert BATCH_COMMIT_IDENTIFIER not in [s["commitIdentifier"] for s in ours]
