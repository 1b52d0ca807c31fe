"""`LocalFileIO` below a table root (`confine_to_table`): every write, rename and delete, on real
directories and real symbolic links (`lake_assets.io.table_confinement`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lake_assets.errors import UnsafePathError
from lake_assets.io import table_confinement as confined
from lake_assets.io.local import LocalFileIO


def _setup(tmp_path: Path) -> tuple[LocalFileIO, Path, Path]:
    root, outside = tmp_path / "t", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "kept").write_bytes(b"keep")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    fio = LocalFileIO()
    fio.confine_to_table(str(root))
    return fio, root, outside


def _open_output(fio: LocalFileIO, path: str) -> None:
    out = fio.open_output(path)
    out.write(b"data")
    out.close()


def _prepared(fio: LocalFileIO, path: str) -> None:
    assert fio.prepare_create(path, b"data").create()


ACTS: dict[str, Callable[[LocalFileIO, str], object]] = {
    "write_bytes": lambda fio, p: fio.write_bytes(p, b"data"),
    "open_output": _open_output,
    "overwrite_atomic": lambda fio, p: fio.overwrite_atomic(p, b"data"),
    "try_create": lambda fio, p: fio.try_create(p, b"data"),
    "prepare_create": _prepared,
    "mkdirs": lambda fio, p: fio.mkdirs(p),
    "delete": lambda fio, p: fio.delete(p),
    "delete_tree": lambda fio, p: fio.delete_tree(p),
    # a file staged in the table (as the native Spark write's) moved in
    "rename": lambda fio, p: fio.rename(str(next(q for q in Path(p).parents if q.name == "t") / "staged"), p),
}


@pytest.mark.parametrize("act", list(ACTS))
def test_nothing_is_done_through_a_directory_linked_out_of_the_table(tmp_path: Path, act: str) -> None:
    fio, root, outside = _setup(tmp_path)
    (root / "staged").write_bytes(b"data")
    target = "kept" if act in ("delete", "delete_tree") else "new"
    with pytest.raises(UnsafePathError, match=r"linked is a symbolic link to .*outside the table"):
        ACTS[act](fio, str(root / "linked" / target))
    assert sorted(p.name for p in outside.iterdir()) == ["kept"]
    assert (outside / "kept").read_bytes() == b"keep"


@pytest.mark.parametrize("act", [a for a in ACTS if a not in ("delete", "delete_tree")])
def test_a_link_inside_the_table_is_followed_and_a_plain_directory_made(tmp_path: Path, act: str) -> None:
    fio, root, _ = _setup(tmp_path)
    (root / "staged").write_bytes(b"data")
    (root / "real").mkdir()
    (root / "inner").symlink_to(root / "real", target_is_directory=True)
    ACTS[act](fio, str(root / "inner" / "f"))
    assert (root / "real" / "f").exists()
    (root / "staged").write_bytes(b"data")
    ACTS[act](fio, str(root / "p=a" / "bucket-0" / "f"))
    assert (root / "p=a" / "bucket-0" / "f").exists()


def test_a_file_name_that_is_a_link_is_not_written_through(tmp_path: Path) -> None:
    fio, root, outside = _setup(tmp_path)
    (root / "data-0").symlink_to(outside / "kept")
    for act in ("write_bytes", "open_output"):
        with pytest.raises(UnsafePathError, match="is a symbolic link"):
            ACTS[act](fio, str(root / "data-0"))
    assert fio.try_create(str(root / "data-0"), b"data") is False  # the name is taken, by the link
    fio.overwrite_atomic(str(root / "data-0"), b"new")  # replaces the link itself
    assert (root / "data-0").read_bytes() == b"new" and not (root / "data-0").is_symlink()
    (root / "data-1").symlink_to(outside / "kept")
    assert fio.delete(str(root / "data-1")) and not (root / "data-1").is_symlink()
    assert (outside / "kept").read_bytes() == b"keep"


def test_a_table_root_that_is_a_link_is_written_and_paths_outside_every_table_as_before(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "wh").mkdir()
    (tmp_path / "wh" / "t").symlink_to(elsewhere, target_is_directory=True)
    fio = LocalFileIO()
    fio.confine_to_table(str(tmp_path / "wh" / "t"))
    fio.write_bytes(str(tmp_path / "wh" / "t" / "snapshot" / "LATEST"), b"1")
    assert (elsewhere / "snapshot" / "LATEST").read_bytes() == b"1"
    (tmp_path / "wh" / "db.db").symlink_to(elsewhere, target_is_directory=True)  # no table root below it
    fio.write_bytes(str(tmp_path / "wh" / "db.db" / "x"), b"2")
    assert (elsewhere / "x").read_bytes() == b"2"


def test_a_directory_removed_under_a_write_is_made_again_and_other_misses_raised(tmp_path: Path) -> None:
    """Orphan removal may rmdir the directory between its opening and the file's creation: the
    act runs again in a new directory. A missing file with its directory in place is raised."""
    fio, root, _ = _setup(tmp_path)
    below = confined.TableRoots()
    below.add(str(root))
    where = below.below(str(root / "p=a" / "bucket-0" / "f"))
    assert where is not None
    rounds: list[int] = []

    def act(fd: int, name: str) -> None:
        rounds.append(fd)
        if len(rounds) == 1:
            os.rmdir(root / "p=a" / "bucket-0")  # the clean's rmdir, right after the opening
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT, 0o666, dir_fd=fd))

    confined.act_in(where, act)
    assert len(rounds) == 2 and (root / "p=a" / "bucket-0" / "f").is_file()
    with pytest.raises(FileNotFoundError):
        fio.rename(str(root / "missing"), str(root / "p=a" / "bucket-0" / "g"))
