"""One registry of the merge engines: what each ``merge-engine`` value builds and needs.

Paimon's CoreOptions.MergeEngine with each engine's MergeFunctionFactory, plus the properties of
an engine that the LSM tree around the merge function must honour (which files batch reads see,
what compaction looks up, which changelog producers combine with it). Every caller - the write
path, merge on read, compaction, changelog producers, option validation, `Table` - asks the
registry; none dispatches on an engine's name.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from lake_assets.errors import UnsupportedFeatureError
from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.lsm.merge_engine.deduplicate import Deduplicate
from lake_assets.lsm.merge_engine.first_row import FirstRow
from lake_assets.lsm.merge_engine.function import MergeFunction, MergeFunctionFactory, SchemaFields
from lake_assets.lsm.merge_engine.names import (
    AGGREGATION,
    DEFAULT_MERGE_ENGINE,
    FIRST_ROW,
    MERGE_ENGINE_NAMES,
    PARTIAL_UPDATE,
)
from lake_assets.lsm.merge_engine.partial_update import PartialUpdate
from lake_assets.options import CoreOptions

__all__ = ["DEFAULT_MERGE_ENGINE", "MERGE_ENGINES", "MergeEngine", "engine_of", "merge_engine"]


@dataclass(frozen=True)
class MergeEngine:
    """A ``merge-engine`` value: how its merge function is made and what the LSM tree must do for it."""

    name: str
    factory: MergeFunctionFactory
    # A merge combines the columns of several records (sequence groups, aggregates): reads load
    # every column, not only the projected ones.
    needs_all_columns: bool = False
    # Batch reads see level-0 files. Paimon's batch scan of a first-row table skips them: its rows
    # become visible once compaction moves them up.
    level0_in_batch_reads: bool = True
    # Paimon's CoreOptions.needLookup for the engine: every compaction takes all of level 0
    # (ForceUpLevel0Compaction), so a writer makes its rows visible at once.
    needs_lookup: bool = False
    # Keys are unique across levels 1..max: compaction drops a level-0 record whose key an older
    # level holds (Paimon's FirstRowMergeFunctionWrapper looks it up; `first_row.lookup_files`).
    drops_known_keys: bool = False
    # A key whose new records lose to its old row (e.g. an older sequence.field) still gets an
    # unchanged -U/+U pair in a compaction's changelog, as Paimon's lookup and full-compaction
    # changelog wrappers emit it; first-row's wrapper emits only the +I of a new key.
    changelog_for_unchanged_keys: bool = True
    # The only changelog producers Paimon accepts with the engine (its SchemaValidation); None: any.
    changelog_producers: tuple[str, ...] | None = None
    # The newest record of a key replaces its older rows whatever their values, so compaction can
    # write deletion vectors from keys alone (ops/dv_compact.py); other engines merge the old rows
    # in (ops/dv_old_values.py).
    deletion_vectors_by_key: bool = False
    # Paimon refuses deletion vectors with the engine (SchemaValidation.validateForDeletionVectors)
    refuses_deletion_vectors: bool = False

    def create(
        self, fields: SchemaFields, key_names: Sequence[str], options: CoreOptions,
        not_null: Collection[str] = (), what: str = "",
    ) -> MergeFunction:
        """The merge function for a table with these columns, trimmed primary key and typed options
        (``schema.core_options``); raises `OptionError`/`UnsupportedFeatureError` for options the
        engine cannot honour. ``not_null``: the NOT NULL columns, which the engines that copy a
        record's whole image check (`not_null`); ``what`` names the table in their errors."""
        return self.factory(fields, key_names, options, not_null, what)


# Deduplicate and first-row emit whole input rows: no image is built, nothing to check (as Paimon)
def _deduplicate(
    fields: SchemaFields, key_names: Sequence[str], options: CoreOptions,
    not_null: Collection[str] = (), what: str = "",
) -> MergeFunction:
    # ignore-delete and its fallback keys are table options, read by the writer too
    return Deduplicate(options.ignore_delete)


def _first_row(
    fields: SchemaFields, key_names: Sequence[str], options: CoreOptions,
    not_null: Collection[str] = (), what: str = "",
) -> MergeFunction:
    return FirstRow(options.ignore_delete)


MERGE_ENGINES: Mapping[str, MergeEngine] = {
    engine.name: engine
    for engine in (
        MergeEngine(DEFAULT_MERGE_ENGINE, _deduplicate, deletion_vectors_by_key=True),
        MergeEngine(PARTIAL_UPDATE, PartialUpdate, needs_all_columns=True),
        MergeEngine(AGGREGATION, Aggregation, needs_all_columns=True),
        MergeEngine(
            FIRST_ROW, _first_row,
            level0_in_batch_reads=False, needs_lookup=True, drops_known_keys=True,
            changelog_for_unchanged_keys=False, changelog_producers=("none", "lookup"), refuses_deletion_vectors=True,
        ),
    )
}
# The option registry accepts the values of `names`: an engine missing here (or extra) would be
# accepted at create and then fail at the first write, so refuse to import instead.
if tuple(MERGE_ENGINES) != MERGE_ENGINE_NAMES:
    raise RuntimeError(f"merge-engine registry {tuple(MERGE_ENGINES)} differs from names {MERGE_ENGINE_NAMES}")


def merge_engine(name: str, what: str = "") -> MergeEngine:
    """The engine of ``merge-engine = name`` (case and surrounding blanks ignored, as Paimon's enum
    parsing); `UnsupportedFeatureError` for any other value, its message starting with ``what``
    (e.g. "Table db.t") when given."""
    engine = MERGE_ENGINES.get(name.strip().lower())
    if engine is None:
        prefix = f"{what}: " if what else ""
        raise UnsupportedFeatureError(
            f"{prefix}merge-engine {name!r} is not supported (supported: {', '.join(sorted(MERGE_ENGINES))})"
        )
    return engine


def engine_of(options: CoreOptions, what: str = "") -> MergeEngine:
    """The engine a table's options select (``merge-engine``, default deduplicate)."""
    return merge_engine(options.merge_engine, what)
