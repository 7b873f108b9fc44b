"""Small random samples of rows drawn from a few chunks (for data-driven defaults such as
the median-trick bandwidth), and uniform draws of a few rows among all the rows (the
landmarks of a Nystrom basis, :func:`sample_dictionary`).

Examples
--------
>>> import dask.array as da
>>> from ooc_kernels.parallel.chunked import ChunkedData
>>> from ooc_kernels.parallel.sampling import sample_rows
>>> data = ChunkedData({"X": da.arange(40.0, chunks=10).reshape(20, 2)})
>>> sample_rows(data, n_rows=6, max_chunks=3, seed=0, scheduler="sync").shape
(6, 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral
from typing import Any

import dask
import numpy as np

from ooc_kernels.exceptions import InvalidDataError, ValidationError
from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.cluster import compute

__all__ = ["RowDraw", "draw_rows", "labels_and_rows", "sample_dictionary", "sample_rows"]


def _take(X, rows):
    return np.asarray(X)[rows]  # one chunk -> a few rows


@dataclass(frozen=True)
class RowDraw:
    """The rows :func:`sample_rows` reads, drawn but not read: ``parts``, one ``Delayed``
    per variable and chosen chunk (variables in ``names``' order), to compute together with
    other small reads in one ``dask.compute``; :meth:`rows` assembles their results.
    Made by :func:`draw_rows`."""

    names: tuple
    single: bool          # ``var`` was one name: :meth:`rows` returns one array
    n_rows: int
    chosen: np.ndarray    # the chunks read, in order
    picks: tuple          # the rows read in each chosen chunk
    parts: tuple

    def rows(self, got, return_index: bool = False):
        """:func:`sample_rows`' result from the computed ``parts`` (``got``, in order)."""
        k = len(self.chosen)
        arrays = tuple(np.concatenate(got[i * k:(i + 1) * k])[:self.n_rows]
                       for i in range(len(self.names)))
        rows = arrays[0] if self.single else arrays
        if not return_index:
            return rows
        chunk_of = np.concatenate([np.full(len(p), c)
                                   for c, p in zip(self.chosen, self.picks)])[:self.n_rows]
        return rows, chunk_of, np.concatenate(self.picks)[:self.n_rows]

    def read(self, scheduler: Any = None, return_index: bool = False):
        """Read the drawn rows now, every variable in one computation: :func:`sample_rows`'
        result."""
        got = compute(*self.parts, scheduler=scheduler)
        return self.rows(got, return_index)


def draw_rows(data: ChunkedData, *, n_rows: int = 2000, max_chunks: int = 8, seed: int = 0,
              var: str | tuple = "X") -> RowDraw:
    """The draw of :func:`sample_rows` (the same arguments but the scheduler), not read.

    Examples
    --------
    >>> import dask
    >>> import dask.array as da
    >>> from ooc_kernels.parallel.chunked import ChunkedData
    >>> data = ChunkedData({"X": da.arange(40.0, chunks=10).reshape(20, 2),
    ...                     "y": da.arange(20.0, chunks=5)})
    >>> draw = draw_rows(data, n_rows=4, max_chunks=2, seed=0, var=("X", "y"))
    >>> total, *got = dask.compute(data["y"].sum(), *draw.parts, scheduler="sync")
    >>> X, y = draw.rows(got)
    >>> float(total), bool((X[:, 0] == 2 * y).all())
    (190.0, True)
    """
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(0x5A,)))
    n_chunks = data.n_chunks
    chosen = np.sort(rng.choice(n_chunks, size=min(max_chunks, n_chunks), replace=False))
    sizes = np.array([data.chunk_sizes[c] for c in chosen])
    per_chunk = np.minimum(sizes, int(np.ceil(n_rows / len(chosen))))
    names = (var,) if isinstance(var, str) else tuple(var)
    delayed = data.delayed_chunks()
    picks = tuple(np.sort(rng.choice(s, size=k, replace=False))
                  for s, k in zip(sizes, per_chunk))
    parts = tuple(dask.delayed(_take)(delayed[name][c], p) for name in names
                  for c, p in zip(chosen, picks))
    return RowDraw(names, isinstance(var, str), int(n_rows), chosen, picks, parts)


def sample_rows(data: ChunkedData, *, n_rows: int = 2000, max_chunks: int = 8, seed: int = 0,
                scheduler: Any = None, return_index: bool = False, var: str | tuple = "X"):
    """Up to ``n_rows`` rows drawn uniformly from up to ``max_chunks`` random chunks.

    Only the chosen chunks of variable ``var`` are read, one task each; the result is small.
    ``var`` may be a tuple of variable names: the same rows of each, read in one
    ``dask.compute`` (one round trip to a ``distributed`` scheduler instead of one per
    variable), returned as a tuple in ``var``'s order.  The draw depends on ``seed`` and the
    chunk sizes only, so a variable's rows are the same read alone or with others.  With
    ``return_index``, also returns the chunk and the row inside the chunk of every sampled
    row.  :func:`draw_rows` gives the same draw unread, to read with other computations.

    Examples
    --------
    >>> import dask.array as da
    >>> from ooc_kernels.parallel.chunked import ChunkedData
    >>> data = ChunkedData({"X": da.arange(40.0, chunks=10).reshape(20, 2),
    ...                     "y": da.arange(20.0, chunks=5)})
    >>> X, y = sample_rows(data, n_rows=4, max_chunks=2, seed=0, var=("X", "y"),
    ...                    scheduler="sync")
    >>> bool((X[:, 0] == 2 * y).all())
    True
    """
    draw = draw_rows(data, n_rows=n_rows, max_chunks=max_chunks, seed=seed, var=var)
    return draw.read(scheduler, return_index)


def _chunk_labels_rows(labels, readers, picks, y_at, counts):
    """One chunk's distinct labels (with their counts) and, for a chunk of the draw, its
    drawn rows of every variable (``labels`` read once when it is one of them)."""
    y = np.asarray(labels())   # one chunk of y
    found = np.unique(y, return_counts=True) if counts else (np.unique(y),)
    return found, tuple((y if i == y_at else np.asarray(r()))[picks]   # one chunk's rows
                        for i, r in enumerate(readers))


def labels_and_rows(data: ChunkedData, draw: RowDraw, *, labels: str = "y",
                    counts: bool = False, scheduler: Any = None):
    """The distinct values of ``data[labels]`` (the classes of ``y``), with the count of each
    when ``counts``, and the rows of ``draw``, in one computation of one task per chunk.

    Each task reads its chunk of ``labels`` once (and, for a chunk of the draw, that chunk of
    every variable of the draw, keeping only the drawn rows), so the computation has as many
    tasks as chunks: on a ``distributed`` scheduler, whose cost is per task and per round
    trip, a fraction of ``da.unique`` and :func:`sample_rows` computed apart or together.
    The values are those of ``da.unique(data[labels], return_counts=counts)`` and of
    ``draw.rows(..., return_index=True)``.

    Returns
    -------
    labels : ndarray
        The distinct values, sorted.
    counts : ndarray of int64 or None
        How many times each value occurs (``counts=True``).
    rows : tuple
        ``(rows, chunk_of, row_of)`` as :meth:`RowDraw.rows` returns them.

    Examples
    --------
    >>> import dask.array as da
    >>> import numpy as np
    >>> from ooc_kernels.parallel.chunked import ChunkedData
    >>> labels = np.array([0, 1, 1, 2] * 5)
    >>> data = ChunkedData({"X": da.arange(40.0, chunks=10).reshape(20, 2),
    ...                     "y": da.from_array(labels, chunks=5)})
    >>> draw = draw_rows(data, n_rows=4, max_chunks=2, seed=0, var=("X", "y"))
    >>> found, n, ((X, y), chunk_of, row_of) = labels_and_rows(data, draw, counts=True,
    ...                                                        scheduler="sync")
    >>> found.tolist(), n.tolist(), X.shape
    ([0, 1, 2], [5, 10, 5], (4, 2))
    >>> bool((y == labels[(X[:, 0] // 2).astype(int)]).all())  # X's row r is (2r, 2r + 1)
    True
    """
    readers = data.chunk_readers()
    picks = dict(zip(draw.chosen.tolist(), draw.picks))
    y_at = draw.names.index(labels) if labels in draw.names else -1
    parts = [dask.delayed(_chunk_labels_rows, pure=True)(
        readers[labels][c], [readers[n][c] for n in draw.names] if c in picks else [],
        picks.get(c), y_at, counts) for c in range(data.n_chunks)]
    got = compute(*parts, scheduler=scheduler)
    values = np.concatenate([found[0] for found, _ in got])
    if counts:
        found, where = np.unique(values, return_inverse=True)
        total = np.zeros(len(found), dtype=np.int64)
        np.add.at(total, where.ravel(), np.concatenate([f[1] for f, _ in got]))
    else:
        found, total = np.unique(values), None
    chosen = draw.chosen.tolist()
    read = [got[c][1][i] for i in range(len(draw.names)) for c in chosen]
    return found, total, draw.rows(read, return_index=True)


def sample_dictionary(X, n_components: int, *, seed: int, scheduler: Any = None,
                      on_invalid: str = "error") -> np.ndarray:
    """``min(n_components, n)`` rows of ``X`` drawn uniformly without replacement, in
    storage order, reading only the chunks that hold a drawn row.

    Parameters
    ----------
    X : dask.array.Array or ndarray of shape (n, d)
        Chunked along the rows (a NumPy array is one chunk).
    n_components : int
        Rows to draw (all rows when ``n <= n_components``).
    seed : int
        Seed of the draw (the same seed draws the same rows whatever the chunking).
    scheduler : optional
        Where the chunk tasks run (see :func:`~ooc_kernels.parallel.scheduler.local_scheduler`).
    on_invalid : {"error", "skip"}, default="error"
        A drawn row with NaN or inf raises (``"error"``) or is left out (``"skip"``: the
        dictionary has fewer rows).

    Returns
    -------
    ndarray of shape (min(n_components, n), d), float64

    Raises
    ------
    ValidationError
        ``X`` has no rows, ``n_components`` is not a positive integer, or every drawn row
        was left out.
    InvalidDataError
        A drawn row has NaN or inf (with ``on_invalid="error"``).

    Examples
    --------
    >>> import dask.array as da
    >>> X = da.arange(40.0, chunks=8).reshape(20, 2)
    >>> D = sample_dictionary(X, 5, seed=0, scheduler="sync")
    >>> D.shape, bool((D[:, 1] - D[:, 0] == 1).all())
    ((5, 2), True)
    """
    if isinstance(n_components, bool) or not isinstance(n_components, Integral) \
            or n_components < 1:
        raise ValidationError(
            f"n_components must be a positive integer, got {n_components!r}.")
    n = int(X.shape[0])
    if n == 0:
        raise ValidationError("cannot draw a Nystrom dictionary from data with no rows; "
                              "pass a non-empty X.")
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(0x4E59,)))
    rows = np.arange(n) if n <= n_components else \
        np.sort(rng.choice(n, size=int(n_components), replace=False))
    if isinstance(X, np.ndarray):
        # the caller's in-memory rows: only the n_components drawn ones are copied
        D = np.asarray(X[rows], dtype=np.float64)  # n_components rows, not the data
    else:
        starts = np.concatenate([[0], np.cumsum(X.chunks[0])])
        chunk_of = np.searchsorted(starts, rows, side="right") - 1
        blocks = X.to_delayed(optimize_graph=True).ravel()
        used = np.unique(chunk_of)
        parts = [dask.delayed(_take)(blocks[c], rows[chunk_of == c] - starts[c])
                 for c in used]
        # each task returns only its chunk's drawn rows: n_components rows in all
        D = np.concatenate(compute(*parts, scheduler=scheduler))
        D = np.asarray(D, dtype=np.float64)
    finite = np.isfinite(D).all(axis=1)
    if on_invalid == "skip":
        D = D[finite]
        if not len(D):
            raise ValidationError(
                f"every one of the {len(rows)} rows drawn for the Nystrom dictionary has NaN "
                "or inf; give X finite rows.")
    elif not finite.all():
        raise InvalidDataError(
            f"row {int(rows[np.flatnonzero(~finite)[0]])} of X (drawn for the Nystrom "
            "dictionary) has NaN or inf; remove or impute the non-finite rows, or set "
            "on_invalid='skip'.")
    return D
