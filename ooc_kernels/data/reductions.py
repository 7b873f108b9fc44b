"""Factorized stores from supervised ones and back: random instance reduction, dense twins.

:func:`instance_reduction` (randomized instance reduction, ``docs/specs/dspdc.md`` §3.1)
turns a supervised dataset ``X(sample, feature)``, ``y(sample)`` into a factorized one
(``A = U V``, the ``factorized`` schema) with ``U = G^T`` and ``V = G X``, where ``G`` is a
``rank x n_samples`` random matrix with entries iid ``N(0, 1/rank)``.  It reads ``X`` once,
chunk by chunk, holding one chunk and ``V`` (``rank x n_features``) at a time.

:func:`materialize_chunks` and :func:`materialize` go the other way: the dense twin
``X = U V`` of a factorized dataset, chunk by chunk, so that the same rows can be given to
solvers that need a plain ``X`` (the peers of a benchmark).

Examples
--------
>>> import os, tempfile
>>> import numpy as np
>>> from ooc_kernels.data import make_dataset, open_zarr_dataset
>>> d = tempfile.mkdtemp()
>>> src = make_dataset("nonlinear_binary", os.path.join(d, "nb.zarr"), 60, chunk_size=20,
...                    n_features=5)
>>> red = instance_reduction(src, os.path.join(d, "red.zarr"), rank=4, random_state=0)
>>> ds = open_zarr_dataset(red)
>>> dict(ds.sizes), ds.attrs["ooc_kernels_schema"]
({'sample': 60, 'rank': 4, 'feature': 5}, 'factorized')
>>> [c["X"].shape for c in materialize_chunks(red)]
[(20, 5), (20, 5), (20, 5)]
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .._checks import non_finite_error
from .._paths import is_path, user_path
from .._progress import progress_bar
from ..exceptions import DatasetExistsError, InvalidDataError, ValidationError
from .declarations import SCHEMA_ATTR, TASKS, infer_task, make_attrs
from .generators import _check_random_state, chunk_rng
from .zarr_io import chunk_bounds, n_chunks, write_chunks

__all__ = ["instance_reduction", "reduction_rows", "materialize_chunks", "materialize"]

#: Source attributes copied (under ``source``) into the stores written here.
_PROVENANCE = ("generator", "generator_params", "random_state", "split", "reduction", "rank",
               "description")


def _positive(name: str, value: Any, none_ok: bool = False) -> int | None:
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValidationError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def reduction_rows(random_state: int, chunk_index: int, n_rows: int, rank: int) -> np.ndarray:
    """Rows of ``U = G^T`` in chunk ``chunk_index`` of :func:`instance_reduction` (float32).

    ``chunk_rng(random_state, "train", chunk_index).standard_normal((n_rows, rank)) /
    sqrt(rank)``, cast to float32: the columns of ``G`` (``rank x n_samples``, entries iid
    ``N(0, 1/rank)``) for the samples of that chunk.  Like the generators' chunks, it
    depends on nothing else (not on ``n_samples``, not on the other chunks).

    Examples
    --------
    >>> reduction_rows(0, 2, 3, 4).shape
    (3, 4)
    >>> bool((reduction_rows(0, 2, 3, 4) == reduction_rows(0, 2, 3, 4)).all())
    True
    """
    rng = chunk_rng(random_state, "train", chunk_index)
    return (rng.standard_normal((int(n_rows), int(rank))) / math.sqrt(int(rank))
            ).astype(np.float32)


def _as_data(source: Any, y: Any = None, chunk_size: int | None = None, *, fit: bool):
    """``(ChunkedData, store path or None)`` of a store path, a Dataset, a reader or a
    :class:`~ooc_kernels.data.factorized.Factorized`."""
    from .inputs import as_chunked
    from .schema import open_zarr_dataset

    where = None
    if is_path(source):
        where = str(user_path(source).absolute())
        source = open_zarr_dataset(source, require_y=fit)
    return as_chunked(source, y, chunk_size=chunk_size, require_y=fit), where


def _target(y_dtype: np.dtype, attrs: dict) -> tuple[str, np.dtype]:
    """``(task, dtype the written store holds)`` for targets of ``y_dtype``."""
    task = attrs.get("task") if attrs.get("task") in TASKS else infer_task(y_dtype)
    kind = np.dtype(y_dtype).kind
    if task == "regression" and kind in "biuf":
        return task, np.dtype(np.float32)
    if task == "classification" and kind in "biuf":
        return task, np.dtype(y_dtype) if kind in "iu" else \
            np.dtype(np.int8 if kind == "b" else np.int32)
    raise ValidationError(
        f"y has dtype {np.dtype(y_dtype)} (task={task!r}); the stores written here hold "
        "integer labels (classification) or float32 targets (regression): encode the labels "
        "as integers first, e.g. y = np.unique(y, return_inverse=True)[1]"
    )


def _cast_y(y: np.ndarray, dtype: np.dtype, chunk: int) -> np.ndarray:
    """One chunk of targets as ``dtype``; float labels must be whole numbers."""
    if dtype.kind in "iu" and y.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(y) | (y != np.round(y)))
        if bad.size:
            raise InvalidDataError(
                f"y holds a label that is not a whole number ({y[bad[0]].item()!r}) in chunk "
                f"{chunk}, row {int(bad[0])}; a classification store holds integer labels: "
                "fix the labels, or declare task='regression'"
            )
    return y.astype(dtype, copy=False)


def _provenance(attrs: dict, where: str | None) -> dict:
    out = {k: attrs[k] for k in _PROVENANCE if k in attrs}
    if where is not None:
        out["path"] = where
    return out


def _check_target(path: Any, overwrite: bool) -> None:
    target = user_path(path).absolute()
    if target.exists() and not overwrite:
        raise DatasetExistsError(
            f"dataset path {str(target)!r} already exists; pass overwrite=True to replace it, "
            "or choose another path"
        )


def instance_reduction(source: Any, path: str | os.PathLike, rank: int, *,
                       random_state: int = 0, chunk_size: int | None = None,
                       overwrite: bool = False, progress: bool | None = None) -> Path:
    """Write the random instance reduction ``A = G^T G X`` of a supervised dataset.

    ``G`` is a ``rank x n_samples`` matrix with entries iid ``N(0, 1/rank)``; the store
    written follows the ``factorized`` schema with ``U = G^T`` (``n_samples x rank``) and
    ``V = G X`` (``rank x n_features``), and ``y`` copied.  The reduced problem keeps the
    ``n_samples`` rows and the targets: row ``i`` of ``A = U V`` is ``sum_j <g_i, g_j>
    X_j``, with ``g_i`` the ``i``-th column of ``G``.  Since ``E[G^T G] = I`` (entries of
    variance ``1/rank``), ``A`` is an unbiased random sketch of ``X`` (``E[A] = X``) of
    rank at most ``rank``, but a noisy one row by row: ``||A - X||_F / ||X||_F`` is about
    ``sqrt(n_samples / rank)``.  What it keeps is the geometry of the features:
    ``V^T V = X^T G^T G X`` approximates ``X^T X`` (a Johnson-Lindenstrauss sketch of the
    ``n_samples``-long columns of ``X``).  A model fitted on ``(A, y)`` has coefficients
    in the space of the original features, so it predicts on raw ``X`` rows.

    One pass over ``X``, chunk by chunk: chunk ``k`` of ``U`` is drawn from its own
    generator (:func:`reduction_rows`) and ``V += U_k^T X_k`` (float64).  Memory: one chunk
    of ``X`` and of ``U`` plus ``V``.  Then ``U`` (drawn again) and ``y`` are written chunk
    by chunk, ``y`` read a second time (``X`` is not); the write is atomic (nothing appears
    at ``path`` when it fails).

    Parameters
    ----------
    source : str, bytes, path-like, xarray.Dataset or Intake reader
        A supervised dataset with targets: a store path (opened with
        :func:`~ooc_kernels.data.open_zarr_dataset`), a Dataset (its variables by name or
        declaration) or a catalog entry's reader.
    path : str, bytes or path-like
        The factorized store to write.
    rank : int
        ``d``, the number of rows of ``G`` (at most ``n_samples``).
    random_state : int, default 0
        Seed of ``G``: chunk ``k`` of ``U`` depends only on it, ``k``, its number of rows
        and ``rank``.
    chunk_size : int, optional
        Rows per chunk of the written store (default: the source's first chunk, so that
        each output chunk reads exactly one source chunk).
    overwrite : bool, default False
        Replace an existing store at ``path``.
    progress : bool, optional
        Progress bars over the chunks (default: on an interactive terminal).

    Returns
    -------
    pathlib.Path
        The store, with attributes ``task``, ``classes`` (when the source has them),
        ``reduction="instance_reduction"``, ``rank``, ``random_state`` and ``source``
        (the source's provenance and path).

    Raises
    ------
    ValidationError
        A bad argument, a source that is not supervised or has no targets, ``rank`` above
        ``n_samples``.
    InvalidDataError
        NaN/inf in ``X`` or ``y``, named by chunk and row (nothing is written).
    DatasetExistsError
        ``path`` exists and ``overwrite`` is False (checked before reading anything).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np, xarray as xr
    >>> from ooc_kernels.data import open_zarr_dataset
    >>> rng = np.random.default_rng(0)
    >>> ds = xr.Dataset({"X": (("sample", "feature"), rng.random((40, 3))),
    ...                  "y": (("sample",), rng.random(40))}).chunk({"sample": 10})
    >>> p = instance_reduction(ds, os.path.join(tempfile.mkdtemp(), "r.zarr"), rank=5)
    >>> red = open_zarr_dataset(p)
    >>> red.U.chunks, red.V.shape, red.attrs["task"]
    (((10, 10, 10, 10), (5,)), (5, 3), 'regression')
    >>> U = red.U.values.astype(np.float64)               # small: a 40-row example
    >>> # 40 rows: comparing in memory with the formula is the point of the example
    >>> bool(np.allclose(red.V.values, U.T @ ds.X.values, rtol=1e-5, atol=1e-5))
    True
    """
    rank = _positive("rank", rank)
    random_state = _check_random_state(random_state)
    chunk_size = _positive("chunk_size", chunk_size, none_ok=True)
    _check_target(path, overwrite)
    data, where = _as_data(source, fit=True)
    if data.X is None:
        raise ValidationError(
            f"instance_reduction takes a supervised dataset (X, y), got the variables "
            f"{sorted(data.variables) + sorted(data.whole)} "
            f"({data.attrs.get(SCHEMA_ATTR, 'supervised')!r} schema); pass a store or "
            "Dataset with X(sample, feature) and y(sample)"
        )
    n, p = data.n_samples, data.n_features
    if rank > n:
        raise ValidationError(
            f"rank={rank} must be <= n_samples={n}: G maps the {n} samples to rank < "
            "n_samples combinations; lower rank"
        )
    task, y_dtype = _target(data.y.dtype, data.attrs)
    size = min(chunk_size or data.chunk_sizes[0], n)
    total = n_chunks(n, size)
    V = np.zeros((rank, p), dtype=np.float64)
    X = data.X
    with progress_bar(total=total, desc="instance_reduction: V = G X", enabled=progress,
                      unit="chunk") as bar:
        for k in range(total):
            lo, hi = chunk_bounds(k, n, size)
            Xk = np.asarray(X[lo:hi].compute(), dtype=np.float64)  # one chunk
            bad = ~np.isfinite(Xk)
            if bad.any():
                r, j = (int(i) for i in np.argwhere(bad)[0])
                raise non_finite_error("X", Xk[r, j].item(), k, r, j,
                                       context=f" (sample {lo + r} of the source)")
            V += reduction_rows(random_state, k, hi - lo, rank).astype(np.float64).T @ Xk
            bar.update(1)

    def chunks() -> Iterator[dict]:
        for k in range(total):
            lo, hi = chunk_bounds(k, n, size)
            yk = np.asarray(data.y[lo:hi].compute())  # one chunk
            yield {"U": reduction_rows(random_state, k, hi - lo, rank),
                   "y": _cast_y(yk, y_dtype, k)}

    attrs = make_attrs(task, classes=data.attrs.get("classes"),
                       reduction="instance_reduction", rank=rank, random_state=random_state,
                       source=_provenance(data.attrs, where))
    return write_chunks(path, chunks(), n_samples=n, chunk_size=size, schema="factorized",
                        whole={"V": V.astype(np.float32)}, dtypes={"y": y_dtype},
                        attrs=attrs, overwrite=overwrite, progress=progress,
                        desc="instance_reduction: U, y")


def _factorized_data(source: Any, y: Any, chunk_size: int | None, fit: bool):
    data, where = _as_data(source, y, chunk_size, fit=fit)
    if "U" not in data.variables or "V" not in data.whole:
        raise ValidationError(
            f"expected factorized data (U, V), got the variables "
            f"{sorted(data.variables) + sorted(data.whole)}; pass a store or Dataset of the "
            "'factorized' schema, or ok.Factorized(U, V)"
        )
    return data, where


def materialize_chunks(source: Any, y: Any = None, *,
                       chunk_size: int | None = None) -> Iterator[dict[str, np.ndarray]]:
    """Yield the dense twin ``X = U V`` of factorized data, one chunk at a time.

    Parameters
    ----------
    source : str, bytes, path-like, xarray.Dataset, Intake reader or Factorized
        Factorized data: a store path, a Dataset or entry of the ``factorized`` schema, or
        ``ok.Factorized(U, V)``.
    y : array-like, optional
        Targets, for a :class:`~ooc_kernels.data.factorized.Factorized` source (a store
        brings its own).
    chunk_size : int, optional
        Rows per chunk yielded (default: the source's first chunk).

    Yields
    ------
    dict of str to ndarray
        ``{"X": float32 (rows, n_features), "y": (rows,)}`` (no ``"y"`` without
        targets), in sample order: ``X = U_k V`` computed in float64 and cast to float32.
        Memory: one chunk of ``U`` and of ``X`` plus ``V``.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.data.factorized import Factorized
    >>> U, V = np.arange(6.0).reshape(3, 2), np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    >>> [c["X"].tolist() for c in materialize_chunks(Factorized(U, V), chunk_size=2)]
    [[[0.0, 1.0, 1.0], [2.0, 3.0, 5.0]], [[4.0, 5.0, 9.0]]]
    """
    chunk_size = _positive("chunk_size", chunk_size, none_ok=True)
    data, _ = _factorized_data(source, y, chunk_size, fit=False)
    return _materialized(data, chunk_size)


def _materialized(data, chunk_size: int | None) -> Iterator[dict[str, np.ndarray]]:
    from ooc_kernels.parallel.cluster import compute  # bounded waits on a Client

    (V,) = compute(data.whole["V"])
    V = np.asarray(V, dtype=np.float64)  # small
    n = data.n_samples
    size = min(chunk_size or data.chunk_sizes[0], n)
    names = [k for k in ("U", "y") if k in data.variables]
    for k in range(n_chunks(n, size)):
        lo, hi = chunk_bounds(k, n, size)
        parts = compute(*(data.variables[v][lo:hi] for v in names))  # one chunk
        out = {"X": (np.asarray(parts[0], dtype=np.float64) @ V).astype(np.float32)}
        if len(parts) > 1:
            out["y"] = np.asarray(parts[1])
        yield out


def materialize(source: Any, path: str | os.PathLike, y: Any = None, *,
                chunk_size: int | None = None, overwrite: bool = False,
                progress: bool | None = None) -> Path:
    """Write the dense twin ``X = U V`` of factorized data as a supervised store.

    The rows are those of the source in the same order, with the same targets: a
    factorized dataset and its twin describe the same problem, so a factorized solver
    and one that needs a plain ``X`` (a benchmark's peers) can be compared on them.  The
    twin is ``n_features / rank`` times larger than ``U``; it is written chunk by chunk
    (:func:`materialize_chunks`) and atomically.

    Parameters
    ----------
    source, y, chunk_size
        See :func:`materialize_chunks`; targets are required.
    path : str, bytes or path-like
        The supervised store to write.
    overwrite : bool, default False
        Replace an existing store at ``path``.
    progress : bool, optional
        Progress bar over the chunks.

    Returns
    -------
    pathlib.Path
        The store; its attributes keep ``task`` and ``classes`` and, under ``source``, the
        source's provenance (generator, its parameters, seed ...) and path.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from ooc_kernels.data import make_dataset, open_zarr_dataset
    >>> d = tempfile.mkdtemp()
    >>> f = make_dataset("sparse_recovery", os.path.join(d, "f.zarr"), 30, chunk_size=10,
    ...                  n_features=8, rank=3)
    >>> twin = open_zarr_dataset(materialize(f, os.path.join(d, "twin.zarr")))
    >>> fa = open_zarr_dataset(f)
    >>> twin.X.shape, twin.attrs["source"]["generator"]
    ((30, 8), 'sparse_recovery')
    >>> A = fa.U.values.astype(np.float64) @ fa.V.values      # small: a 30-row example
    >>> bool(np.allclose(twin.X.values, A, rtol=1e-6, atol=1e-6))
    True
    """
    chunk_size = _positive("chunk_size", chunk_size, none_ok=True)
    _check_target(path, overwrite)
    data, where = _factorized_data(source, y, chunk_size, fit=True)
    task, y_dtype = _target(data.y.dtype, data.attrs)
    n = data.n_samples
    size = min(chunk_size or data.chunk_sizes[0], n)
    chunks = ({"X": c["X"], "y": _cast_y(c["y"], y_dtype, k)}
              for k, c in enumerate(_materialized(data, size)))
    attrs = make_attrs(task, classes=data.attrs.get("classes"),
                       source=_provenance(data.attrs, where))
    return write_chunks(path, chunks, n_samples=n, chunk_size=size,
                        sizes={"feature": data.n_features}, dtypes={"y": y_dtype},
                        attrs=attrs, overwrite=overwrite, progress=progress,
                        desc="materialize: X = U V")
