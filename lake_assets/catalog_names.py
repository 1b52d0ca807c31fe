"""Names of databases, tables, tags and consumers: a safe subset that can never escape a directory."""

from __future__ import annotations

import re

from lake_assets.errors import InvalidIdentifierError

DEFAULT_DATABASE = "default"
# fullmatch, not `^...$`: `$` also matches before a final "\n", which let "release\n" through.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-$]*")
# Names become file names: `<db>.db`, `tag-<name>`, `consumer-<id>`, and the temporary
# `.tag-<name>.<32 hex>.tmp` of an atomic create. 200 keeps all of them within a filesystem's
# 255-byte component limit (names are ASCII here, so characters are bytes).
MAX_NAME_LENGTH = 200


def check_name(name: str, context: str | None = None) -> str:
    """Return ``name`` if it is letters, digits, '_', '-' or '$' (no '/', '..', spaces, dots or
    control characters) and at most 200 characters; else raise `InvalidIdentifierError`."""
    where = f" in {context!r}" if context and context != name else ""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidIdentifierError(
            f"Invalid name {name!r}{where}: use letters, digits, '_', '-' or '$' (no '/', '..', spaces or dots)"
        )
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidIdentifierError(
            f"Invalid name {name[:40]!r}...{where}: {len(name)} characters long (at most {MAX_NAME_LENGTH})"
        )
    return name


# Paimon names its hourly automatic tags "2024-01-01 09": tag names may hold single inner spaces
# (a space cannot leave a directory; leading, trailing and repeated ones stay refused).
_INNER_SPACES = re.compile(r"(?<=[A-Za-z0-9_\-$]) (?=[A-Za-z0-9_\-$])")


def check_tag_name(name: str, table_name: str) -> str:
    """A tag name: `check_name` (single inner spaces allowed, as in Paimon's hourly tags), and not
    all digits (as Paimon: "5" would read as a snapshot id wherever an id or a tag is accepted,
    e.g. `read_changes`)."""
    check_name(_INNER_SPACES.sub("_", name) if isinstance(name, str) else name, f"tag of {table_name}")
    if name.isdigit():
        raise InvalidIdentifierError(
            f"Invalid tag name {name!r} for {table_name}: a tag name cannot be a number "
            "(it would read as a snapshot id)"
        )
    return name


def parse_identifier(identifier: str) -> tuple[str, str]:
    """Split ``db.table`` (a bare name means the default database) and validate both names."""
    if not isinstance(identifier, str):
        raise InvalidIdentifierError(f"Table identifier must be a string 'db.table', got {identifier!r}")
    parts = identifier.split(".")
    if len(parts) == 1:
        parts = [DEFAULT_DATABASE, parts[0]]
    if len(parts) != 2:
        raise InvalidIdentifierError(
            f"Invalid table identifier {identifier!r}: expected 'database.table' with names of "
            "letters, digits, '_', '-' or '$'"
        )
    for p in parts:
        check_name(p, identifier)
    return parts[0], parts[1]
