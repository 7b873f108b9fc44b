"""Dataset stores whose array metadata declares absurd sizes: a few bytes of ``X/zarr.json``
saying ``10**12`` rows in chunks of 10 (Dask would allocate a tuple entry per chunk: 800
GB on opening), or one chunk of ``10**12`` rows (decoded whole when read).  Opening such a
store, by its path or through a catalog, is the library's ``SchemaError`` naming the array
and the sizes, from the metadata alone, never NumPy's ``MemoryError``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
import zarr

import ooc_kernels as ok
from ooc_kernels.data import open_zarr_dataset, register_dataset
from ooc_kernels.data._store_limits import MAX_CHUNKS, check_store_limits
from ooc_kernels.exceptions import SchemaError

ROWS = 10**12


@pytest.fixture()
def store(tmp_path) -> Path:
    path = ok.make_dataset("synthetic_krr_2d", tmp_path / "data" / "x.zarr", 20,
                           chunk_size=10, progress=False)
    register_dataset(tmp_path / "c.yaml", "x", path)
    return Path(path)


def _declare(store: Path, rows: int, chunk_rows: int, entry_chunks=None) -> None:
    """Give every array of ``store`` ``rows`` rows in chunks of ``chunk_rows`` rows (its
    chunk files kept), and drop the consolidated copy of the metadata; the catalog's entry
    reads it with Dask chunks ``entry_chunks`` when given."""
    for var in ("X", "y"):
        meta = store / var / "zarr.json"
        doc = json.loads(meta.read_text())
        doc["shape"][0] = rows
        doc["chunk_grid"]["configuration"]["chunk_shape"][0] = chunk_rows
        meta.write_text(json.dumps(doc))
    root = json.loads((store / "zarr.json").read_text())
    root.pop("consolidated_metadata", None)
    (store / "zarr.json").write_text(json.dumps(root))
    if entry_chunks is not None:
        cat = store.parent.parent / "c.yaml"
        spec = yaml.safe_load(cat.read_text())
        spec["entries"]["x"]["kwargs"]["chunks"] = entry_chunks
        cat.write_text(yaml.safe_dump(spec))


OPENS = {
    "by path": lambda store: open_zarr_dataset(store),
    "through a catalog": lambda store: ok.open_dataset(store.parent.parent / "c.yaml", "x"),
}


@pytest.mark.parametrize("how", sorted(OPENS))
def test_a_store_declaring_too_many_chunks_is_refused_on_opening(store, how):
    _declare(store, ROWS, 10)
    with pytest.raises(SchemaError, match=rf"array 'X' of shape \(1000000000000, 2\) declares "
                                          rf"chunks of shape \(10, 2\), 100000000000 chunks "
                                          rf"in all, more than the {MAX_CHUNKS}"):
        OPENS[how](store)


@pytest.mark.parametrize("how", sorted(OPENS))
def test_a_store_declaring_a_chunk_larger_than_the_memory_is_refused_on_opening(store, how):
    _declare(store, ROWS, ROWS)
    with pytest.raises(SchemaError, match=r"array 'X' of shape \(1000000000000, 2\) declares "
                                          r"chunks of shape \(1000000000000, 2\), 7\.3 TiB "
                                          r"each, more than the [0-9.]+ [KMGT]iB of memory"):
        OPENS[how](store)


@pytest.mark.parametrize("rows, chunks, match", [
    (10**9, {"sample": 1}, r"is read with chunks=\{'sample': 1\} in chunks of shape \(1, 2\), "
                           r"1000000000 chunks in all"),
    (ROWS, {"sample": -1}, r"is read with chunks=\{'sample': -1\} in chunks of shape "
                           r"\(1000000000000, 2\), 7\.3 TiB each, more than"),
    (ROWS, 1, r"is read with chunks=1 in chunks of shape \(1, 1\), 2000000000000 chunks"),
    (ROWS, {"sample": "{N}"}, r"chunks=\{'sample': '\{N\}'\} sets '\{N\}' for a dimension, "
                              r"which cannot be checked"),
    # beyond 64 bits: NumPy's TypeError inside Dask, reported as a CatalogError about isnan
    (20, {"sample": 10**23}, r"sets 100000000000000000000000 for a dimension, which cannot "
                             r"be checked; give a positive number of rows \(at most 2\*\*63"),
])
def test_a_catalog_entry_that_reads_a_store_in_too_many_or_too_large_chunks_is_refused(
        store, rows, chunks, match):
    """The store's own chunks (10**6 rows: at most 10**6 chunks) pass; the entry's
    ``chunks`` argument would split it into too many Dask chunks or join it into one."""
    _declare(store, rows, 10**6, entry_chunks=chunks)
    with pytest.raises(SchemaError, match=match):
        OPENS["through a catalog"](store)


def test_a_catalog_entry_with_chunks_that_fit_opens(store):
    _declare(store, 20, 10, entry_chunks={"sample": 20})
    assert OPENS["through a catalog"](store)["X"].data.chunks == ((20,), (2,))


def test_the_largest_chunk_count_is_accepted_and_one_more_refused():
    """``MAX_CHUNKS`` chunks (of ``X``: rows times columns) pass, one more does not."""
    group = zarr.open_group(zarr.storage.MemoryStore(), mode="w")
    group.create_array("X", shape=(MAX_CHUNKS // 2, 4), chunks=(1, 2), dtype="f4")
    check_store_limits(group, where="s")
    group.create_array("y", shape=(MAX_CHUNKS + 1,), chunks=(1,), dtype="f4")
    with pytest.raises(SchemaError, match=rf"array 'y' .* {MAX_CHUNKS + 1} chunks in all"):
        check_store_limits(group, where="s")
