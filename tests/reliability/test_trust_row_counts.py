"""A data file's ``_ROW_COUNT`` in the manifest that differs from the file's own rows.

The count is damaged in a snapshot crafted as another process would commit it: far too large
(2**36: sizing a deletion-vector mask or a partition-only read by it allocates tens of GB, the
process dies), a few rows too many, or a few too few (reading by it drops rows silently). Every read
path - a batch read, a partition-only projection, batched reads, a stream, compaction, a
deletion-vector delete - raises `CorruptMetadataError` naming the file and both counts before
it returns a row or allocates by the damaged count; nothing is committed.

Paimon Java 0.9 reads the file's own rows here, never sizing anything by the manifest's count
(`lake_assets.ops.file_rows`); it does not notice the damage at all, so the refusal is ours.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, CorruptMetadataError
from lake_assets.ops.dv_row_cache import LOOKUP_CACHE
from tests.reliability.test_trust_stored_numbers import _craft, _file
from tests.reliability.test_trust_stored_numbers import _fresh as _fresh_metadata

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string()), ("dt", pa.string())])
ROWS = pa.table({"k": list(range(10)), "v": ["a"] * 10, "dt": ["d1"] * 10}, schema=SCHEMA)
MORE = pa.table({"k": [10, 11], "v": ["b"] * 2, "dt": ["d1"] * 2}, schema=SCHEMA)


def _fresh() -> None:
    """Forget what this process decoded and the rows and keys its writes kept, as another process would start."""
    _fresh_metadata()
    LOOKUP_CACHE.clear()


def _append(t) -> None:  # type: ignore[no-untyped-def]
    t.write_arrow(MORE)


def _delete(t) -> None:  # type: ignore[no-untyped-def]
    t.delete_where([("k", "<", 3)])


def _pk_vectors(t) -> None:  # type: ignore[no-untyped-def]
    t.compact(full=True)
    t.write_arrow(ROWS.slice(0, 3))
    t.compact()  # the level-0 rows land and the older rows of their keys get vectors


# table kind: (options, primary keys, what makes its second state)
KINDS: dict[str, tuple[dict[str, str], list[str], Callable[..., None]]] = {
    "append": ({"bucket": "-1", "compaction.min.file-num": "2"}, [], _append),
    "dv-append": ({"bucket": "-1", "deletion-vectors.enabled": "true"}, [], _delete),
    "dv-pk": ({"bucket": "1", "deletion-vectors.enabled": "true"}, ["k", "dt"], _pk_vectors),
    # a partial-update write merges the old rows it marks (ops/dv_old_values.py, dv_row_cache)
    "dv-partial-update": ({"bucket": "1", "deletion-vectors.enabled": "true", "merge-engine": "partial-update",
                           "lookup.cache-max-memory-size": "0 b"},  # old rows read by position, none kept
                          ["k", "dt"], _pk_vectors),
    "data-evolution": ({"bucket": "-1", "row-tracking.enabled": "true", "data-evolution.enabled": "true",
                        "compaction.min.file-num": "2"}, [],
                       _append),
}


def _stream(t) -> None:  # type: ignore[no-untyped-def]
    enumerator = t.stream(mode="latest-full")  # the crafted snapshot's files
    reader = t.change_reader(stream=enumerator)
    for batch in enumerator.poll():
        for split in batch.splits:
            reader.read(split)


READS: dict[str, Callable[..., object]] = {
    "read": lambda t: t.to_arrow(),
    "partition-only read": lambda t: t.to_arrow(columns=["dt"]),
    "filtered read": lambda t: t.to_arrow(filter=[("k", ">=", 0)]),
    "batches": lambda t: list(t.to_batches(batch_size=4)),
    "partition-only batches": lambda t: list(t.to_batches(columns=["dt"], batch_size=4)),
    "stream": _stream,
    # primary-key tables rewrite every level; append tables merge their small files
    "compact": lambda t: t.compact(full=bool(t.schema.primary_keys)),
}

DAMAGES: dict[str, Callable[[int], int]] = {
    "huge": lambda rows: 2**36,
    "larger": lambda rows: rows + 3,
    "smaller": lambda rows: max(rows - 2, 1),
}


def _table(tmp: Path, kind: str):  # type: ignore[no-untyped-def]
    options, keys, second = KINDS[kind]
    catalog = Catalog(str(tmp / "wh"))
    catalog.create_database("db")
    t = catalog.create_table("db.t", SCHEMA, primary_keys=keys, partition_keys=["dt"], options=options)
    t.write_arrow(ROWS)
    second(t)
    return t.refresh()


@pytest.mark.parametrize("damage", list(DAMAGES))
@pytest.mark.parametrize("kind", list(KINDS))
def test_damaged_row_count_is_refused_on_every_read_path(tmp_path: Path, kind: str, damage: str) -> None:
    t = _table(tmp_path, kind)
    before = t.snapshot_manager.latest_id()
    counted = DAMAGES[damage]
    _craft(t, _file_rows(t, counted))
    crafted = t.snapshot_manager.latest_id()
    assert crafted == before + 1
    for name, read in READS.items():
        _fresh()
        try:
            read(t.refresh())
        except CorruptMetadataError as exc:
            text = str(exc)
        else:
            raise AssertionError(f"{name} read a file whose _ROW_COUNT is damaged")
        assert re.search(r"data file \S*data-\S+ holds (\d+|more than \d+) rows, but its manifest entry says \d+ "
                         r"\(_ROW_COUNT\)", text), (name, text)
    if kind.startswith("dv"):  # a write that marks rows of the damaged file in its vector
        _fresh()
        with pytest.raises(CorruptMetadataError, match="_ROW_COUNT"):
            _dv_write(t.refresh())
    assert t.snapshot_manager.latest_id() == crafted  # nothing was committed over the damage


def _dv_write(t) -> None:  # type: ignore[no-untyped-def]
    if t.schema.primary_keys:  # the rewrite's lookup marks the old rows of the keys written again
        t.write_arrow(ROWS.slice(5, 2))
        t.compact()
    else:
        t.delete_where([("k", "=", 7)])


def _file_rows(t, counted: Callable[[int], int]):  # type: ignore[no-untyped-def]
    """The damage to the largest data file of ``t`` (the one with a deletion vector in the
    deletion-vector kinds); of a data-evolution table the last row-id range, so that the ranges
    stay disjoint and the count is all that is wrong."""
    live = [e.file for e in t.store.file_store_scan().live_entries(t.snapshot_manager.latest())]
    if t.schema.options.get("data-evolution.enabled") == "true":
        newest = max(live, key=lambda f: f.first_row_id).file_name
    else:
        newest = max(live, key=lambda f: f.row_count).file_name

    def damage(f):  # type: ignore[no-untyped-def]
        return _file(row_count=counted(f.row_count))(f) if f.file_name == newest else f
    return damage


@pytest.mark.parametrize("kind", list(KINDS))
def test_undamaged_counts_read_as_before(tmp_path: Path, kind: str) -> None:
    """The checks refuse the damage, not the copy: the same crafted snapshot with the counts kept reads alike."""
    t = _table(tmp_path, kind)
    expected = {name: t.to_arrow(columns=cols).sort_by([(c, "ascending") for c in cols])
                for name, cols in {"all": ["k", "v", "dt"], "partition": ["dt"]}.items()}
    _craft(t, _file_rows(t, lambda rows: rows))
    _fresh()
    t = t.refresh()
    for name, cols in {"all": ["k", "v", "dt"], "partition": ["dt"]}.items():
        assert t.to_arrow(columns=cols).sort_by([(c, "ascending") for c in cols]).equals(expected[name]), name
    assert sum(b.num_rows for b in t.to_batches(columns=["dt"], batch_size=4)) == expected["partition"].num_rows
