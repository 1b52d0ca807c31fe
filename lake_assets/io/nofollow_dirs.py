"""Directories below a trusted root opened one component at a time, never through a symbolic link
that leads out of the root (local disks only).

``os.makedirs(path)`` and ``os.rename(src, path)`` follow every symbolic link on the way: a
partition directory of a table swapped for a link to ``/elsewhere`` makes them create directories
and land files there, and a check of the resolved path beforehand leaves the window between the
check and the call. Here each component is opened with ``O_NOFOLLOW | O_DIRECTORY`` relative to
the descriptor of its parent, starting from the root's descriptor, and the caller acts relative to
the last descriptor (``dir_fd``): what it touches is below the root, whatever is swapped meanwhile.

A component that is a symbolic link is followed only when the link resolves inside the root (a
table may link a partition to another of its own directories, as `TablePaths.ensure_inside` with
``resolve_links`` allows); the descent then starts again from the root along the resolved path,
still without following anything, so a link swapped after it was resolved is caught again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from lake_assets.errors import UnsafePathError

# How often a move makes its directory again when it keeps vanishing (as `local.in_directory`).
_DIRECTORY_ROUNDS = 64
# Links followed in one descent before giving up (Linux's own limit for a path is 40).
_MAX_LINKS = 40
NOFOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def relative_parts(root: str, path: str) -> list[str]:
    """The components of ``path`` below ``root`` (both folded lexically); `UnsafePathError` when
    ``path`` is not strictly below ``root``."""
    top = posixpath.normpath(root)
    norm = posixpath.normpath(path)
    rel = posixpath.relpath(norm, top)
    if not posixpath.isabs(norm) or rel == "." or rel == ".." or rel.startswith("../"):
        raise UnsafePathError(f"Refusing to touch {path!r}: it is not inside the directory {root}")
    return rel.split("/")


@contextmanager
def open_below(root: str, parts: Sequence[str], *, create: bool, what: str,
               follow_inside: bool = True, real_root: str | None = None) -> Iterator[int]:
    """A descriptor of directory ``root/parts...``, opened as the module says (closed on exit).

    With ``create``, missing directories are made (``mkdir`` relative to the parent's descriptor;
    a missing root by ``os.makedirs``).
    A component that is a symbolic link resolving outside ``root``, or anything but a directory,
    raises `UnsafePathError` naming ``what``; a missing one without ``create`` raises
    `FileNotFoundError`. ``root`` itself is trusted (it may be reached through links). Without
    ``follow_inside`` every link is refused, wherever it leads. ``real_root``: ``root`` resolved
    once by the caller (else here, on every call); it only places a link's target relative to the
    root, the descent itself always starts from the root's own descriptor."""
    real_root = os.path.realpath(root) if real_root is None else real_root
    todo = list(parts)
    links = made = 0
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        if not create:
            raise
        os.makedirs(root, exist_ok=True)  # a new table's directory: the root is trusted, links and all
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    done: list[str] = []  # the components below the root ``fd`` stands for
    try:
        while todo:
            name = todo.pop(0)
            if name in ("", ".", "..") or "/" in name or "\0" in name:
                raise UnsafePathError(f"Refusing to touch {what}: {name!r} is not a directory name under {root}")
            try:
                child = os.open(name, NOFOLLOW_DIR, dir_fd=fd)
            except FileNotFoundError:
                made += 1
                if not create or made > _DIRECTORY_ROUNDS:
                    raise
                with contextlib.suppress(FileExistsError):  # made meanwhile: opened below as any other
                    os.mkdir(name, dir_fd=fd)
                todo.insert(0, name)
                continue
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                here = posixpath.join(real_root, *done)
                try:
                    target = os.readlink(name, dir_fd=fd)
                except OSError:  # not a link: a file where a directory belongs
                    raise UnsafePathError(f"Refusing to touch {what}: {posixpath.join(here, name)} is not a "
                                          "directory") from None
                resolved = os.path.realpath(posixpath.join(here, target))
                links += 1
                inside = resolved == real_root or resolved.startswith(real_root + "/")
                if not follow_inside or links > _MAX_LINKS or not inside:
                    raise UnsafePathError(
                        f"Refusing to touch {what}: {posixpath.join(here, name)} is a symbolic link to "
                        f"{target!r}" + ("" if inside else f", outside the table directory {root}")) from None
                # Start again from the root along the resolved path, nothing followed on the way.
                os.close(fd)
                fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
                below = posixpath.relpath(resolved, real_root)
                todo = ([] if below == "." else below.split("/")) + todo
                done = []
                continue
            os.close(fd)
            fd = child
            done.append(name)
        yield fd
    finally:
        os.close(fd)


def unlink_below(root: str, path: str) -> bool:
    """Remove the file ``path`` below ``root`` through `open_below` (a directory on the way that
    leads out of the root, or a missing one, removes nothing); whether a file was removed."""
    parts = relative_parts(root, path)
    try:
        with open_below(root, parts[:-1], create=False, what=path) as fd:
            os.unlink(parts[-1], dir_fd=fd)
    except (FileNotFoundError, UnsafePathError):
        return False
    return True


def rename_below(src_fd: int, source: str, root: str, dest: str, *, real_root: str | None = None) -> None:
    """Move ``source`` (a name in the directory ``src_fd``) to ``dest`` below ``root``, the
    destination's directories made and opened by `open_below`. Orphan removal may remove an
    emptied directory between its opening and the rename (the rename then finds none): it is made
    again, as `local.in_directory` does; a missing source is raised."""
    parts = relative_parts(root, dest)
    for _ in range(_DIRECTORY_ROUNDS):
        with open_below(root, parts[:-1], create=True, what=dest, real_root=real_root) as dst_fd:
            try:
                os.rename(source, parts[-1], src_dir_fd=src_fd, dst_dir_fd=dst_fd)
                return
            except FileNotFoundError:
                os.stat(source, dir_fd=src_fd, follow_symlinks=False)  # the source itself gone: raised
    raise FileNotFoundError(errno.ENOENT, "directory kept vanishing while a file was moved into it", dest)
