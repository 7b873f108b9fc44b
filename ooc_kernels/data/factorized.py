"""Factorized data ``A = U V``: the :class:`Factorized` input and the sparse-recovery model.

A factorized dataset (the ``factorized`` schema, :data:`~ooc_kernels.data.declarations.FACTORIZED`)
stores a data matrix ``A`` (``n_samples x n_features``) by its factors only: ``U(sample,
rank)``, chunked along the samples like ``X``, and ``V(rank, feature)``, small and given
whole to every chunk task.  ``A`` itself is never formed: a linear model needs ``A x = U (V
x)`` and ``A^T y = V^T (U^T y)``, and a task holding one chunk of ``U`` plus ``V`` has all it
needs (DSPDC, Algorithm 2 of Yu, Lin and Yang, ``docs/specs/dspdc.md`` §3).

This module holds what needs nothing but NumPy:

* :class:`Factorized`, the container that lets the estimators take factors in memory or
  lazily, ``fit(ok.Factorized(U, V), y)``; :func:`ooc_kernels.data.inputs.as_chunked`
  validates it and turns it into the engine's ``ChunkedData`` (sample variables ``U`` and
  ``y``, whole variable ``V``);
* the model of the ``sparse_recovery`` generator (paper section 6.1a): raw
  ``X_ij ~ N(0, 1)``, a sparse coefficient vector ``beta`` (ones on the first
  ``n_informative`` features), logistic labels in ``{-1, +1}``, and a random measurement
  matrix ``G`` (``rank x n_features``, entries ``N(0, 1/rank)``) such that ``U = X G^T`` and
  ``V = G``: the data matrix is ``A = X G^T G``, a random feature reduction of ``X``
  (``E[G^T G] = I``).

The generator itself is registered in :mod:`ooc_kernels.data.generators`; random instance
reduction and the dense twin ``A = U V`` are in :mod:`ooc_kernels.data.reductions`.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> G = sparse_recovery_measurements(rng, 20, 100)
>>> chunk = sparse_recovery_chunk(rng, 8, G.astype(np.float32), n_informative=50)
>>> {k: (v.shape, v.dtype.name) for k, v in chunk.items()}
{'U': ((8, 20), 'float32'), 'y': ((8,), 'int8')}
>>> sorted(set(chunk["y"].tolist()) | {-1, 1})
[-1, 1]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "Factorized",
    "SPARSE_RECOVERY_INFORMATIVE",
    "sparse_recovery_n_informative",
    "sparse_recovery_coef",
    "sparse_recovery_measurements",
    "sparse_recovery_labels",
    "sparse_recovery_chunk",
]

#: Default number of informative features of ``sparse_recovery`` (the paper's 50), clipped
#: to ``n_features``.
SPARSE_RECOVERY_INFORMATIVE = 50


class Factorized:
    """A data matrix ``A = U V`` given by its factors, as an input of the estimators.

    ``fit(ok.Factorized(U, V), y)`` fits a linear model on ``A = U V`` without ever forming
    ``A``: :func:`ooc_kernels.data.inputs.as_chunked` turns it into chunks of ``U`` (and
    ``y``) along the samples, with ``V`` given whole to every chunk task.

    Parameters
    ----------
    U : array-like, dask.array.Array or xarray.DataArray, shape (n_samples, rank)
        The left factor, one row per sample.  A Dask array or a Dask-backed DataArray is
        read chunk by chunk and must be chunked along its first (sample) axis only; an
        in-memory array, or a DataArray without Dask, is cut into ``chunk_size`` rows.
    V : array-like, dask.array.Array or xarray.DataArray, shape (rank, n_features)
        The right factor, small: it is read whole (and checked for NaN/inf) when the input
        is adapted.

    Attributes
    ----------
    U, V
        The factors, as given (nothing is copied, converted or read here).

    Notes
    -----
    Nothing is validated when the container is built: :func:`~ooc_kernels.data.inputs.as_chunked`
    checks the factors and ``y`` together and reports every problem in one error (ranks of
    ``U`` and ``V`` that differ, ``U`` chunked along its rank axis, NaN/inf in ``V``, wrong
    dimensions or dtypes, a ``y`` of another length); NaN/inf in a lazy ``U`` are reported
    by the chunk task that reads them, naming the chunk and the row.  ``U`` keeps its dtype
    when it is float32 or float64 (other numbers become float64) and ``V`` is converted to
    the dtype of ``U``.

    A stored factorized dataset (a Zarr store or catalog entry following the ``factorized``
    schema) needs no container: pass the Dataset (or the entry) itself.

    Examples
    --------
    >>> import numpy as np
    >>> import ooc_kernels as ok
    >>> U, V = np.ones((6, 2)), np.arange(6.0).reshape(2, 3)
    >>> F = ok.Factorized(U, V)
    >>> F
    Factorized(U=ndarray (6, 2), V=ndarray (2, 3))
    >>> F.shape, F.rank
    ((6, 3), 2)
    >>> from ooc_kernels.data.inputs import as_chunked
    >>> data = as_chunked(F, np.array([1, -1, 1, -1, 1, -1]), chunk_size=4)
    >>> data.chunk_sizes, sorted(data.variables), sorted(data.whole)
    ((4, 2), ['U', 'y'], ['V'])
    >>> data.dims["U"], data.dims["V"], data.n_features
    (('sample', 'rank'), ('rank', 'feature'), 3)
    """

    __slots__ = ("U", "V")

    def __init__(self, U: Any, V: Any):
        self.U = U
        self.V = V

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_samples, n_features)`` of ``A = U V`` (from the factors' shapes)."""
        return (int(np.shape(self.U)[0]), int(np.shape(self.V)[-1]))

    @property
    def rank(self) -> int:
        """The inner dimension ``d`` (columns of ``U``)."""
        return int(np.shape(self.U)[-1])

    def __repr__(self) -> str:
        def describe(a):
            return f"{type(a).__name__} {tuple(int(n) for n in np.shape(a))}"

        return f"Factorized(U={describe(self.U)}, V={describe(self.V)})"


# --------------------------------------------------------------------------- sparse recovery
def sparse_recovery_n_informative(n_features: int, n_informative: int | None = None) -> int:
    """The number ``k`` of informative features: ``n_informative``, or ``min(50, p)``.

    Examples
    --------
    >>> sparse_recovery_n_informative(100), sparse_recovery_n_informative(30)
    (50, 30)
    >>> sparse_recovery_n_informative(100, 5)
    5
    """
    if n_informative is None:
        return min(SPARSE_RECOVERY_INFORMATIVE, int(n_features))
    return int(n_informative)


def sparse_recovery_coef(n_features: int, n_informative: int | None = None) -> np.ndarray:
    """The true coefficients ``beta`` of ``sparse_recovery``: 1 on the first ``k`` features.

    Parameters
    ----------
    n_features : int
        ``p``, the number of raw features.
    n_informative : int, optional
        ``k`` (default ``min(50, p)``).

    Returns
    -------
    ndarray of float64, shape (n_features,)

    Examples
    --------
    >>> sparse_recovery_coef(6, 2).tolist()
    [1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    """
    beta = np.zeros(int(n_features))
    beta[:sparse_recovery_n_informative(n_features, n_informative)] = 1.0
    return beta


def sparse_recovery_measurements(rng: np.random.Generator, rank: int,
                                 n_features: int) -> np.ndarray:
    """The measurement matrix ``G`` (``rank x n_features``), entries iid ``N(0, 1/rank)``.

    One draw ``rng.standard_normal((rank, n_features)) / sqrt(rank)``, so that
    ``E[G^T G] = I``.  The generator draws it from
    :func:`~ooc_kernels.data.generators.whole_rng` and stores it (as float32) as ``V``.

    Examples
    --------
    >>> G = sparse_recovery_measurements(np.random.default_rng(0), 4, 3)
    >>> G.shape, G.dtype.name
    ((4, 3), 'float64')
    """
    return rng.standard_normal((int(rank), int(n_features))) / math.sqrt(int(rank))


def sparse_recovery_labels(X: np.ndarray, beta: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Labels ``b_i = +1`` when ``u_i < 1 / (1 + exp(-X_i beta))``, else ``-1`` (int8).

    ``u`` holds uniform draws on ``[0, 1)``, one per row: ``b_i = +1`` with probability
    ``1 / (1 + exp(-X_i beta))``.

    Examples
    --------
    >>> X = np.array([[50.0, 0.0], [-50.0, 0.0]])
    >>> sparse_recovery_labels(X, np.array([1.0, 0.0]), np.array([0.5, 0.5])).tolist()
    [1, -1]
    """
    from scipy.special import expit

    p = expit(np.asarray(X, dtype=np.float64) @ np.asarray(beta, dtype=np.float64))  # one chunk
    return np.where(np.asarray(u) < p, 1, -1).astype(np.int8)


def sparse_recovery_chunk(rng: np.random.Generator, n_rows: int, V: np.ndarray,
                          n_informative: int | None = None) -> dict[str, np.ndarray]:
    """One chunk of ``sparse_recovery``: ``{"U": X G^T (float32), "y": labels (int8)}``.

    The draws, in this order, from the chunk's generator ``rng``:

    1. ``X = rng.standard_normal((n_rows, p))``, the raw data (float64, never stored);
    2. ``u = rng.random(n_rows)``, then ``y = sparse_recovery_labels(X, beta, u)`` with
       ``beta = sparse_recovery_coef(p, n_informative)``;

    then ``U = X @ G^T`` in float64, with ``G = V`` as stored (float32 values), cast to
    float32.  So ``U V = X G^T G`` up to the float32 rounding of ``U``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The chunk's generator (:func:`~ooc_kernels.data.generators.chunk_rng`).
    n_rows : int
    V : ndarray, shape (rank, n_features)
        The measurement matrix ``G`` as stored.
    n_informative : int, optional
        ``k`` (default ``min(50, p)``).

    Returns
    -------
    dict of str to ndarray

    Examples
    --------
    >>> V = np.eye(2, 4, dtype=np.float32)
    >>> sparse_recovery_chunk(np.random.default_rng(1), 3, V, 1)["U"].shape
    (3, 2)
    """
    G = np.asarray(V, dtype=np.float64)  # whole by definition: rank x n_features
    n_features = G.shape[1]
    X = rng.standard_normal((int(n_rows), n_features))  # one chunk of the raw data
    y = sparse_recovery_labels(X, sparse_recovery_coef(n_features, n_informative),
                               rng.random(int(n_rows)))
    return {"U": (X @ G.T).astype(np.float32), "y": y}
