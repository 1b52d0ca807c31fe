"""The schema changes a user can ask for: small frozen dataclasses, and the type and position forms
they take. `lake_assets.ops.schema_apply` applies them; `lake_assets.ops.schema_change` commits the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

import pyarrow as pa

from lake_assets.spec.data_types import DataType

TypeLike: TypeAlias = pa.DataType | DataType | str
"""A column type: an Arrow type, a Paimon `DataType`, or Paimon type text such as ``"VARCHAR(20)"``.

Arrow cannot express VARCHAR(n), CHAR(n) or TIMESTAMP(p) for every p, hence the other two forms.
"""

Position: TypeAlias = Literal["first", "last"] | tuple[Literal["after", "before"], str]
"""Where a column goes: ``"first"``, ``"last"``, ``("after", col)`` or ``("before", col)``."""


# ------------------------------------------------------------------------------------------- changes
@dataclass(frozen=True)
class AddColumn:
    """Add a column (nullable only: rows written before it read as null). ``position`` None = last."""

    name: str
    arrow_type: TypeLike
    nullable: bool = True
    comment: str | None = None
    position: Position | None = None


@dataclass(frozen=True)
class RenameColumn:
    """Rename a column; it keeps its field id, so old files follow the new name."""

    old: str
    new: str


@dataclass(frozen=True)
class DropColumn:
    """Drop a column; its id is retired, so a later column of the same name starts empty."""

    name: str


@dataclass(frozen=True)
class UpdateColumnType:
    """Widen a column's type losslessly; nullability is kept."""

    name: str
    arrow_type: TypeLike


@dataclass(frozen=True)
class UpdateColumnNullability:
    """Make a column nullable (NOT NULL → nullable only)."""

    name: str
    nullable: bool


@dataclass(frozen=True)
class MoveColumn:
    """Move a column to ``position``."""

    name: str
    position: Position


@dataclass(frozen=True)
class UpdateColumnComment:
    """Set (or with None remove) a column's description."""

    name: str
    comment: str | None


@dataclass(frozen=True)
class SetOption:
    """Set a table option."""

    key: str
    value: str


@dataclass(frozen=True)
class RemoveOption:
    """Remove a table option (it falls back to its default)."""

    key: str


@dataclass(frozen=True)
class UpdateComment:
    """Set (or with None remove) the table comment."""

    comment: str | None


SchemaChange: TypeAlias = (
    AddColumn
    | RenameColumn
    | DropColumn
    | UpdateColumnType
    | UpdateColumnNullability
    | MoveColumn
    | UpdateColumnComment
    | SetOption
    | RemoveOption
    | UpdateComment
)
