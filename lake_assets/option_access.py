"""How `CoreOptions` reads a table's option map: every value parsed once, through its registry row.

`OptionAccess` is the base of the typed view (`lake_assets.options.CoreOptions`, with the merge
options of `lake_assets.option_merge.MergeOptions`): the raw map as the schema file stores it,
its values parsed once by `lake_assets.option_types.parse_value`, and the small typed getters the
accessors are written with. An unset option reads as its registry row's default unless the
accessor gives its own (defaults that depend on other options, e.g. ``num-levels``). An option
with fallback keys reads as Paimon's ``Options.get`` reads it: its own key when set, else the first
of its fallback keys that is set (`lake_assets.option_rules.carried_key`); a fallback key shadowed
by an earlier one is never read nor parsed, as in Java.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from lake_assets.errors import OptionError, UnsupportedFeatureError
from lake_assets.option_rules import RULES, carried_key, is_shadowed, rule_for
from lake_assets.option_types import LakeErrorLike, parse_value, raise_all


@dataclass(frozen=True)
class OptionAccess:
    """A table's option map (``raw``, strings as stored) and its values parsed once."""

    raw: Mapping[str, str]
    has_primary_key: bool = True

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key, default)

    @cached_property
    def values(self) -> dict[str, object]:
        """Every option of the registry this map carries, parsed once through its row.

        Raises one `OptionError` naming every key and value that does not parse: a table's schema
        is validated at create and ALTER, so this fails only for a schema another engine wrote.
        """
        out: dict[str, object] = {}
        problems: list[LakeErrorLike] = []
        for key, text in self.raw.items():
            rule = rule_for(key)
            if rule is None or rule.writer_only or is_shadowed(self.raw, key):
                # format writers' options are parsed where files are written; a bad value of one
                # refuses writes only (table_support), not every option access; a shadowed
                # fallback key is never read
                continue
            try:
                out[key] = parse_value(rule, text)
            except (OptionError, UnsupportedFeatureError) as exc:
                problems.append(exc)
        raise_all(problems)
        return out

    def carried_key(self, key: str) -> str | None:
        """The key this map sets option ``key`` with (itself, else its first fallback key set), or None."""
        return carried_key(self.raw, key)

    def _typed(self, key: str, default: object = None) -> object:
        """The option's parsed value (by its key, else its first fallback key set); unset:
        ``default``, or the registry's default when None."""
        carried = carried_key(self.raw, key)
        if carried is not None:
            return self.values[carried]
        return RULES[key].default if default is None else default

    def _int(self, key: str, default: int | None = None) -> int:
        return self._typed(key, default)  # type: ignore[return-value]

    def _bool(self, key: str, default: bool | None = None) -> bool:
        return self._typed(key, default)  # type: ignore[return-value]

    def _size(self, key: str, default: int | None = None) -> int:
        return self._typed(key, default)  # type: ignore[return-value]

    def _duration(self, key: str, default: int | None = None) -> int:
        return self._typed(key, default)  # type: ignore[return-value]

    def _choice(self, key: str) -> str:
        """A string option with a set of values, as Paimon matches it (`OptionRule.fold`): the
        choice's lower-case name. A writers' option is parsed here, on use (`OptionError`)."""
        carried = carried_key(self.raw, key)
        if carried is None:
            return str(RULES[key].default)
        if carried in self.values:
            return str(self.values[carried])
        rule = rule_for(carried)
        return str(parse_value(rule, self.raw[carried]) if rule is not None else self.raw[carried])

    def _list(self, key: str) -> tuple[str, ...]:
        v = self.raw.get(key)
        return tuple(s.strip() for s in v.split(",") if s.strip()) if v else ()
