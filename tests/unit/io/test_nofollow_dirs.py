"""Directories opened below a root without following a link out of it (`io.nofollow_dirs`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lake_assets.errors import UnsafePathError
from lake_assets.io.nofollow_dirs import open_below, relative_parts, rename_below, unlink_below


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "table", tmp_path / "outside"
    (root / "p=a").mkdir(parents=True)
    outside.mkdir()
    (outside / "f").write_bytes(b"keep")
    return root, outside


def test_missing_directories_are_made_below_the_root(tmp_path):
    root, _ = _tree(tmp_path)
    with open_below(str(root), ["p=b", "bucket-0"], create=True, what="x") as fd:
        os.close(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    assert (root / "p=b" / "bucket-0" / "f").is_file()


@pytest.mark.parametrize("follow_inside", [True, False])
def test_a_link_out_of_the_root_is_refused_and_nothing_is_made_behind_it(tmp_path, follow_inside):
    root, outside = _tree(tmp_path)
    (root / "p=a" / "bucket-0").symlink_to(outside)
    with pytest.raises(UnsafePathError, match=r"bucket-0 is a symbolic link to .*outside"), \
            open_below(str(root), ["p=a", "bucket-0", "deeper"], create=True, what="x", follow_inside=follow_inside):
        pass
    assert sorted(p.name for p in outside.iterdir()) == ["f"]


def test_a_link_inside_the_root_is_followed_only_when_allowed(tmp_path):
    root, _ = _tree(tmp_path)
    (root / "p=b").symlink_to(root / "p=a")
    with open_below(str(root), ["p=b"], create=False, what="x") as fd:
        assert os.path.samestat(os.fstat(fd), os.stat(root / "p=a"))
    with pytest.raises(UnsafePathError, match=r"p=b is a symbolic link to"), \
            open_below(str(root), ["p=b"], create=False, what="x", follow_inside=False):
        pass


def test_a_file_where_a_directory_belongs_and_odd_names_are_refused(tmp_path):
    root, _ = _tree(tmp_path)
    (root / "p=a" / "file").write_bytes(b"")
    for parts in (["p=a", "file"], ["p=a", ".."], ["a/b"], ["a\0"]):
        with pytest.raises(UnsafePathError), open_below(str(root), parts, create=True, what="x"):
            pass
    for path in (str(root), str(tmp_path / "elsewhere" / "f"), str(root / ".." / "outside" / "f"), "rel/f"):
        with pytest.raises(UnsafePathError):
            relative_parts(str(root), path)


def test_unlink_through_a_link_out_removes_nothing(tmp_path):
    root, outside = _tree(tmp_path)
    (root / "p=a" / "bucket-0").symlink_to(outside)
    assert unlink_below(str(root), str(root / "p=a" / "bucket-0" / "f")) is False
    assert (outside / "f").read_bytes() == b"keep"
    (root / "p=a" / "g").write_bytes(b"")
    assert unlink_below(str(root), str(root / "p=a" / "g")) is True and not (root / "p=a" / "g").exists()


def test_rename_makes_a_directory_removed_after_its_opening_again(tmp_path, monkeypatch):
    """Orphan removal removes an emptied bucket directory between its opening and the rename."""
    from lake_assets.io import nofollow_dirs

    root, _ = _tree(tmp_path)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "f").write_bytes(b"data")
    real_rename, calls = os.rename, []

    def remover_first(src: str, dst: str, **kw: int) -> None:
        calls.append(dst)
        if len(calls) == 1:
            os.rmdir(root / "p=a" / "bucket-0")  # the clean lands between open and rename
        real_rename(src, dst, **kw)

    monkeypatch.setattr(nofollow_dirs.os, "rename", remover_first)
    src_fd = os.open(tmp_path / "src", os.O_RDONLY | os.O_DIRECTORY)
    try:
        rename_below(src_fd, "f", str(root), str(root / "p=a" / "bucket-0" / "g"))
    finally:
        os.close(src_fd)
    assert len(calls) == 2 and (root / "p=a" / "bucket-0" / "g").read_bytes() == b"data"
