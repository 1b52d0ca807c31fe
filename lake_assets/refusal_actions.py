"""What a user can do about a refusal: the second half of every `UnsupportedFeatureError` a table
another engine wrote can meet (`lake_assets.refusal.Refusal.action`, the option registry's
``OptionRule.action``).

Each phrase is advice that holds for the refusal it ends: removing or changing an option is offered
only where that changes nothing Paimon's readers need (the option shapes new files or one engine's
reads), handing the table to Paimon only where Paimon does what lake_assets does not. The SQL is
Paimon's own: Flink's ``ALTER TABLE ... SET / RESET`` and Spark's ``SET / UNSET TBLPROPERTIES``;
lake_assets' own schema change (``table.update_schema()``) does the same. Pure text, no imports.
"""

from __future__ import annotations

# Marks the advice in a message (`lake_assets.refusal.refuse` puts it there): tests find it by this.
ACTION_MARK = "What you can do: "


def remove_option(key: str, *, here: bool = True) -> str:
    """Removing ``key`` from the table's options, in lake_assets (unless not ``here``: the refusal
    blocks schema changes too), Flink and Spark."""
    ours = f"table.update_schema().remove_option({key!r}).commit(), or " if here else ""
    return (f"remove it ({ours}ALTER TABLE ... RESET ({key!r}) in Flink, ALTER TABLE ... UNSET TBLPROPERTIES "
            f"({key!r}) in Spark)")


def set_option(key: str, value: str, *, what: str = "it") -> str:
    """Setting ``key`` to ``value``, in lake_assets, Flink and Spark; ``what`` names the change when
    the refused option is not ``key`` itself."""
    return (f"set {what} (table.update_schema().set_option({key!r}, {value!r}).commit(), or ALTER TABLE ... "
            f"SET ({key!r} = {value!r}) in Flink, ALTER TABLE ... SET TBLPROPERTIES ({key!r} = {value!r}) "
            "in Spark)")


# Copying the rows into a table lake_assets supports: the one way out when the table's files or
# immutable options are what is refused.
COPY_ROWS = "copy its rows into a new table that lake_assets supports (INSERT INTO ... SELECT in Flink or Spark)"
USE_PAIMON = "use Paimon Java (Flink, Spark) or pypaimon for this table"
# Changing the options a refusal names (they shape new files only).
ALTER_NAMED = ("change the option named (table.update_schema().set_option(...).commit(), or ALTER TABLE ... SET "
               "in Flink, SET TBLPROPERTIES in Spark)")
