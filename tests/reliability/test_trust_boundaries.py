"""Trust boundaries: no path ever leaves the table.

Crafted commit messages (JSON, pickle, objects built around the constructor), crafted snapshots
and manifests, symlinks, option prefixes and names each get a clear `LakeError`; a sentinel
directory next to the warehouse stays byte for byte the same, nothing is committed, and the table
still reads the same where the crafted metadata does not sit in its live state.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import os
import pickle
import re
import time
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, CorruptMetadataError, InvalidIdentifierError, LakeError, OptionError
from lake_assets.errors import InvalidCommitMessageError, UnsafePathError, UnsupportedFeatureError
from lake_assets.formats.manifest_codec import encode_index_manifest
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spec.binary_row import serialize_row
from lake_assets.spec.manifest import FileKind, IndexManifestEntry, ManifestEntry
from lake_assets.spec.snapshot import CommitKind, Snapshot
from lake_assets.spec.types import VarCharType
from lake_assets.store import manifest_io

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.string())])
STRING = VarCharType(2**31 - 1)
OLD = time.time() - 10 * 86400  # older than any orphan bound used here


def _batch(keys: list[int], dt: str = "d1", v: str = "a") -> pa.Table:
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
        self.table.write_arrow(_batch([1, 2, 3]))
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


@pytest.fixture
def env(tmp_path: Path) -> Env:
    manifest_io._cache_slot.cache_clear()
    return Env(tmp_path)


def _messages(env: Env) -> list[CommitMessage]:
    writer = env.table.new_writer("job-1", write_only=True)
    writer.write_arrow(_batch([10, 11], v="new"))
    msgs = writer.prepare_commit()
    writer.close()
    assert msgs
    return msgs


def _written_paths(env: Env, msgs: list[CommitMessage]) -> list[Path]:
    return [Path(env.table.store.data_file_path(m.partition, m.bucket, f)) for m in msgs for f in m.all_written_files()]


def _craft(msg: CommitMessage, **changes) -> CommitMessage:
    """A message built around the constructor's checks (as a foreign or old producer might)."""
    out = object.__new__(CommitMessage)
    for f in dataclasses.fields(CommitMessage):
        object.__setattr__(out, f.name, changes.get(f.name, getattr(msg, f.name)))
    return out


def _with_file(msg: CommitMessage, **file_changes) -> CommitMessage:
    f = dataclasses.replace(msg.new_files[0], **file_changes)
    return _craft(msg, new_files=(f, *msg.new_files[1:]))


# ------------------------------------------------------------------------------ commit messages

BAD_FILE_NAMES = {
    "parent": None,  # filled in per test: ../../../../victim relative to the bucket directory
    "absolute": "ABS",
    "newline": "data-x.parquet\n",
    "nul": "data-\x00.parquet",
    "dotdot": "..",
    "empty": "",
    "backslash": "..\\..\\victim",
    "too long": "d" * 300,
}


def _bad_name(env: Env, case: str) -> str:
    if case == "parent":
        return env.rel_to_victim()
    if case == "absolute":
        return str(env.victim)
    return BAD_FILE_NAMES[case]


@pytest.mark.parametrize("case", list(BAD_FILE_NAMES))
def test_json_message_with_unsafe_file_name_is_rejected(env: Env, case: str) -> None:
    msgs = _messages(env)
    d = json.loads(msgs[0].to_json())
    d["new_files"][0]["file_name"] = _bad_name(env, case)
    with pytest.raises(InvalidCommitMessageError, match="Unsafe file name"):
        CommitMessage.from_json(json.dumps(d))
    env.assert_outside_untouched()
    env.assert_table_unchanged(1)


def test_json_message_with_unsafe_extra_file_is_rejected(env: Env) -> None:
    msgs = _messages(env)
    d = json.loads(msgs[0].to_json())
    d["new_files"][0]["extra_files"] = [env.rel_to_victim()]
    with pytest.raises(InvalidCommitMessageError, match="Unsafe file name"):
        CommitMessage.from_json(json.dumps(d))


def test_json_message_with_external_path_is_refused(env: Env) -> None:
    msgs = _messages(env)
    d = json.loads(msgs[0].to_json())
    d["new_files"][0]["external_path"] = str(env.victim)
    with pytest.raises(UnsupportedFeatureError, match="external path"):
        CommitMessage.from_json(json.dumps(d))


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("min_sequence_number", 9, "above max_sequence_number"),  # max is 1 for two rows
        ("row_count", -1, "row_count"),
        ("level", -1, "level"),
        # what a manifest decoder refuses as damage is never committed
        ("level", 2**30, "level 1073741824 \\(at most 1024\\)"),
        ("first_row_id", -1, "first_row_id"),
        ("delete_row_count", 10**6, "delete_row_count"),
        ("file_size", "12", "file_size"),
        ("bogus_field", 1, "unknown file fields"),
    ],
)
def test_json_message_with_impossible_file_meta_is_rejected(env: Env, field: str, value, match: str) -> None:
    msgs = _messages(env)
    d = json.loads(msgs[0].to_json())
    d["new_files"][0][field] = value
    with pytest.raises(InvalidCommitMessageError, match=match):
        CommitMessage.from_json(json.dumps(d))


@pytest.mark.parametrize("text", ["[]", "{}", "not json", '{"partition": "!!", "bucket": 0, "total_buckets": 2}'])
def test_json_message_garbage_is_rejected(text: str) -> None:
    with pytest.raises(InvalidCommitMessageError):
        CommitMessage.from_json(text)


@pytest.mark.parametrize("case", ["parent", "absolute", "newline"])
def test_pickled_message_with_unsafe_file_name_is_rejected_on_load(env: Env, case: str) -> None:
    msgs = _messages(env)
    crafted = _with_file(msgs[0], file_name=_bad_name(env, case))
    data = pickle.dumps(crafted)  # the sender does not check; the receiver must
    with pytest.raises(InvalidCommitMessageError, match="Unsafe file name"):
        pickle.loads(data)
    # a well-formed message still travels
    assert pickle.loads(pickle.dumps(msgs[0])) == msgs[0]


@pytest.mark.parametrize("case", ["parent", "absolute", "external"])
def test_abort_and_commit_refuse_unsafe_files(env: Env, case: str) -> None:
    """The issue's example: abort() deleted ../../victim and commit() accepted it."""
    msgs = _messages(env)
    written = _written_paths(env, msgs)
    if case == "external":
        crafted = _with_file(msgs[0], external_path=str(env.victim))
        error: type[LakeError] = UnsupportedFeatureError
    else:
        crafted = _with_file(msgs[0], file_name=_bad_name(env, case))
        error = InvalidCommitMessageError
    committer = env.table.new_committer("job-1")
    with pytest.raises(error):
        committer.abort([*msgs[1:], crafted])
    with pytest.raises(error):
        committer.commit([*msgs[1:], crafted], commit_identifier=1)
    env.assert_outside_untouched()
    env.assert_table_unchanged(1)
    assert all(p.exists() for p in written)  # a rejected abort deletes nothing, not even valid files


def _key_of(table, k: int) -> bytes:
    return serialize_row([k], table.schema.types(["k"]))


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"bucket": 99}, "bucket 99"),
        ({"bucket": -1}, "bucket -1"),
        ({"total_buckets": 7}, "of 7"),
        ({"partition": serialize_row([], [])}, "partition bytes"),
        ({"partition": serialize_row(["d1", "x"], [STRING, STRING])}, "partition bytes"),
        ({"partition": b"\x00\x00"}, "partition bytes"),
    ],
)
def test_message_that_does_not_fit_the_table_is_not_committed(env: Env, changes: dict, match: str) -> None:
    """The issue's example: bucket 99 of a 2-bucket table was committed and the table became unreadable."""
    msgs = _messages(env)
    crafted_json = json.loads(msgs[0].to_json())
    for k, v in changes.items():
        crafted_json[k] = v if not isinstance(v, bytes) else base64.b64encode(v).decode()
    crafted = CommitMessage.from_json(json.dumps(crafted_json))  # well formed: only the table can tell
    written = _written_paths(env, msgs)
    committer = env.table.new_committer("job-1")
    with pytest.raises(InvalidCommitMessageError, match=match):
        committer.commit([crafted], commit_identifier=1)
    with pytest.raises(InvalidCommitMessageError, match=match):
        committer.abort([crafted])
    env.assert_table_unchanged(1)
    env.assert_outside_untouched()
    assert all(p.exists() for p in written)
    # the real messages still commit
    assert committer.commit(msgs, commit_identifier=1)
    assert len(env.read()) == 5


@pytest.mark.parametrize(
    ("file_changes", "match"),
    [
        ({"level": 99}, "level 99"),
        ({"schema_id": 5}, "schema id 5"),
    ],
)
def test_message_file_that_does_not_fit_the_table_is_not_committed(
    env: Env, file_changes: dict, match: str
) -> None:
    msgs = _messages(env)
    crafted = _with_file(msgs[0], **file_changes)
    with pytest.raises(InvalidCommitMessageError, match=match):
        env.table.new_committer("job-1").commit([crafted], commit_identifier=1)
    env.assert_table_unchanged(1)


def test_append_table_messages_must_use_bucket_zero(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.a", SCHEMA, partition_keys=["dt"], options={"bucket": "-1"})
    writer = t.new_writer("u", write_only=True)
    writer.write_arrow(_batch([1]))
    msgs = writer.prepare_commit()
    with pytest.raises(InvalidCommitMessageError, match="bucket 3"):
        t.new_committer("u").commit([_craft(msgs[0], bucket=3)])
    assert t.new_committer("u").commit(msgs)
    assert t.to_arrow().num_rows == 1


# ------------------------------------------------------------------------------ crafted metadata


def _craft_snapshot(env: Env, delta: list[ManifestEntry], base_of: int | None = None, **overrides) -> Snapshot:
    """Commit a snapshot whose delta holds ``delta`` as-is (as a buggy or hostile writer would);
    its base is the live state of snapshot ``base_of`` (default: the latest)."""
    t = env.table
    mio = t.store.manifest_io()
    latest = t.snapshot_manager.latest()
    of = latest if base_of is None else t.snapshot_manager.snapshot(base_of)
    base = mio.read_manifest_list(of.base_manifest_list) + mio.read_manifest_list(of.delta_manifest_list)
    base_name, base_size = mio.write_manifest_list(base)
    delta_name, delta_size = mio.write_manifest_list(mio.write_manifests(delta))
    snap = Snapshot(
        id=latest.id + 1, schema_id=t.schema.id, base_manifest_list=base_name, base_manifest_list_size=base_size,
        delta_manifest_list=delta_name, delta_manifest_list_size=delta_size, commit_user="crafted",
        commit_identifier=latest.id + 1, commit_kind=CommitKind.COMPACT, time_millis=int(time.time() * 1000),
        total_record_count=latest.total_record_count, delta_record_count=0,
    )
    snap = dataclasses.replace(snap, **overrides)
    assert t.snapshot_manager.try_commit(snap)
    t.snapshot_manager.write_latest_hint(snap.id)
    manifest_io._cache_slot.cache_clear()  # as another process: decode from storage
    return snap


def _live_entry(env: Env) -> ManifestEntry:
    return env.table.store.file_store_scan().live_entries(env.table.snapshot_manager.latest())[0]


@pytest.mark.parametrize("case", ["parent", "external"])
def test_expiry_never_deletes_a_file_a_crafted_manifest_names_outside(env: Env, case: str) -> None:
    e = _live_entry(env)
    if case == "parent":
        rel = os.path.relpath(env.victim, env.table.paths.bucket_dir(env.table.store.partition_path_of(e.partition),
                                                                      e.bucket))
        f = dataclasses.replace(e.file, file_name=rel)
    else:
        f = dataclasses.replace(e.file, external_path=str(env.victim))
    # snapshot 2 "deletes" the crafted file; snapshot 3 holds snapshot 1's files, so expiring 1 and 2
    # makes expiry look at what 2 deleted
    _craft_snapshot(env, [ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, f)])
    _craft_snapshot(env, [], base_of=1)
    with contextlib.suppress(LakeError):  # stopping is fine; deleting outside is not
        env.table.expire_snapshots(retain_min=1, retain_max=1)
    env.assert_outside_untouched()
    env.assert_table_unchanged(3)


def test_crafted_manifest_stops_orphan_removal(env: Env) -> None:
    e = _live_entry(env)
    f = dataclasses.replace(e.file, file_name=str(env.victim))
    _craft_snapshot(env, [ManifestEntry(FileKind.ADD, e.partition, e.bucket, e.total_buckets, f)])
    with pytest.raises(CorruptMetadataError, match="Unsafe file name"):
        env.table.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    env.assert_outside_untouched()


@pytest.mark.parametrize("field", ["changelogManifestList", "baseManifestList", "indexManifest", "statistics"])
def test_snapshot_naming_a_list_outside_the_table_stops_expiry(env: Env, field: str) -> None:
    """The issue's example: a snapshot whose changelog list is ../.. made expiry delete outside."""
    t = env.table
    t.write_arrow(_batch([4]))
    t.write_arrow(_batch([5]))
    path = Path(t.paths.snapshot_file(1))
    d = json.loads(path.read_text())
    d[field] = os.path.relpath(env.victim, t.paths.manifest_dir)
    path.write_text(json.dumps(d))
    with pytest.raises(CorruptMetadataError, match="Unsafe file name"):
        t.expire_snapshots(retain_min=1, retain_max=1)
    env.assert_outside_untouched()
    assert t.snapshot_manager.latest_id() == 3
    assert len(env.read()) == 5  # the latest snapshot is intact


def test_manifest_list_naming_a_manifest_outside_is_corrupt(env: Env) -> None:
    t = env.table
    mio = t.store.manifest_io()
    latest = t.snapshot_manager.latest()
    metas = mio.read_manifest_list(latest.delta_manifest_list)
    bad = [dataclasses.replace(metas[0], file_name=os.path.relpath(env.victim, t.paths.manifest_dir))]
    name, size = mio.write_manifest_list(bad)
    _craft_snapshot(env, [], delta_manifest_list=name, delta_manifest_list_size=size)
    _craft_snapshot(env, [], base_of=1)  # snapshot 2 (the crafted list) can expire now
    manifest_io._cache_slot.cache_clear()
    with pytest.raises(CorruptMetadataError, match="Unsafe file name"):
        t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    with contextlib.suppress(LakeError):  # stopping is fine; deleting outside is not
        t.expire_snapshots(retain_min=1, retain_max=1)
    env.assert_outside_untouched()
    env.assert_table_unchanged(3)


# ------------------------------------------------------------------------------ symlinks


def test_orphan_removal_does_not_follow_a_symlinked_directory(env: Env) -> None:
    t = env.table
    link = Path(t.paths.root) / "dt=evil"
    link.symlink_to(env.outside, target_is_directory=True)
    res = t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert not any(p.startswith(str(link)) for p in res.paths)
    assert link.is_symlink()  # the link itself is left alone too (it may be a relocated directory)
    env.assert_outside_untouched()
    env.assert_table_unchanged(1)


def test_expiry_does_not_delete_through_a_symlinked_bucket_directory(env: Env) -> None:
    t = env.table
    t.write_arrow(_batch([1, 2, 3], v="b"))  # replaces every row: snapshot 1's files become expirable
    t.compact(full=True)
    # relocate one bucket directory out of the table, leaving a symlink behind
    e = t.store.file_store_scan().live_entries(t.snapshot_manager.snapshot(1))[0]
    bucket_dir = Path(t.paths.bucket_dir(t.store.partition_path_of(e.partition), e.bucket))
    moved = env.tmp / "moved-bucket"
    bucket_dir.rename(moved)
    bucket_dir.symlink_to(moved, target_is_directory=True)
    moved_before = {p.name: p.read_bytes() for p in moved.iterdir()}
    env.before = env.outside_state()
    with pytest.raises(UnsafePathError, match="symlink"):
        t.expire_snapshots(retain_min=1, retain_max=1)
    assert {p.name: p.read_bytes() for p in moved.iterdir()} == moved_before
    env.assert_outside_untouched()


# ------------------------------------------------------------------------------ option prefixes


@pytest.mark.parametrize("key", ["data-file.prefix", "changelog-file.prefix"])
@pytest.mark.parametrize("value", ["../../../../x-", "/tmp/x-", "a/b-", "x\n", "p" * 200])
def test_file_prefix_options_are_plain(env: Env, key: str, value: str) -> None:
    with pytest.raises(OptionError, match=re.escape(key)):
        env.catalog.create_table("db.p", SCHEMA, primary_keys=["k", "dt"], options={"bucket": "1", key: value})
    assert not env.catalog.table_exists("db.p")
    with pytest.raises(OptionError, match=re.escape(key)):
        env.table.update_schema().set_option(key, value).commit()
    assert env.table.refresh().schema.id == 0
    env.assert_outside_untouched()


def test_crafted_schema_with_escaping_prefix_writes_nothing(env: Env) -> None:
    t = env.table
    d = json.loads(Path(t.paths.schema_file(0)).read_text())
    d["id"] = 1
    d["options"]["data-file.prefix"] = "../../../../../x-"
    Path(t.paths.schema_file(1)).write_text(json.dumps(d))
    with pytest.raises(OptionError, match=re.escape("data-file.prefix")):
        env.catalog.get_table("db.t").write_arrow(_batch([9]))
    env.assert_outside_untouched()
    assert not list(env.tmp.glob("x-*"))


def test_default_and_plain_prefixes_still_work(env: Env) -> None:
    t = env.catalog.create_table(
        "db.p", SCHEMA, primary_keys=["k", "dt"],
        options={"bucket": "1", "data-file.prefix": "part.a-", "changelog-file.prefix": ""},
    )
    t.write_arrow(_batch([1]))
    assert t.to_arrow().num_rows == 1
    assert all(n.startswith("part.a-") for n in os.listdir(t.paths.bucket_dir("", 0)))


# ------------------------------------------------------------------------------ names


@pytest.mark.parametrize("bad", ["t\n", "t\r", "t\x00", "t x", "../t", "a" * 201, ""])
def test_identifiers_are_fully_matched_and_bounded(env: Env, bad: str) -> None:
    with pytest.raises(InvalidIdentifierError):
        env.catalog.create_table(f"db.{bad}", SCHEMA)
    with pytest.raises(InvalidIdentifierError):
        env.catalog.create_database(bad)
    if bad == "t x":  # tag names may hold single inner spaces: Paimon's hourly tags ("2024-01-01 09")
        env.table.create_tag(bad)
        env.table.delete_tag(bad)
    else:
        with pytest.raises(InvalidIdentifierError):
            env.table.create_tag(bad)
    if bad:  # an empty consumer id means "no consumer"
        with pytest.raises(InvalidIdentifierError):
            env.table.stream(consumer_id=bad)
    with pytest.raises(InvalidIdentifierError):
        env.table.store.consumer_manager().record(bad, 1)
    env.assert_outside_untouched()
    assert env.table.tags() == {}


def test_long_names_fail_with_a_clear_error_not_oserror(env: Env) -> None:
    with pytest.raises(InvalidIdentifierError, match="at most 200"):
        env.catalog.create_table("db." + "t" * 300, SCHEMA)
    ok = "t" * 200  # the longest allowed name works everywhere it becomes a file name
    env.catalog.create_database(ok)
    env.catalog.create_table(f"{ok}.{ok}", SCHEMA).write_arrow(_batch([1]))
    env.table.create_tag(ok)
    env.table.store.consumer_manager().record(ok, 1)
    assert ok in env.table.tags()


def test_numeric_tag_names_are_refused_as_in_paimon(env: Env) -> None:
    with pytest.raises(InvalidIdentifierError, match="cannot be a number"):
        env.table.create_tag("1")
    env.table.create_tag("v1")


def _supersede_snapshot_1(t) -> None:
    t.write_arrow(_batch([1, 2, 3], v="b"))  # replaces every row: snapshot 1's files become expirable
    t.compact(full=True)


def test_a_tag_named_with_a_newline_on_storage_still_protects_its_data(env: Env) -> None:
    """From class 2: "release\\n" was accepted, then invisible to tags() and to expiry, which deleted
    its data. We refuse to create such a name; one on storage (Paimon Java 0.9 writes it) is listed
    and protects its files."""
    t = env.table
    tag = t.create_tag("release")
    Path(t.paths.tag_file("release")).rename(Path(t.paths.tag_dir) / "tag-release\n")
    tagged = [Path(t.store.data_file_path(e.partition, e.bucket, e.file))
              for e in t.store.file_store_scan().live_entries(tag.snapshot)]
    assert t.tags() == {"release\n": tag.snapshot}
    _supersede_snapshot_1(t)
    res = t.expire_snapshots(retain_min=1, retain_max=1)
    assert res.expired_snapshots  # snapshot 1 went, its files stayed for the tag
    assert all(p.exists() for p in tagged)
    t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert all(p.exists() for p in tagged)


@pytest.mark.parametrize("kind", ["tag", "consumer"])
def test_an_entry_that_cannot_be_interpreted_stops_expiry(env: Env, kind: str) -> None:
    """A ``tag-a`` directory (Paimon Java 0.9 turns tag "a/b" into one) is not a tag we can read:
    expiry stops rather than delete what it might protect; nothing is silently skipped."""
    t = env.table
    directory = Path(t.paths.tag_dir if kind == "tag" else t.paths.consumer_dir)
    (directory / f"{kind}-a").mkdir(parents=True)
    (directory / f"{kind}-a" / "b").write_text("{}")
    _supersede_snapshot_1(t)
    with pytest.raises(CorruptMetadataError, match="is a directory"):
        t.expire_snapshots(retain_min=1, retain_max=1)
    assert t.snapshot_manager.earliest_id() == 1
    if kind == "tag":  # orphan removal keeps what tags reference (consumers hold snapshots only)
        with pytest.raises(CorruptMetadataError, match="is a directory"):
            t.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)


def test_a_consumer_named_with_a_newline_on_storage_still_holds_its_snapshots(env: Env) -> None:
    t = env.table
    Path(t.paths.consumer_dir).mkdir(parents=True)
    (Path(t.paths.consumer_dir) / "consumer-reader\n").write_text(json.dumps({"nextSnapshot": 1}))
    assert t.store.consumer_manager().consumers()["reader\n"].next_snapshot == 1
    _supersede_snapshot_1(t)
    t.expire_snapshots(retain_min=1, retain_max=1)
    assert t.snapshot_manager.earliest_id() == 1


def test_listings_match_whole_names(env: Env) -> None:
    t = env.table
    # "snapshot-1\n" and digits of other scripts are not snapshot files
    Path(t.paths.snapshot_dir, "snapshot-7\n").write_text("{}")
    Path(t.paths.snapshot_dir, "snapshot-\u0663").write_text("{}")
    assert t.snapshot_manager.snapshot_ids() == [1]
    env.assert_table_unchanged(1)


def test_a_partition_value_too_long_for_a_directory_is_a_clear_error(env: Env) -> None:
    """Over-long names of the other kind: a partition directory ``dt=<300 chars>`` failed with a raw
    OSError (ENAMETOOLONG) mid-write."""
    files_before = sorted(p for p in Path(env.table.paths.root).rglob("*") if p.is_file())
    with pytest.raises(UnsafePathError, match="partition directory"):
        env.table.write_arrow(pa.table({"k": [8, 9], "dt": ["d1", "x" * 300], "v": ["a", "b"]}, schema=SCHEMA))
    env.assert_table_unchanged(1)
    assert sorted(p for p in Path(env.table.paths.root).rglob("*") if p.is_file()) == files_before
    env.assert_outside_untouched()


def test_the_same_boundaries_hold_on_s3(s3_warehouse) -> None:
    """Object stores have no directories to escape, but keys with ``..`` or a leading bucket name
    are just as dangerous to a delete: the checks are lexical and hold on S3 too."""
    wh, opts = s3_warehouse
    cat = Catalog(wh, **opts)
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"], options={"bucket": "2"})
    t.write_arrow(_batch([1, 2, 3]))
    bucket = t.paths.root.split("/", 1)[0]
    victim = f"{bucket}/victim"
    t.file_io.write_bytes(victim, b"precious")
    writer = t.new_writer("job", write_only=True)
    writer.write_arrow(_batch([10]))
    msgs = writer.prepare_commit()
    bucket_dir = t.paths.bucket_dir("dt=d1", msgs[0].bucket)
    for bad in (os.path.relpath(victim, bucket_dir), victim):
        d = json.loads(msgs[0].to_json())
        d["new_files"][0]["file_name"] = bad
        with pytest.raises(InvalidCommitMessageError):
            CommitMessage.from_json(json.dumps(d))
        crafted = _with_file(msgs[0], file_name=bad)
        with pytest.raises(InvalidCommitMessageError):
            t.new_committer("job").abort([crafted])
    # a snapshot naming a list outside the table stops expiry
    t.write_arrow(_batch([4]))
    t.write_arrow(_batch([5]))
    d = json.loads(t.file_io.read_bytes(t.paths.snapshot_file(1)))
    d["changelogManifestList"] = os.path.relpath(victim, t.paths.manifest_dir)
    t.file_io.overwrite_atomic(t.paths.snapshot_file(1), json.dumps(d).encode())
    with pytest.raises(CorruptMetadataError, match="Unsafe file name"):
        t.expire_snapshots(retain_min=1, retain_max=1)
    assert t.file_io.read_bytes(victim) == b"precious"
    assert sorted(t.to_arrow().column("k").to_pylist()) == [1, 2, 3, 4, 5]


def _with_index_manifest(env: Env, file_name: str) -> Path:
    """Point the latest snapshot at an index manifest naming ``file_name`` under ``index/`` (as a
    Paimon engine writes for hash indexes), and put an old index file there."""
    t = env.table
    index_file = Path(t.paths.index_dir) / "index-5b0e7f1c-0"
    index_file.parent.mkdir(parents=True, exist_ok=True)
    index_file.write_bytes(b"hash index")
    os.utime(index_file, (OLD, OLD))
    entry = IndexManifestEntry(FileKind.ADD, serialize_row(["d1"], [STRING]), 0, "HASH", file_name, 10, 1)
    name = "index-manifest-5b0e7f1c-0"
    Path(t.paths.manifest_file(name)).write_bytes(encode_index_manifest([entry]))
    path = Path(t.paths.snapshot_file(1))
    d = json.loads(path.read_text())
    d["indexManifest"] = name
    path.write_text(json.dumps(d))
    return index_file


def test_orphan_removal_keeps_index_files_a_snapshot_references(env: Env) -> None:
    index_file = _with_index_manifest(env, "index-5b0e7f1c-0")
    res = env.table.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert str(index_file) not in res.paths
    assert index_file.exists()


def test_an_index_manifest_naming_a_file_outside_stops_orphan_removal(env: Env) -> None:
    index_file = _with_index_manifest(env, os.path.relpath(env.victim, env.table.paths.index_dir))
    with pytest.raises(CorruptMetadataError, match="Unsafe file name"):
        env.table.remove_orphan_files(older_than=timedelta(0), dry_run=False, allow_recent=True)
    assert index_file.exists()
    env.assert_outside_untouched()
