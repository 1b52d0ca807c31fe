"""The key filter of a primary-key read: the part of a read's filter on primary-key columns.

Every version of a key shares its key columns, so a reader may drop the rows whose key the filter
rejects before the merge (`ops.read.SplitReader.read_file`): the merge then holds one file's
matches, not a whole section's rows, and its result is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow.compute as pc

from lake_assets.predicate import Predicate


def key_terms(predicate: Predicate | None, key_names: Sequence[str]) -> Predicate | None:
    """The part of ``predicate`` on primary-key columns only, weakened to be implied by it (each OR
    clause keeps its key terms); None when some clause does not constrain the key."""
    if predicate is None or predicate.expression is not None or not predicate.clauses:
        return None
    keys = set(key_names)
    clauses = [tuple(t for t in clause if t[0] in keys) for clause in predicate.clauses]
    if not all(clauses):
        return None
    return Predicate(tuple(clauses), None, predicate.bound)  # its literals stay bound


def key_predicate(predicate: Predicate | None, key_names: Sequence[str]) -> pc.Expression | None:
    """`key_terms` as an Arrow expression (IEEE float semantics: the read uses `key_terms`)."""
    terms = key_terms(predicate, key_names)
    return None if terms is None else terms.to_expression()
