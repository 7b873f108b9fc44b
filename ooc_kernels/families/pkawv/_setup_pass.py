"""The set-up pass of the PKAWV estimators: the exact weighted moments and ranges of the
inputs and the target, and a uniform draw of rows, in one computation of one task per
chunk, none depending on how the rows are chunked.

Every chunk task reads its chunk of ``X``, ``y`` (and ``sample_weight``) once and returns
its rows' weighted mean, standard deviation, smallest, largest and largest magnitude of
every column, and weight sum (the finite rows of positive weight), and the rows of the
draw it holds; the moments of the chunks are
combined in chunk order (Chan's update, on the values divided by each column's largest
magnitude, so the squares stay finite), which gives the moments of all the rows up to
rounding, whatever the chunking.  The draw is ``min(n_rows, n)`` row positions drawn
uniformly without replacement from ``0 .. n - 1`` by ``seed`` alone, returned in the order
drawn (their first ones are a uniform draw too).

Examples
--------
>>> import dask.array as da
>>> import numpy as np
>>> from ooc_kernels.parallel.chunked import ChunkedData
>>> X = np.arange(40.0).reshape(20, 2)
>>> def stats(chunk):
...     data = ChunkedData({"X": da.from_array(X, chunks=(chunk, 2)),
...                         "y": da.from_array(X[:, 0], chunks=chunk)})
...     return setup_pass(data, n_rows=5, seed=0, scheduler="sync")
>>> a, b = stats(3), stats(20)
>>> bool(np.allclose(a.x_mean, X.mean(0)) and np.allclose(a.x_sd, X.std(0)))
True
>>> a.x_min.tolist(), a.x_max.tolist(), a.y_max_abs
([0.0, 1.0], [38.0, 39.0], 38.0)
>>> bool((a.rows == b.rows).all()), a.rows.shape
(True, (5, 2))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dask
import numpy as np

from ooc_kernels._moments import weighted_moments
from ooc_kernels.parallel.cluster import compute

__all__ = ["SetupStats", "setup_pass"]


@dataclass(frozen=True)
class SetupStats:
    """What :func:`setup_pass` returns: the weighted moments of all the finite rows of
    positive weight (``x_mean``, ``x_sd`` per column, ``y_mean``, ``y_sd``; zeros and
    ones when there are none), their smallest and largest values (``x_min``, ``x_max``
    per column, ``y_max_abs`` the largest magnitude of the target; zeros when there are
    none), and the drawn rows that are finite and of positive weight (``rows``, ``y``,
    ``weights``, in the order drawn); ``weight_sum`` is the weight of those rows (their
    number without ``sample_weight``)."""

    weight_sum: float
    x_mean: np.ndarray
    x_sd: np.ndarray
    y_mean: float
    y_sd: float
    x_min: np.ndarray
    x_max: np.ndarray
    y_max_abs: float
    rows: np.ndarray
    y: np.ndarray
    weights: np.ndarray


def _chunk_setup(x_reader, y_reader, w_reader, picks):
    """One chunk's ``(weight sum, mean, sd, largest magnitude, min, max)`` of its columns
    and target (None when no row is finite with a positive weight), and its drawn rows."""
    X = np.asarray(x_reader(), dtype=np.float64)   # one chunk
    y = np.asarray(y_reader(), dtype=np.float64).reshape(len(X))
    w = np.ones(len(X)) if w_reader is None else \
        np.asarray(w_reader(), dtype=np.float64).reshape(len(X))
    with np.errstate(invalid="ignore"):
        keep = np.isfinite(X).all(axis=1) & np.isfinite(y) & np.isfinite(w) & (w > 0)
    part = None
    if keep.any():
        values = np.column_stack([X[keep], y[keep]])
        weights = w[keep]
        unit = None if np.all(weights == weights[0]) else weights
        mean, sd = weighted_moments(values, unit)
        part = (float(weights.sum()), mean, sd, np.max(np.abs(values), axis=0),
                values.min(axis=0), values.max(axis=0))
    return part, (X[picks], y[picks], w[picks])


def _combine(parts, width: int):
    """``(weight sum, mean, sd, min, max)`` of the union of the chunks' rows from the chunks'
    ``parts``."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return 0.0, np.zeros(width), np.ones(width), np.zeros(width), np.zeros(width)
    big = np.max([p[3] for p in parts], axis=0)
    scale = np.where(np.isfinite(big) & (big > 0), big, 1.0)
    total, mean, m2 = 0.0, np.zeros(width), np.zeros(width)
    for weight, part_mean, part_sd, *_ in parts:   # chunk order: the same rounding each fit
        part_mean, part_sd = part_mean / scale, part_sd / scale
        new_total = total + weight
        delta = part_mean - mean
        mean = mean + delta * (weight / new_total)
        m2 = m2 + weight * part_sd ** 2 + delta ** 2 * (total * weight / new_total)
        total = new_total
    return (total, mean * scale, np.sqrt(m2 / total) * scale, np.min([p[4] for p in parts], axis=0),
            np.max([p[5] for p in parts], axis=0))


def setup_pass(data, *, n_rows: int, seed: int, scheduler: Any = None) -> SetupStats:
    """The exact moments of ``data``'s rows and a uniform draw of ``n_rows`` of them, in one
    computation (one task per chunk, each reading its chunk once; the result is small).

    Parameters
    ----------
    data : ChunkedData
        With ``X``, ``y`` and optionally ``sample_weight`` (the rows are weighted by it).
    n_rows : int
        Rows to draw (all the rows, in a random order, when there are fewer).
    seed : int
        The draw's seed: the same positions whatever the chunking.
    scheduler : optional
        Where the chunk tasks run.

    Returns
    -------
    SetupStats
    """
    n = data.n_samples
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(0x5E7,)))
    order = rng.choice(n, size=min(int(n_rows), n), replace=False)
    positions = np.sort(order)
    starts = np.concatenate([[0], np.cumsum(data.chunk_sizes)])
    chunk_of = np.searchsorted(starts, positions, side="right") - 1
    readers = data.chunk_readers()
    weights = readers.get("sample_weight")
    parts = [dask.delayed(_chunk_setup, pure=True)(
        readers["X"][c], readers["y"][c], None if weights is None else weights[c],
        positions[chunk_of == c] - starts[c]) for c in range(data.n_chunks)]
    got = compute(*parts, scheduler=scheduler)
    d = int(data["X"].shape[1])
    total, mean, sd, low, high = _combine([g[0] for g in got], d + 1)
    sd = np.where(np.isfinite(sd) & (sd > 0), sd, 1.0)
    back = np.searchsorted(positions, order)   # sorted positions -> the order drawn
    rows, y, w = (np.concatenate([g[1][i] for g in got])[back] for i in range(3))
    keep = np.isfinite(rows).all(axis=1) & np.isfinite(y) & np.isfinite(w) & (w > 0)
    return SetupStats(weight_sum=float(total), x_mean=mean[:d], x_sd=sd[:d], y_mean=float(mean[d]),
                      y_sd=float(sd[d]), x_min=low[:d], x_max=high[:d],
                      y_max_abs=float(max(abs(low[d]), abs(high[d]))),
                      rows=rows[keep], y=y[keep], weights=w[keep])
