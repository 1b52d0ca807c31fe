"""Skipping data files of a batch read by their file indexes (docs/format.md §7.6).

As Paimon's append scan and reader do (``FileIndexPredicate``), a file whose indexes prove that no
row of it matches any clause of the filter is not read: a bloom filter rules out a clause when it
lacks every ``=`` / ``in`` literal of a term; a bitmap index (version 1 or 2) gives the rows of each
term on its column - the rows holding one of the literals for ``=`` / ``in``, the null rows for
``is null`` and all others for ``is not null`` (Java 0.9's ``visitIsNull`` / ``visitIsNotNull``),
the non-null rows holding none of the literals for ``!=`` / ``not in`` (Java's ``flip`` keeps the
null rows, which never match: dropping them only prunes more); a bsi index (Paimon 1.x,
`lake_assets.formats.bsi_index`) gives the rows of ``=`` / ``in`` / ``!=`` / ``not in`` / ``<`` /
``<=`` / ``>`` / ``>=`` terms, null rows matching none; a range-bitmap index (Paimon 1.x,
`lake_assets.formats.range_bitmap_index`) gives the rows of all these terms and of ``is null`` /
``is not null``, as Java's ``RangeBitmap`` answers them - and a clause whose terms leave no row in
common is ruled out. Null literals follow the filter's SQL semantics: an ``in`` list's nulls look
nothing up, and ``= None`` or ``not in`` with a None matches no row (Java's bitmap looks a null
literal up as the null rows: a superset, so Java keeps files we skip, never the reverse).
Only append tables are pruned: in a primary-key table a file without the value may still hold the
newer version of a key that hides an older match in another file (Paimon uses indexes there only
with deletion vectors). An index only removes files without a match, so a read returns the same rows with or
without it; whatever cannot be decided (a bitmap of a version or type not read here, an index of
another kind (a newer Paimon's or a plug-in's), a literal that does not convert to the file's column
type, a column renamed or retyped since the file was written) keeps the file. Damage to an index
is never read past: one embedded in a manifest entry (bytes cut, offsets or lengths outside it,
counts that do not add up, a bsi or range-bitmap of another version) is manifest damage,
`CorruptMetadataError` naming the data file, as Paimon Java 0.9's scan fails on it
(``AppendOnlyFileStoreScan.testFileIndex``); a ``<file>.index`` file damaged so is
`CorruptMetadataError` naming it, and a missing one `MissingDataFileError`, as Java 0.9's reader
fails on both (``FileIndexSkipper``, ``RawFileSplitRead.createFileReader``); so is a data file
listing two ``.index`` files ("Found more than one index file"). An index whose row count is not
its data file's, or that names a row past the file's end, is damaged too (Java reads such a
bitmap and may skip a file that matches; a count is never used to allocate or flip before it is
checked).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pyarrow as pa
from pyroaring import BitMap

from lake_assets.errors import CorruptMetadataError, InvalidDataError, LakeError, MissingDataFileError
from lake_assets.formats.bitmap_index import BITMAP, BitmapIndex
from lake_assets.formats.bloom_filter import BloomFilter64
from lake_assets.formats.bsi_index import BSI, BSI_OPS, BsiIndex, term_keys
from lake_assets.formats.fast_hash import fast_hash, hashable
from lake_assets.formats.file_index import INDEX_FILE_SUFFIX, read_container
from lake_assets.formats.range_bitmap_index import RangeBitmapIndex, literal_keys
from lake_assets.formats.range_bitmap_keys import RANGE_BITMAP
from lake_assets.option_classification import is_true
from lake_assets.option_rules_file_index import BLOOM_FILTER, indexed_columns
from lake_assets.predicate import NULL_TESTS, Predicate, matches_nothing
from lake_assets.spec.arrow_types import to_arrow
from lake_assets.spec.data_types import DataType, LocalZonedTimestampType, TimestampType
from lake_assets.spec.manifest import ManifestEntry
from lake_assets.spec.schema import TableSchema
from lake_assets.store.file_store import FileStore

log = logging.getLogger(__name__)

T = TypeVar("T")
_EQUALITY = ("=", "==", "in")
_BITMAP_OPS = ("=", "==", "in", "!=", "not in", *NULL_TESTS)


def prunes_by_index(schema: TableSchema, pred: Predicate | None) -> bool:
    """Whether a read with ``pred`` under ``schema`` (the read's) consults file indexes: an append
    table, the option ``file-index.read.enabled`` (default true) on, and some term an index can
    decide: = / in, or != / not in / is null / is not null when the table writes bitmap indexes
    (only those decide them: a table of bloom filters alone would read every ``.index`` file for
    nothing), and also < / <= / > / >= when it writes bsi or range-bitmap indexes."""
    if pred is None or schema.primary_keys:
        return False
    if not is_true(schema.options.get("file-index.read.enabled", "true")):
        return False
    ops = set(_EQUALITY)
    if indexed_columns(schema.options, BITMAP):
        ops.update(_BITMAP_OPS)
    if indexed_columns(schema.options, BSI):
        ops.update(BSI_OPS)
    if indexed_columns(schema.options, RANGE_BITMAP):
        ops.update((*BSI_OPS, *NULL_TESTS))
    return any(op in ops for clause in pred.clauses for _, op, _ in clause)


def index_may_match(store: FileStore, entry: ManifestEntry, pred: Predicate, schema: TableSchema) -> bool:
    """False only when the file's indexes show that no clause of ``pred`` (naming columns of
    ``schema``, the read's) can match a row of it. A damaged index raises `CorruptMetadataError`,
    a missing ``.index`` file `MissingDataFileError` (both naming the file)."""
    meta = entry.file
    index_files = [x for x in meta.extra_files if x.endswith(INDEX_FILE_SUFFIX)]
    if meta.embedded_file_index is None and not index_files:
        return True
    if meta.embedded_file_index is None and len(index_files) > 1:
        raise CorruptMetadataError(f"Table {store.name}: data file {meta.file_name} lists more than one index file: "
                                   f"{' and '.join(index_files)}")
    if meta.embedded_file_index is not None:
        data = meta.embedded_file_index
        where = f"the file index embedded in the manifest entry of {meta.file_name}"
    else:
        (path,) = [p for p in store.written_file_paths(entry.partition, entry.bucket, meta)
                   if p.endswith("/" + index_files[0])]
        where = f"the file index {index_files[0]} of {meta.file_name}"
        try:
            data = store.file_io.read_bytes(path)
        except FileNotFoundError:
            # Java 0.9's reader opens it and fails; a read maps this as a missing data file
            raise MissingDataFileError(
                f"Table {store.name}: file index {path} of {meta.file_name} is missing") from None
        except OSError as exc:
            raise CorruptMetadataError(f"Table {store.name}: {where} cannot be read: {exc}") from exc
    try:
        indexes = read_container(data, f"file index of {meta.file_name}")
    except InvalidDataError as exc:
        raise _corrupt(store.name, where, exc) from None
    if not indexes:
        return True
    view = _FileIndexes(store.name, meta.file_name, indexes, where, meta.row_count)
    file_schema = store.schema_by_id(meta.schema_id)
    return any(_clause_may_match(schema, file_schema, view, clause) for clause in pred.clauses)


def _corrupt(table: str, where: str, exc: Exception) -> CorruptMetadataError:
    """Damage in a file index: Paimon Java 0.9 fails on it too (``AppendOnlyFileStoreScan.testFileIndex``
    for one embedded in the manifest entry, ``FileIndexSkipper`` for a ``.index`` file)."""
    return CorruptMetadataError(f"Table {table}: {where} is corrupt: {exc}")


class _FileIndexes:
    """One file's indexes by column, each parsed when a term first asks for it; one of a version
    or type not read here decides nothing, one that does not parse or whose row count is not the
    data file's ``rows`` is corrupt (``where`` names the index in the error)."""

    def __init__(self, table: str, file_name: str, payloads: dict[str, dict[str, bytes | None]], where: str,
                 rows: int) -> None:
        self.table, self.file_name, self.payloads, self.where, self.rows = table, file_name, payloads, where, rows
        self._parsed: dict[tuple[str, str], Any] = {}

    def corrupt(self, exc: Exception) -> CorruptMetadataError:
        return _corrupt(self.table, self.where, exc)

    def checked(self, rows: BitMap, column: str, index_type: str) -> BitMap:
        """``rows`` (an index's answer), refused when it names a row past the data file's end."""
        if rows and rows.max() >= self.rows:
            raise self.corrupt(InvalidDataError(f"the {index_type} index of {column!r} names row {rows.max()} of a "
                                                f"file of {self.rows} rows"))
        return rows

    def _get(self, column: str, index_type: str, parse: Callable[[bytes], T]) -> T | None:
        key = (column, index_type)
        if key not in self._parsed:
            payload = self.payloads.get(column, {}).get(index_type)
            try:
                parsed = None if payload is None else parse(payload)
            except InvalidDataError as exc:
                raise self.corrupt(exc) from None
            except LakeError as exc:  # a version or type not read here: decides nothing
                log.warning("Table %s: not using the %s index of %s in %s: %s", self.table, index_type,
                            column, self.file_name, exc)
                parsed = None
            counted = getattr(parsed, "row_count", getattr(parsed, "rows", None))
            if counted is not None and counted != self.rows:
                # never flipped over (Java's NOT IN) or trusted: a count that is not the file's
                raise self.corrupt(InvalidDataError(f"the {index_type} index of {column!r} counts {counted} rows; "
                                                    f"the data file has {self.rows}"))
            self._parsed[key] = parsed
        out: T | None = self._parsed[key]
        return out

    def bloom(self, column: str) -> BloomFilter64 | None:
        return self._get(column, BLOOM_FILTER, lambda p: BloomFilter64.from_bytes(
            p, f"bloom filter of {column!r} in the file index of {self.file_name}"))

    def bitmap(self, column: str, dt: DataType) -> BitmapIndex | None:
        return self._get(column, BITMAP, lambda p: BitmapIndex.parse(
            p, dt, f"bitmap index of {column!r} in the file index of {self.file_name}"))

    def bsi(self, column: str) -> BsiIndex | None:
        return self._get(column, BSI, lambda p: BsiIndex.parse(
            p, f"bsi index of {column!r} in the file index of {self.file_name}"))

    def range_bitmap(self, column: str, dt: DataType) -> RangeBitmapIndex | None:
        return self._get(column, RANGE_BITMAP, lambda p: RangeBitmapIndex(
            p, dt, f"range-bitmap index of {column!r} in the file index of {self.file_name}"))


def _clause_may_match(schema: TableSchema, file_schema: TableSchema, indexes: _FileIndexes,
                      clause: Sequence[tuple[str, str, Any]]) -> bool:
    rows: BitMap | None = None  # the rows every index-decided term so far leaves; None: all
    for column, op, literal in clause:
        if (op not in BSI_OPS and op not in NULL_TESTS) or not schema.has_field(column):
            continue
        if matches_nothing(op, literal):
            return False  # a null literal (SQL's, Paimon's predicates): the term matches no row
        field = schema.field(column)
        file_field = file_schema.field_by_id(field.id)
        if file_field is None or file_field.name not in indexes.payloads:
            continue
        # the file's values were indexed as its column's type: only the same type keys alike
        if file_field.type.copy(nullable=True) != field.type.copy(nullable=True):
            continue
        if op in NULL_TESTS:
            values = pa.nulls(1, to_arrow(field.type))
        else:
            # an `in` list's nulls match no row: only its values are looked up
            literals = [x for x in literal if x is not None] if op in ("in", "not in") else [literal]
            found = _literal_array(literals, field.type)
            if found is None:
                continue
            values = found
            bloom = indexes.bloom(file_field.name) if op in _EQUALITY and hashable(field.type) else None
            if bloom is not None and not bloom.might_contain(fast_hash(values, field.type)).any():
                return False
        for term_rows in _index_rows(indexes, file_field.name, file_field.type, op, values):
            rows = term_rows if rows is None else rows & term_rows
        if rows is not None and not rows:
            return False
    return True


def _index_rows(indexes: _FileIndexes, column: str, dt: DataType, op: str, values: pa.Array) -> list[BitMap]:
    """The rows of the file that the bitmap, bsi and range-bitmap indexes of ``column`` (of the
    file's type ``dt``) say may match the term (none: they decide nothing)."""
    out = []
    bitmap = indexes.bitmap(column, dt) if op in _BITMAP_OPS else None
    if op in ("!=", "not in") and isinstance(dt, (TimestampType, LocalZonedTimestampType)) and dt.precision > 6:
        # keyed by floored micros, a value shares its key with others of the same micro: the
        # complement of the literal's rows would drop rows that differ from it (Java's reader does)
        bitmap = None
    if bitmap is not None:
        # ``values`` holds no null but for the null tests (a null literal matches nothing, an
        # `in` list's nulls are dropped): the null rows never match a comparison, so != / not in
        # leave them out where Java's flip keeps them (only more pruning)
        try:
            hit = indexes.checked(bitmap.rows_in(values), column, BITMAP)
            nulls = bitmap.rows_in(pa.nulls(1, to_arrow(dt))) if op in ("!=", "not in") else BitMap()
        except InvalidDataError as exc:  # a bitmap of the body that does not parse
            raise indexes.corrupt(exc) from None
        if op in _EQUALITY or op == "is null":
            out.append(hit)
        elif op == "is not null":
            out.append(bitmap.all_rows() - hit)
        else:
            out.append(bitmap.all_rows() - hit - nulls)
    bsi = indexes.bsi(column) if op not in NULL_TESTS else None
    asked = None if bsi is None else term_keys(values, dt, op)
    if bsi is not None and asked is not None:
        out.append(indexes.checked(bsi.rows_matching(*asked), column, BSI))
    range_bitmap = indexes.range_bitmap(column, dt)
    if range_bitmap is not None:
        # its keys order and compare as lake_assets' filters do (FLOAT / DOUBLE by Java's compare,
        # a null row matching no comparison), so its answer is the term's exact rows
        keys = [] if op in NULL_TESTS else literal_keys(values, dt)
        try:
            out.append(indexes.checked(range_bitmap.rows_matching(op, keys), column, RANGE_BITMAP))
        except InvalidDataError as exc:  # a part parsed on demand (dictionary, slices) that does not parse
            raise indexes.corrupt(exc) from None
    return out


def _literal_array(literals: list[Any], dt: DataType) -> pa.Array | None:
    """The literals as an Arrow array of the column's type, or None when one does not convert
    exactly (the residual filter decides, or refuses, such a literal)."""
    try:
        values = pa.array(literals, to_arrow(dt))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None
    if values.to_pylist() != literals:
        # converted with a loss or a change of meaning (a zoned time for a naive column, a
        # float narrowed, NaN)
        return None
    return values
