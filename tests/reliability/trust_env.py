"""The table and sentinels of the trust-boundary tests (test_trust_boundaries*.py): a warehouse
with one primary-key table, files next to it that nothing may touch, and commit messages crafted
around the constructor's checks."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spec.types import VarCharType
from lake_assets.store import manifest_io

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
STRING = VarCharType(2**31 - 1)
OLD = time.time() - 10 * 86400  # older than any orphan bound used here


def batch(keys: list[int], dt: str = "d1", v: str = "a") -> pa.Table:
    return pa.table({"k": keys, "dt": [dt] * len(keys), "v": [v] * len(keys)}, schema=SCHEMA)


class Env:
    """A warehouse under ``tmp/wh`` and sentinel files outside it that nothing may touch."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.catalog = Catalog(str(tmp / "wh"))
        self.catalog.create_database("db")
        self.table = self.catalog.create_table(
            "db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"], options={"bucket": "2"}
        )
        self.table.write_arrow(batch([1, 2, 3]))
        self.victim = tmp / "victim"
        self.victim.write_bytes(b"precious")
        self.outside = tmp / "outside"
        self.outside.mkdir()
        (self.outside / "data-old.parquet").write_bytes(b"keep me")
        for p in (self.victim, self.outside / "data-old.parquet"):
            os.utime(p, (OLD, OLD))
        self.before = self.outside_state()
        self.rows = self.read()

    def outside_state(self) -> dict[str, bytes]:
        """Every file next to the warehouse (not under it), with its bytes."""
        out = {}
        for dirpath, _dirs, files in os.walk(self.tmp):
            if Path(dirpath).is_relative_to(self.tmp / "wh"):
                continue
            for f in files:
                p = Path(dirpath) / f
                out[str(p)] = p.read_bytes()
        return out

    def read(self) -> list[dict]:
        return sorted(self.table.to_arrow().to_pylist(), key=lambda r: (r["dt"], r["k"]))

    def assert_outside_untouched(self) -> None:
        assert self.outside_state() == self.before

    def assert_table_unchanged(self, snapshots: int) -> None:
        assert self.table.snapshot_manager.latest_id() == snapshots
        assert self.read() == self.rows

    def rel_to_victim(self, bucket: int = 0, dt: str = "d1") -> str:
        return os.path.relpath(self.victim, self.table.paths.bucket_dir(f"dt={dt}", bucket))


def fresh_env(tmp_path: Path) -> Env:
    """An `Env` under ``tmp_path`` with the manifest cache emptied (crafted manifests reuse names)."""
    manifest_io._cache_slot.cache_clear()
    return Env(tmp_path)


def written_messages(env: Env) -> list[CommitMessage]:
    writer = env.table.new_writer("job-1", write_only=True)
    writer.write_arrow(batch([10, 11], v="new"))
    msgs = writer.prepare_commit()
    writer.close()
    assert msgs
    return msgs


def written_paths(env: Env, msgs: list[CommitMessage]) -> list[Path]:
    return [Path(env.table.store.data_file_path(m.partition, m.bucket, f)) for m in msgs for f in m.all_written_files()]


def crafted_message(msg: CommitMessage, **changes) -> CommitMessage:
    """A message built around the constructor's checks (as a foreign or old producer might)."""
    out = object.__new__(CommitMessage)
    for f in dataclasses.fields(CommitMessage):
        object.__setattr__(out, f.name, changes.get(f.name, getattr(msg, f.name)))
    return out


def with_file(msg: CommitMessage, **file_changes) -> CommitMessage:
    f = dataclasses.replace(msg.new_files[0], **file_changes)
    return crafted_message(msg, new_files=(f, *msg.new_files[1:]))
