"""Column default values: the table option ``fields.<column>.default-value``, filled on read.

What Paimon Java 0.9 does (``DefaultValueAssigner``, ``AbstractDataTableRead``,
``SchemaValidation.validateDefaultValues``), which lake_assets follows:

* Every read of the table's rows - batch reads, streaming and incremental reads, changelog rows of
  every kind - returns the default in place of a null of the column, after the merge (a
  partial-update or aggregation table's merged row, not each input row) and after schema
  evolution (a column added later reads as its default in older files). Every null, not only the
  columns a writer left out: the files never hold the default.
* A filter on the column is applied to the filled rows. Pruning by stats, partitions, buckets or
  file indexes never uses a term on the column (``handlePredicate`` drops them): a file whose stats
  show only nulls may hold rows that now equal the default.
* Writers and compaction write the rows as they are (nulls stay null), so Java 0.9 reads our files
  as its own, and changing the default with ALTER changes what every row read returns.
* At create and ALTER the text must cast to the column's type (`default_value_cast`), and neither
  a partition column nor a primary-key column may have one.

Paimon 1.3 moved defaults to the write path (apache/paimon#5754, #5804): the schema's field
``defaultValue`` (its ``updateColumnDefaultValue`` schema change, which pypaimon 2.1 also has) is
filled into the rows a writer writes (``TableWriteImpl``: every null of the column, after the NOT
NULL check; text in single quotes unquoted), and the option is no longer read. lake_assets does the
same for such a table (`WriteDefaults`, applied by `ops.conform`): the files then hold the values,
so every reader - Java 0.9's too, which knows neither field defaults nor fills them - reads them
as written. Which behaviour a table gets follows what it carries: the option, 0.9's read-time fill
(1.3+ readers ignore it, as they would the table's nulls); a field ``defaultValue``, 1.3's
write-time fill (the only thing it means).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from lake_assets.errors import OptionError
from lake_assets.ops.default_value_cast import DefaultValueError, NullDefaultError, to_scalar
from lake_assets.refusal import READS, Op, Refusal
from lake_assets.spec.data_types import DataField
from lake_assets.spec.schema import TableSchema

if TYPE_CHECKING:  # the table facade imports this module's refusals, and no filter machinery
    from lake_assets.predicate import Predicate

_PREFIX = "fields."
_SUFFIX = ".default-value"


def option_defaults(options: Mapping[str, str]) -> dict[str, str]:
    """Column name -> default text of every ``fields.<column>.default-value`` option, as Java's
    ``CoreOptions.getFieldDefaultValues`` reads them (the name between prefix and suffix as it is:
    ``fields.a,b.default-value`` names a column ``a,b``, not two)."""
    return {k[len(_PREFIX):-len(_SUFFIX)]: v for k, v in options.items()
            if k.startswith(_PREFIX) and k.endswith(_SUFFIX) and len(k) > len(_PREFIX) + len(_SUFFIX)}


def default_value_problems(
    fields: Sequence[DataField], primary_keys: Sequence[str], partition_keys: Sequence[str],
    options: Mapping[str, str], *, reading: bool = False,
) -> list[str]:
    """What is wrong with the table's default values (Java's ``validateDefaultValues``): one text
    per problem, naming the option. ``reading``: only what keeps Java 0.9 from reading the table
    (a text it casts to null is no problem there: it fills nothing)."""
    problems = []
    by_name = {f.name: f for f in fields}
    for name, text in sorted(option_defaults(options).items()):
        key = f"{_PREFIX}{name}{_SUFFIX}"
        if name in partition_keys:
            problems.append(f"option {key!r}: partition column {name!r} cannot have a default value")
        elif name in primary_keys:
            problems.append(f"option {key!r}: primary-key column {name!r} cannot have a default value")
        elif name not in by_name:
            if "," in name and not reading:  # Java reads one column name there, which no column has
                problems.append(f"option {key!r} names no column: a default value is set per column "
                                f"(fields.<column>.default-value, one column each)")
        else:
            try:
                to_scalar(text, by_name[name].type)
            except NullDefaultError as exc:
                if not reading:
                    problems.append(f"option {key!r}: the default value of column {name!r} "
                                    f"({by_name[name].type}) cannot be cast: {exc}")
            except DefaultValueError as exc:
                problems.append(f"option {key!r}: the default value of column {name!r} "
                                f"({by_name[name].type}) cannot be cast: {exc}")
    return problems


def check_default_values(
    what: str, fields: Sequence[DataField], primary_keys: Sequence[str], partition_keys: Sequence[str],
    options: Mapping[str, str],
) -> None:
    """`OptionError` (``what`` first, e.g. "Cannot create db.t") for any `default_value_problems`."""
    problems = default_value_problems(fields, primary_keys, partition_keys, options)
    if problems:
        raise OptionError(f"{what}: " + "; ".join(problems))


def default_value_refusals(schema: TableSchema) -> list[Refusal]:
    """Reads of a table whose default values Java 0.9 could not apply either (it fails to read
    them) are refused; writes of a table whose schema fields carry Paimon 1.3's ``defaultValue``
    are refused, as its writers fill nulls with it and lake_assets' do not."""
    out = [Refusal(p, "Paimon 0.9 fails to read such a table too", READS,
                   "fix the option named with ALTER TABLE ... SET in Flink (SET TBLPROPERTIES in Spark, or "
                   "table.update_schema().set_option(...).commit())")
           for p in default_value_problems(schema.fields, schema.primary_keys, schema.partition_keys,
                                           schema.options, reading=True)]
    for name, problem in write_default_problems(schema.fields).items():
        out.append(Refusal(
            f"the write-time default value (schema field defaultValue) of column {name!r}",
            f"Paimon 1.3+ writers replace the column's nulls with it, and lake_assets cannot cast it: {problem}",
            frozenset({Op.WRITE}),
            "write the table with Paimon 1.3+ (Flink or Spark), whose writers fill the nulls; reads are not refused"))
    return out


def _unquoted(text: str) -> str:
    """Paimon 1.3's ``DefaultValueUtils.convertDefaultValue``: text in single quotes loses them."""
    if len(text) >= 2 and text.startswith("'") and text.endswith("'"):
        return text[1:-1]
    if text == "'":  # Java's substring(1, 0) throws: no value
        raise DefaultValueError("a lone quote is no value")
    return text


def write_default_problems(fields: Sequence[DataField]) -> dict[str, str]:
    """Column -> why its field ``defaultValue`` cannot be filled on write (cast as Java's)."""
    out = {}
    for f in fields:
        if f.default_value is None:
            continue
        try:
            to_scalar(_unquoted(f.default_value), f.type)
        except NullDefaultError:
            continue  # Java's default row holds null: it fills nothing, nor do we
        except DefaultValueError as exc:
            out[f.name] = str(exc)
    return out


@dataclass(frozen=True)
class WriteDefaults:
    """Paimon 1.3's write-time defaults (schema field ``defaultValue``): each column's scalar."""

    scalars: Mapping[str, pa.Scalar]

    @classmethod
    def of(cls, schema: TableSchema) -> WriteDefaults | None:
        """The write-time defaults of ``schema``'s fields; None when it has none (a default that does
        not cast refuses the write first: `default_value_refusals`)."""
        scalars = {}
        for f in schema.fields:
            if f.default_value is None:
                continue
            try:
                scalars[f.name] = to_scalar(_unquoted(f.default_value), f.type)
            except NullDefaultError:
                continue
            except DefaultValueError as exc:
                raise OptionError(f"Cannot write to column {f.name!r}: its default value "
                                  f"{f.default_value!r} does not cast: {exc}") from None
        return cls(scalars) if scalars else None

    def fill(self, data: pa.Table) -> pa.Table:
        """``data`` with every null of a defaulted column replaced by its default."""
        return _fill(data, self.scalars)


@dataclass(frozen=True)
class ColumnDefaults:
    """The default value of each column that has one, as a scalar of the column's Arrow type."""

    scalars: Mapping[str, pa.Scalar]

    @classmethod
    def of(cls, schema: TableSchema) -> ColumnDefaults | None:
        """The defaults of ``schema``'s columns; None when it has none. `OptionError` for a value
        that does not cast (a table `default_value_refusals` refuses to read)."""
        texts = option_defaults(schema.options)
        scalars = {}
        for name, text in texts.items():
            if not schema.has_field(name) or name in schema.partition_keys or name in schema.primary_keys:
                continue  # refused by default_value_refusals; Java ignores names of no column
            try:
                scalars[name] = to_scalar(text, schema.field(name).type)
            except NullDefaultError:
                continue  # Java's default row holds null there: it fills nothing
            except DefaultValueError as exc:
                raise OptionError(f"Option '{_PREFIX}{name}{_SUFFIX}' of column {name!r}: {exc}") from None
        return cls(scalars) if scalars else None

    def fill(self, data: pa.Table) -> pa.Table:
        """``data`` with every null of a defaulted column replaced by its default."""
        return _fill(data, self.scalars)


def _fill(data: pa.Table, scalars: Mapping[str, pa.Scalar]) -> pa.Table:
    for i, name in enumerate(data.column_names):
        scalar = scalars.get(name)
        if scalar is None:
            continue
        column = data.column(i)
        if column.null_count:
            field = data.schema.field(i)
            data = data.set_column(i, field, pc.fill_null(column, scalar.cast(field.type)))
    return data



def prunable(schema: TableSchema, predicate: Predicate | None) -> Predicate | None:
    """``predicate`` without its terms on columns with a default value: what may prune files,
    partitions and buckets of a read of ``schema``'s table. A weaker filter: each OR clause keeps
    its other terms, and None when a clause has none left (no file can then be skipped); Java's
    ``handlePredicate`` drops each top-level AND term naming such a column, which prunes no more.
    The rows read are filtered by the whole predicate once the defaults are filled."""
    names = option_defaults(schema.options).keys()
    if predicate is None or not predicate.clauses or not predicate.columns & names:
        return predicate
    # by name, whether or not the text casts (as handlePredicate): planning a compaction of a table
    # whose default is refused for reads must not fail on it
    clauses = tuple(tuple(t for t in clause if t[0] not in names) for clause in predicate.clauses)
    return type(predicate)(clauses, None, predicate.bound) if all(clauses) else None


__all__ = ["ColumnDefaults", "WriteDefaults", "check_default_values", "default_value_problems",
           "default_value_refusals", "option_defaults", "prunable", "write_default_problems"]
