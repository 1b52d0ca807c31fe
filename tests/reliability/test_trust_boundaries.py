"""Trust boundaries: no path ever leaves the table.

Crafted commit messages (JSON, pickle, objects built around the constructor), crafted snapshots
and manifests, symlinks, option prefixes and names each get a clear `LakeError`; a sentinel
directory next to the warehouse stays byte for byte the same, nothing is committed, and the table
still reads the same where the crafted metadata does not sit in its live state. Crafted snapshots,
manifests and index manifests, and symlinks: test_trust_boundaries_metadata.py.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import re
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, CorruptMetadataError, InvalidIdentifierError, LakeError, OptionError
from lake_assets.errors import InvalidCommitMessageError, UnsafePathError, UnsupportedFeatureError
from lake_assets.ops.commit_message import CommitMessage
from lake_assets.spec.binary_row import serialize_row
from tests.reliability.trust_env import (
    SCHEMA,
    STRING,
    Env,
    batch,
    crafted_message,
    fresh_env,
    with_file,
    written_messages,
    written_paths,
)


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return fresh_env(tmp_path)


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
    msgs = written_messages(env)
    d = json.loads(msgs[0].to_json())
    d["new_files"][0]["file_name"] = _bad_name(env, case)
    with pytest.raises(InvalidCommitMessageError, match="Unsafe file name"):
        CommitMessage.from_json(json.dumps(d))
    env.assert_outside_untouched()
    env.assert_table_unchanged(1)


def test_json_message_with_unsafe_extra_file_is_rejected(env: Env) -> None:
    msgs = written_messages(env)
    d = json.loads(msgs[0].to_json())
    d["new_files"][0]["extra_files"] = [env.rel_to_victim()]
    with pytest.raises(InvalidCommitMessageError, match="Unsafe file name"):
        CommitMessage.from_json(json.dumps(d))


def test_json_message_with_external_path_is_refused(env: Env) -> None:
    msgs = written_messages(env)
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
    msgs = written_messages(env)
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
    msgs = written_messages(env)
    crafted = with_file(msgs[0], file_name=_bad_name(env, case))
    data = pickle.dumps(crafted)  # the sender does not check; the receiver must
    with pytest.raises(InvalidCommitMessageError, match="Unsafe file name"):
        pickle.loads(data)
    # a well-formed message still travels
    assert pickle.loads(pickle.dumps(msgs[0])) == msgs[0]


@pytest.mark.parametrize("case", ["parent", "absolute", "external"])
def test_abort_and_commit_refuse_unsafe_files(env: Env, case: str) -> None:
    """The issue's example: abort() deleted ../../victim and commit() accepted it."""
    msgs = written_messages(env)
    written = written_paths(env, msgs)
    if case == "external":
        crafted = with_file(msgs[0], external_path=str(env.victim))
        error: type[LakeError] = UnsupportedFeatureError
    else:
        crafted = with_file(msgs[0], file_name=_bad_name(env, case))
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
    msgs = written_messages(env)
    crafted_json = json.loads(msgs[0].to_json())
    for k, v in changes.items():
        crafted_json[k] = v if not isinstance(v, bytes) else base64.b64encode(v).decode()
    crafted = CommitMessage.from_json(json.dumps(crafted_json))  # well formed: only the table can tell
    written = written_paths(env, msgs)
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
    msgs = written_messages(env)
    crafted = with_file(msgs[0], **file_changes)
    with pytest.raises(InvalidCommitMessageError, match=match):
        env.table.new_committer("job-1").commit([crafted], commit_identifier=1)
    env.assert_table_unchanged(1)


def test_append_table_messages_must_use_bucket_zero(tmp_path: Path) -> None:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.a", SCHEMA, partition_keys=["dt"], options={"bucket": "-1"})
    writer = t.new_writer("u", write_only=True)
    writer.write_arrow(batch([1]))
    msgs = writer.prepare_commit()
    with pytest.raises(InvalidCommitMessageError, match="bucket 3"):
        t.new_committer("u").commit([crafted_message(msgs[0], bucket=3)])
    assert t.new_committer("u").commit(msgs)
    assert t.to_arrow().num_rows == 1


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
        env.catalog.get_table("db.t").write_arrow(batch([9]))
    env.assert_outside_untouched()
    assert not list(env.tmp.glob("x-*"))


def test_default_and_plain_prefixes_still_work(env: Env) -> None:
    t = env.catalog.create_table(
        "db.p", SCHEMA, primary_keys=["k", "dt"],
        options={"bucket": "1", "data-file.prefix": "part.a-", "changelog-file.prefix": ""},
    )
    t.write_arrow(batch([1]))
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
    env.catalog.create_table(f"{ok}.{ok}", SCHEMA).write_arrow(batch([1]))
    env.table.create_tag(ok)
    env.table.store.consumer_manager().record(ok, 1)
    assert ok in env.table.tags()


def test_numeric_tag_names_are_refused_as_in_paimon(env: Env) -> None:
    with pytest.raises(InvalidIdentifierError, match="cannot be a number"):
        env.table.create_tag("1")
    env.table.create_tag("v1")


def _supersede_snapshot_1(t) -> None:
    t.write_arrow(batch([1, 2, 3], v="b"))  # replaces every row: snapshot 1's files become expirable
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
    t.write_arrow(batch([1, 2, 3]))
    bucket = t.paths.root.split("/", 1)[0]
    victim = f"{bucket}/victim"
    t.file_io.write_bytes(victim, b"precious")
    writer = t.new_writer("job", write_only=True)
    writer.write_arrow(batch([10]))
    msgs = writer.prepare_commit()
    bucket_dir = t.paths.bucket_dir("dt=d1", msgs[0].bucket)
    for bad in (os.path.relpath(victim, bucket_dir), victim):
        d = json.loads(msgs[0].to_json())
        d["new_files"][0]["file_name"] = bad
        with pytest.raises(InvalidCommitMessageError):
            CommitMessage.from_json(json.dumps(d))
        crafted = with_file(msgs[0], file_name=bad)
        with pytest.raises(InvalidCommitMessageError):
            t.new_committer("job").abort([crafted])
    # a snapshot naming a list outside the table stops expiry
    t.write_arrow(batch([4]))
    t.write_arrow(batch([5]))
    d = json.loads(t.file_io.read_bytes(t.paths.snapshot_file(1)))
    d["changelogManifestList"] = os.path.relpath(victim, t.paths.manifest_dir)
    t.file_io.overwrite_atomic(t.paths.snapshot_file(1), json.dumps(d).encode())
    with pytest.raises(CorruptMetadataError, match="Unsafe file name"):
        t.expire_snapshots(retain_min=1, retain_max=1)
    assert t.file_io.read_bytes(victim) == b"precious"
    assert sorted(t.to_arrow().column("k").to_pylist()) == [1, 2, 3, 4, 5]
