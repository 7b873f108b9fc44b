"""A dataset seen as named variables chunked along the sample axis: the engine's input.

A chunk is the unit of I/O, of work and of failure.  :class:`ChunkedData` holds lazy Dask
arrays by name: the *sample variables* (``X`` and ``y``; ``U`` and ``y`` of factorized
data) share their sample chunks, and *whole variables* (``V`` of ``A = UV``) have no sample
axis and are given whole to every task.  Nothing is read here: a task reads the chunks of its
group.  Two samples (``X_p`` and ``X_q`` of a two-sample fit) are sample variables with
sample dimensions of their own (``sample_p``, ``sample_q``) and the same number of chunks:
chunk ``c`` of the data is chunk ``c`` of each (see
:func:`ooc_kernels.data.inputs.pair_samples`).  Building a ``ChunkedData`` from user inputs (NumPy, Dask, xarray, DataFrames,
catalog entries) is the data layer's job (:func:`ooc_kernels.data.inputs.as_chunked`).

Examples
--------
>>> import dask.array as da
>>> from ooc_kernels.parallel.chunked import ChunkedData
>>> X = da.zeros((10, 3), chunks=(4, 3)); y = da.arange(10, chunks=4)
>>> data = ChunkedData({"X": X, "y": y}, dims={"X": ("sample", "feature"), "y": ("sample",)})
>>> data.chunk_sizes, data.sizes["feature"], sorted(data.delayed_chunks())
((4, 4, 2), 3, ['X', 'y'])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import dask
import dask.array as da
import numpy as np

from ooc_kernels.exceptions import SchemaError

__all__ = ["ChunkedData", "ChunkReader", "ContentName"]


class ContentName:
    """The name ``dask.array.from_array(array, chunks=chunks)`` gives ``array`` (a hash of
    its contents), computed when first called and kept.

    >>> import numpy as np
    >>> X = np.arange(6.0).reshape(3, 2)
    >>> ContentName(X, (2, 2))() == da.from_array(X, chunks=(2, 2)).name
    True
    """

    __slots__ = ("array", "chunks", "_name")

    def __init__(self, array: np.ndarray, chunks: tuple):
        self.array, self.chunks, self._name = array, chunks, None

    def __call__(self) -> str:
        if self._name is None:
            self._name = da.from_array(self.array, chunks=self.chunks).name
        return self._name


class ChunkReader:
    """Reads one chunk of one variable when called, inside whichever task calls it.

    It holds only that chunk's part of the Dask graph (a few tasks: open the store, read
    one block), so a task can read several chunks one after another and keep one of them in
    memory at a time (:func:`ooc_kernels.parallel.engine.run_rounds` fills a group's rows
    this way).  Picklable; not a Dask collection, so ``dask.delayed`` passes it as it is.
    """

    __slots__ = ("graph", "key", "n_rows")

    def __init__(self, graph: dict, key, n_rows: int):
        self.graph, self.key, self.n_rows = graph, key, int(n_rows)

    def __call__(self) -> np.ndarray:
        from dask.local import get_sync

        return np.asarray(get_sync(self.graph, self.key))

    def __dask_tokenize__(self):
        return ("ChunkReader", self.key)  # the key's name is the array's own token

    def __repr__(self) -> str:
        return f"ChunkReader({self.key!r}, n_rows={self.n_rows})"


@dataclass(frozen=True)
class ChunkedData:
    """Lazy variables of one dataset, chunked along the sample axis only.

    Parameters
    ----------
    variables : mapping of str to dask.array.Array
        The sample variables: axis 0 is the sample axis, every other axis is one chunk.
        Variables of one sample dimension share their sample chunks; variables of different
        sample dimensions (two samples) have the same number of chunks, paired by index.
        The first variable's chunks are :attr:`chunk_sizes`.
    dims : mapping of str to tuple of str, optional
        Dimension names of every variable (sample and whole); defaults to ``("sample",
        "dim_1", ...)``.  The first name of a sample variable is the sample dimension.
    whole : mapping of str to array, optional
        Variables without a sample axis, small enough to be given whole to every task.
    attrs : dict, optional
        Dataset attributes (``task``, ``classes`` ...) when the input carried them.
    feature_names : tuple of str, optional
        Column names of ``X`` when the input had them (a DataFrame).
    identities : mapping of str to callable, optional
        Variables named at random, without hashing their contents (the in-memory rows of
        ``as_chunked(..., lazy_token=True)``): their name -> a function returning the name
        that ``dask.array.from_array`` gives by hashing them (:class:`ContentName`).
        :attr:`token` uses those names, so it is the same as for the arrays named by
        hashing, and the hashing is done only when the token is asked for (a checkpoint, a
        Dask graph of rounds).
    """

    variables: Mapping[str, da.Array]
    dims: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    whole: Mapping[str, Any] = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)
    feature_names: tuple[str, ...] | None = None
    identities: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if not self.variables:
            raise SchemaError("a ChunkedData needs at least one sample variable")
        dims = {name: tuple(self.dims.get(name) or
                            ("sample",) + tuple(f"dim_{i}" for i in range(1, arr.ndim)))
                for name, arr in {**self.variables, **self.whole}.items()}
        object.__setattr__(self, "dims", dims)
        # chunk sizes are metadata of the lazy arrays: nothing is read
        by_dim: dict[str, tuple] = {}
        n_chunks = len(next(iter(self.variables.values())).chunks[0])
        for name, arr in self.variables.items():
            first = by_dim.setdefault(dims[name][0], arr.chunks[0])
            if arr.chunks[0] != first:
                raise SchemaError(
                    f"variable {name!r} has sample chunks {arr.chunks[0]}, other variables "
                    f"along {dims[name][0]!r} {first}; sample variables must share their "
                    "chunks"
                )
            if len(arr.chunks[0]) != n_chunks:
                raise SchemaError(
                    f"variable {name!r} has {len(arr.chunks[0])} sample chunks, the first "
                    f"variable {n_chunks}; samples of their own dimension are paired chunk "
                    "by chunk, so they need as many chunks"
                )

    # ------------------------------------------------------------------ names
    def __getitem__(self, name: str) -> Any:
        if name in self.variables:
            return self.variables[name]
        return self.whole[name]

    def __contains__(self, name: str) -> bool:
        return name in self.variables or name in self.whole

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    @property
    def X(self) -> da.Array | None:
        """The feature matrix ``X`` (supervised data), or None."""
        return self.variables.get("X")

    @property
    def y(self) -> da.Array | None:
        """The targets ``y``, or None."""
        return self.variables.get("y")

    # ------------------------------------------------------------------ sizes
    @property
    def chunk_sizes(self) -> tuple[int, ...]:
        # chunk sizes of the first lazy variable: metadata, nothing is read
        return tuple(int(c) for c in next(iter(self.variables.values())).chunks[0])

    @property
    def n_chunks(self) -> int:
        return len(self.chunk_sizes)

    @property
    def n_samples(self) -> int:
        # the first lazy variable's shape: metadata, nothing is read
        return int(next(iter(self.variables.values())).shape[0])

    @property
    def sizes(self) -> dict[str, int]:
        """Length of every dimension (like ``xarray.Dataset.sizes``)."""
        out: dict[str, int] = {}
        for name, arr in {**self.variables, **self.whole}.items():
            for dim, n in zip(self.dims[name], np.shape(arr)):
                out.setdefault(dim, int(n))
        return out

    @property
    def n_features(self) -> int:
        """Length of the ``feature`` dimension (the model's input dimension)."""
        return self.sizes["feature"]

    @property
    def dtype(self) -> np.dtype:
        """dtype of ``X`` (supervised data) or of the first sample variable."""
        # a lazy array's dtype: metadata, nothing is read
        arr = self.X if self.X is not None else next(iter(self.variables.values()))
        return arr.dtype

    @property
    def token(self) -> str:
        """Deterministic identity of the data (Dask names hash the source and the graph;
        a variable named without hashing is hashed here, see ``identities``)."""
        names = {k: self.identities[v.name]() if v.name in self.identities else v.name
                 for k, v in self.variables.items()}
        return dask.base.tokenize(sorted(names.items()),
                                  sorted((k, dask.base.tokenize(v))
                                         for k, v in self.whole.items()))

    # ------------------------------------------------------------------ graph
    def delayed_chunks(self) -> dict[str, list]:
        """One ``Delayed`` per chunk of every sample variable; nothing is computed."""
        out = {}
        for name, arr in self.variables.items():
            blocks = arr.to_delayed(optimize_graph=True)
            out[name] = [b.ravel()[0] if isinstance(b, np.ndarray) else b for b in blocks]
        return out

    def chunk_readers(self) -> dict[str, list[ChunkReader]]:
        """One :class:`ChunkReader` per chunk of every sample variable; nothing is read."""
        from dask.core import flatten
        from dask.optimization import cull

        out = {}
        for name, arr in self.variables.items():
            (arr,) = dask.optimize(arr)
            graph = dict(arr.__dask_graph__())  # built once: each reader keeps its part
            keys = list(flatten(arr.__dask_keys__()))
            out[name] = [ChunkReader(cull(graph, [key])[0], key, n)
                         for key, n in zip(keys, arr.chunks[0])]
        return out

    def delayed_whole(self) -> dict[str, Any]:
        """One ``Delayed`` per whole variable (a Dask array rechunked to one block)."""
        out = {}
        for name, arr in self.whole.items():
            if isinstance(arr, da.Array):
                out[name] = arr.rechunk(arr.shape).to_delayed().ravel()[0]
            else:
                out[name] = dask.delayed(arr, traverse=False)
        return out

    def replace(self, **changes) -> ChunkedData:
        """A copy with some fields replaced (``variables=``, ``attrs=`` ...)."""
        return replace(self, **changes)
