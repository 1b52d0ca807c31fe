"""Names of databases, tables and tags: a safe subset that can never escape a directory."""

from __future__ import annotations

import re

from lake_assets.errors import InvalidIdentifierError

DEFAULT_DATABASE = "default"
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_\-$]*$")


def check_name(name: str, context: str | None = None) -> str:
    """Return ``name`` if it is letters, digits, '_', '-' or '$' (no '/', '..', spaces or dots)."""
    if not isinstance(name, str) or not _NAME.match(name):
        where = f" in {context!r}" if context and context != name else ""
        raise InvalidIdentifierError(
            f"Invalid name {name!r}{where}: use letters, digits, '_', '-' or '$' (no '/', '..', spaces or dots)"
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
