"""The deletion-vector read path of one file: the vector's keep-mask and the masked Parquet read
(`spec.deletion_vector.deleted_mask`, `formats.parquet_read.read_parquet` with ``keep``), checked
against references built another way over generated deletions - none, all, or some rows of a file -
and the dictionary expansion that skips `take`'s bounds check only on indices it has checked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_assets.formats.parquet_read import _expand, read_parquet
from lake_assets.spec.deletion_vector import deleted_mask, new_vector


@st.composite
def deletions(draw: st.DrawFn) -> tuple[int, list[int]]:
    """(rows of a file, positions its vector deletes): none, all, a run, or scattered rows."""
    rows = draw(st.integers(1, 3_000))
    kind = draw(st.sampled_from(["none", "all", "run", "some"]))
    if kind == "none":
        return rows, []
    if kind == "all":
        return rows, list(range(rows))
    if kind == "run":
        start = draw(st.integers(0, rows - 1))
        return rows, list(range(start, draw(st.integers(start + 1, rows))))
    return rows, sorted(draw(st.sets(st.integers(0, rows - 1), max_size=min(rows, 300))))


@given(deletions())
def test_the_keep_mask_is_false_exactly_at_the_deleted_positions(case: tuple[int, list[int]]) -> None:
    rows, deleted = case
    keep = deleted_mask(new_vector(deleted), rows, "f")
    if not deleted:
        assert keep is None  # nothing deleted: the file is read as it is, no mask, no filter
        return
    assert keep is not None
    gone = set(deleted)
    assert keep.tolist() == [i not in gone for i in range(rows)]


def _file(path: Path, rows: int, row_group_size: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    names = [None if i % 13 == 5 else f"n{int(v)}" for i, v in enumerate(rng.integers(0, 40, rows))]
    table = pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "name": pa.array(names, pa.string()),                                  # dictionary pages, with nulls
        "tag": pa.array([f"t{i % 3}" for i in range(rows)], pa.string()),      # dictionary pages, no nulls
        "amount": pa.array(rng.random(rows)),
    })
    pq.write_table(table, path, compression="zstd", row_group_size=row_group_size)
    return str(path)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(deletions(), st.integers(50, 4_000), st.sampled_from([None, ["tag", "id"], ["name"], ["amount"]]))
def test_a_masked_read_equals_the_plain_read_filtered(
    tmp_path: Path, case: tuple[int, list[int]], row_group_size: int, columns: list[str] | None,
) -> None:
    rows, deleted = case
    path = _file(tmp_path / f"f-{rows}-{row_group_size}.parquet", rows, row_group_size, rows)
    plain = pq.ParquetFile(path).read(columns=columns)
    keep = deleted_mask(new_vector(deleted), rows, "f")
    with pa.OSFile(path) as source:  # as a data file is read: opened, its footer kept by path
        got = read_parquet(source, columns, use_threads=False, keep=keep, footer_key=path)
    if keep is None:
        want = plain
    else:
        gone = set(deleted)
        want = plain.take(pa.array([i for i in range(rows) if i not in gone], pa.int64()))
    assert got.schema.equals(want.schema, check_metadata=True)
    assert got.equals(want)
    assert got.num_rows == rows - len(deleted)


def _dictionary(indices: list[int | None], values: list[str]) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), pa.array(values, pa.string()))


@pytest.mark.parametrize("indices", [
    [0, 1, 2, 1, 0],            # checked once by min/max, then gathered unchecked
    [0, None, 2, None, 1],      # nulls: the checked take
    [2, 2, 2],
])
def test_the_expansion_equals_a_dictionary_decode(indices: list[int | None]) -> None:
    chunk = _dictionary(indices, ["a", "bb", "ccc"])
    column = pa.chunked_array([chunk, chunk.slice(1), chunk.slice(0, 0)])
    got = _expand(column, pa.string())
    assert got.type == pa.string()
    assert got.to_pylist() == column.to_pylist()
    assert got.equals(pa.chunked_array([c.dictionary_decode() for c in column.chunks]))


@pytest.mark.parametrize("bad", [3, 1_000_000, -1])
def test_an_index_past_the_dictionary_fails_instead_of_reading_past_it(bad: int) -> None:
    # a damaged file's index: built unvalidated (as a reader's buffers would hold it)
    indices = pa.array([0, 1, bad, 2], pa.int32())
    dictionary = pa.array(["a", "bb", "ccc"], pa.string())
    chunk = pa.DictionaryArray.from_buffers(pa.dictionary(pa.int32(), pa.string()), len(indices),
                                            indices.buffers(), dictionary=dictionary)
    with pytest.raises(IndexError):
        _expand(pa.chunked_array([chunk]), pa.string())


def test_local_files_are_read_without_pre_buffering(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lake_assets.formats.parquet_read as parquet_read

    path = _file(tmp_path / "f.parquet", 500, 200, 3)
    opened: list[bool] = []
    real = pq.ParquetFile

    def spy(*args: object, **kwargs: object) -> pq.ParquetFile:
        opened.append(bool(kwargs.get("pre_buffer", True)))  # pyarrow's default: pre-buffer
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(parquet_read.pq, "ParquetFile", spy)
    want = real(path).read()
    keep = np.arange(500) % 3 != 0
    with pa.OSFile(path) as source:  # a local file: no hand-off to pyarrow's I/O threads
        assert read_parquet(source, None, use_threads=False, keep=keep).equals(want.filter(pa.array(keep)))
    with open(path, "rb") as fh:  # a Python file object (as fsspec gives): pyarrow's default kept
        assert read_parquet(pa.PythonFile(fh, mode="r"), None, use_threads=False).equals(want)
    assert opened[0] is False and opened[-1] is True
