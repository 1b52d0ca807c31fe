"""``listagg``: the strings of a key joined with ``fields.<c>.list-agg-delimiter`` (default ",").

Paimon 2.0+ (#8480, "Ignore blank values in FieldListaggAgg") skips blank strings, as Java's
``StringUtils.isBlank`` sees them (empty, or every char ``Character.isWhitespace``):
``agg(acc, v)`` is ``acc`` when ``v`` is null or blank, ``v`` when ``acc`` is null or blank, else
``acc + delimiter + v``. So a fold from nothing joins the non-blank values (null when there are
none), and an accumulator that is itself blank (a -D's image under
``aggregation.remove-record-on-delete``, `aggregate_reset`) stays only while no non-blank value
comes. Java 0.9-1.4 joined blank values too; lake_assets follows 2.0+ (as for integer overflow).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.lsm.merge_engine.grouping import hash_aggregate, np_bool, valid_mask

# Java's Character.isWhitespace: the space, line and paragraph separators but the no-break ones
# (U+00A0, U+2007, U+202F), and \t \n \x0B \f \r \x1C-\x1F (Java 11+'s Unicode; Java 8's 6.2
# also counts U+180E, which later Unicode moved out of the separators)
_BLANK = ("^[\\t\\n\\x0B\\f\\r\\x1C-\\x1F \\x{1680}\\x{2000}-\\x{2006}\\x{2008}-\\x{200A}"
          "\\x{2028}\\x{2029}\\x{205F}\\x{3000}]*$")


def non_blank(col: pa.Array) -> np.ndarray:
    """True where ``col`` holds a string Java's ``StringUtils.isBlank`` does not call blank."""
    valid = valid_mask(col)
    if not len(col):
        return valid
    blank = np_bool(pc.fill_null(pc.match_substring_regex(col, _BLANK), True))
    out: np.ndarray = valid & ~blank
    return out


def fold_listagg(values: pa.Array, gid: np.ndarray, n_groups: int, delimiter: str, dtype: pa.DataType) -> pa.Array:
    """The non-blank ``values`` of each group joined in entry order (null where none)."""
    lists = hash_aggregate(values, gid, n_groups, "list")
    return pc.binary_join(lists, delimiter).cast(dtype)


__all__ = ["fold_listagg", "non_blank"]
