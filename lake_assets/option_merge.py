"""The merge options of `CoreOptions`: what the merge engines and the LSM tree around them read.

``merge-engine`` and its switches (``ignore-delete``, read through its fallback keys as every
option, the remove-record-on-delete options), ``sequence.field``, ``rowkind.field``, the changelog producer,
and the per-field options ``fields.<column>.<suffix>`` (aggregate functions, retraction handling,
listagg delimiters, sequence groups). Typed accessors over the registry rows
(`lake_assets.option_rules`); the engines check the columns they name
(`lake_assets.lsm.merge_engine.engine_options`).
"""

from __future__ import annotations

from dataclasses import dataclass

from lake_assets.option_access import OptionAccess
from lake_assets.option_rules import RULES
from lake_assets.option_rules_fields import FIELD_OPTION, FIELD_RULES

# Paimon's CoreOptions.IGNORE_DELETE: its key, then its fallback keys in Paimon's order (the
# registry row's). Paimon's Options.get takes the first of them the table sets (so
# ``ignore-delete = false`` wins over a fallback key set to true), for every engine and in the writer alike.
IGNORE_DELETE_KEYS: tuple[str, ...] = ("ignore-delete", *RULES["ignore-delete"].fallback_keys)


@dataclass(frozen=True)
class MergeOptions(OptionAccess):
    """The options that decide how the records of one key merge (see the module docstring)."""

    # ---- per-field options (fields.<column>.<suffix>)
    def field_option(self, column: str, suffix: str) -> object:
        """``fields.<column>.<suffix>`` parsed, or the row's default when unset."""
        key = f"fields.{column}.{suffix}"
        return self.values[key] if key in self.raw else FIELD_RULES[suffix].default

    def aggregate_function(self, column: str) -> str | None:
        """``fields.<column>.aggregate-function``, else ``fields.default-aggregate-function`` (or None)."""
        own = self.field_option(column, "aggregate-function")
        return str(own) if own is not None else self.default_aggregate_function

    @property
    def default_aggregate_function(self) -> str | None:
        return self.raw.get("fields.default-aggregate-function") or None

    def ignore_retract(self, column: str) -> bool:
        return bool(self.field_option(column, "ignore-retract"))

    def list_agg_delimiter(self, column: str) -> str:
        return str(self.field_option(column, "list-agg-delimiter"))

    @property
    def sequence_groups(self) -> dict[tuple[str, ...], tuple[str, ...]]:
        """``fields.<seq>[,<seq>...].sequence-group``: sequence fields → the columns they order."""
        out: dict[tuple[str, ...], tuple[str, ...]] = {}
        for key in sorted(self.raw):
            m = FIELD_OPTION.match(key)
            if m and m.group("suffix") == "sequence-group":
                members = tuple(s.strip() for s in str(self.raw[key]).split(",") if s.strip())
                out[tuple(m.group("field").split(","))] = members
        return out

    # ---- engine switches
    @property
    def merge_engine(self) -> str:
        return self._choice("merge-engine")

    @property
    def ignore_delete(self) -> bool:
        """Whether -U/-D records are dropped (writer and merge alike): the first of
        `IGNORE_DELETE_KEYS` the table sets decides, as in Paimon."""
        return self._bool("ignore-delete")

    @property
    def aggregation_remove_record_on_delete(self) -> bool:
        return self._bool("aggregation.remove-record-on-delete")

    @property
    def partial_update_remove_record_on_delete(self) -> bool:
        return self._bool("partial-update.remove-record-on-delete")

    @property
    def partial_update_remove_record_on_sequence_group(self) -> tuple[str, ...]:
        """The sequence fields of ``partial-update.remove-record-on-sequence-group``."""
        return self._list("partial-update.remove-record-on-sequence-group")

    # ---- ordering and changelog
    @property
    def changelog_producer(self) -> str:
        return self._choice("changelog-producer")

    @property
    def changelog_row_deduplicate(self) -> bool:
        return self._bool("changelog-producer.row-deduplicate")

    @property
    def streaming_read_overwrite(self) -> bool:
        return self._bool("streaming-read-overwrite")

    @property
    def streaming_read_append_overwrite(self) -> bool:
        return self._bool("streaming-read-append-overwrite")

    @property
    def sequence_fields(self) -> tuple[str, ...]:
        return self._list("sequence.field")

    @property
    def sequence_descending(self) -> bool:
        return self._typed("sequence.field.sort-order") == "descending"

    @property
    def rowkind_field(self) -> str | None:
        return self.raw.get("rowkind.field") or None
