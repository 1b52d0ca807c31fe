"""Deletes named by commit messages (a process boundary: Spark tasks, JSON, another writer) never
go through a symbolic link out of the table: `TableCommitter.abort` and a writer's abort of
another writer's messages check every path's directory as expiry and orphan removal do
(`TablePaths.ensure_inside` with ``resolve_links``), and refuse, deleting nothing, where one
resolves outside. A message's file names are plain names (test_trust_boundaries.py); what a
plain name cannot say is where its partition directory leads."""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_assets.errors import UnsafePathError
from lake_assets.ops.commit_message import CommitMessage
from tests.reliability.trust_env import Env, batch, fresh_env, with_file


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return fresh_env(tmp_path)


def _message_into_a_linked_partition(env: Env) -> tuple[CommitMessage, Path]:
    """A message of partition dt=evil naming a file that, through the partition directory linked
    out of the table, is a file outside (as a foreign or replayed message could)."""
    t = env.table
    writer = t.new_writer("job-1", write_only=True)
    writer.write_arrow(batch([10], dt="evil", v="new"))
    [msg] = writer.prepare_commit()
    writer.close()
    partition_dir = Path(t.paths.root) / "dt=evil"
    bucket = f"bucket-{msg.bucket}"
    target = env.outside / "moved"
    (target / bucket).mkdir(parents=True)
    for f in (partition_dir / bucket).iterdir():
        f.unlink()  # the writer's own file: not what this test is about
    (partition_dir / bucket).rmdir()
    partition_dir.rmdir()
    partition_dir.symlink_to(target, target_is_directory=True)
    victim = target / bucket / "data-victim.parquet"
    victim.write_bytes(b"precious")
    env.before = env.outside_state()
    return with_file(msg, file_name=victim.name), victim


def test_committer_abort_does_not_delete_through_a_linked_partition(env: Env) -> None:
    msg, victim = _message_into_a_linked_partition(env)
    with pytest.raises(UnsafePathError, match="symlink"):
        env.table.new_committer("job-1").abort([msg])
    assert victim.read_bytes() == b"precious"
    env.assert_outside_untouched()
    env.assert_table_unchanged(1)


def test_writer_abort_of_another_writers_message_does_not_delete_through_a_link(env: Env) -> None:
    msg, victim = _message_into_a_linked_partition(env)
    other = env.table.new_writer("job-2")
    with pytest.raises(UnsafePathError, match="symlink"):
        other.abort([msg])
    other.close()
    assert victim.read_bytes() == b"precious"
    env.assert_outside_untouched()


def test_an_overwrite_drops_a_messages_changelog_only_inside_the_table(env: Env) -> None:
    """An overwrite commits no changelog and deletes the messages' changelog files: not through a
    linked partition directory either (the commit is refused, nothing deleted)."""
    import dataclasses

    from lake_assets.ops.overwrite import overwrite_spec

    msg, victim = _message_into_a_linked_partition(env)
    changelog = dataclasses.replace(msg.new_files[0], file_name=victim.name)
    crafted = dataclasses.replace(msg, new_files=(), new_changelog=(changelog,))
    with pytest.raises(UnsafePathError, match="symlink"):
        env.table.new_committer("job-1").commit([crafted], commit_identifier=1,
                                                overwrite=overwrite_spec(env.table.store, {"dt": "evil"}))
    assert victim.read_bytes() == b"precious"
    env.assert_outside_untouched()
    env.assert_table_unchanged(1)


def test_outputs_of_a_compaction_that_did_not_land_are_left_behind_a_link(env: Env, caplog) -> None:
    """The cleanup after a commit whose data landed and whose compaction did not: a path through a
    link out of the table is left and logged (the commit landed, and must say so), never deleted."""
    import dataclasses

    from lake_assets.ops.commit_cleanup import delete_compaction_outputs

    msg, victim = _message_into_a_linked_partition(env)
    compacted = dataclasses.replace(msg, new_files=(), compact_after=msg.new_files)
    delete_compaction_outputs(env.table.store, [compacted])
    assert victim.read_bytes() == b"precious"
    assert "Not deleting the outputs of a compaction" in caplog.text
    env.assert_outside_untouched()
