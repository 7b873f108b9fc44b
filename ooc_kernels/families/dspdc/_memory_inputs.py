"""The chunks of a DSPDC fit's in-memory input as NumPy arrays, without Dask.

A fit on NumPy or pandas input still goes through :class:`~ooc_kernels.parallel.chunked.
ChunkedData` (Dask arrays over the inputs), which the out-of-core set-up reads with Dask
graphs: the column moments, ``Lambda``'s statistics, the weights' sums, the classes and the
solver's rows.  For input held in memory, :func:`memory_chunks` gives the same chunks as
slices of the arrays the fit was given (converted as the estimator's validation converts
them), so the set-up runs the same per-chunk functions in the calling thread, in the same
order, and builds the same configuration bit for bit, with no graph, no hashing of the
data and no scheduler.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.data.inputs import as_chunked
>>> X, y = np.arange(10.0).reshape(5, 2), np.arange(5.0)
>>> data = as_chunked(X, y, chunk_size=2)
>>> chunks = memory_chunks(data, X, y, None, regression=True)
>>> [c.tolist() for c in chunks["y"]]
[[0.0, 1.0], [2.0, 3.0], [4.0]]
"""

from __future__ import annotations

import numpy as np

__all__ = ["fit_memory_chunks", "in_memory_rounds", "memory_chunks", "memory_classes",
           "one_group_in_memory", "setup_calls", "setup_inputs", "weight_sums"]


def memory_chunks(data, X, y, sample_weight, *, regression: bool) -> dict | None:
    """``{name: [chunk, ...]}`` of ``data``'s sample variables (``X``, ``y``, and
    ``sample_weight`` when given) as C-ordered slices of the in-memory inputs ``X``, ``y``
    and ``sample_weight`` that ``data`` was made from (views unless the input is in
    another order), or None when they do not describe the same arrays (shapes, dtypes or
    variables differ: then the caller reads ``data``).

    ``X`` is converted as the estimators' validation converts it (float64, float32 kept;
    a DataFrame to its values), ``y`` to a 1-D array (numbers for a regressor when given as
    objects), ``sample_weight`` to float64.
    """
    from sklearn.utils.validation import check_array

    try:
        arrays = {"X": check_array(X, dtype=[np.float64, np.float32],
                                   ensure_all_finite=False)}
        yn = np.asarray(y)
        if yn.ndim == 2 and yn.shape[1] == 1:
            yn = yn[:, 0]
        if regression and yn.dtype.kind == "O":
            yn = yn.astype(np.float64)
        arrays["y"] = yn
        if sample_weight is not None:
            arrays["sample_weight"] = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if set(arrays) != set(data.variables):
        return None
    for name, array in arrays.items():
        lazy = data.variables[name]
        if array.shape != tuple(lazy.shape) or array.dtype != lazy.dtype:
            return None
    bounds = np.concatenate([[0], np.cumsum(data.chunk_sizes)]).astype(np.int64)
    # C-ordered as Dask's chunks are (a view of C-ordered input, a copy of a DataFrame's
    # columns): the per-chunk statistics then sum in the same order
    return {name: [np.ascontiguousarray(array[lo:hi]) for lo, hi in zip(bounds[:-1],
                                                                        bounds[1:])]
            for name, array in arrays.items()}



def setup_calls(lazy: bool, sched):
    """``(defer, value)`` for a set-up written once for both kinds of input:
    ``value(defer(f)(*args))`` is ``f(*args)``, through a Dask graph on ``sched`` when
    ``lazy`` (``dask.delayed(f, pure=True)`` and ``dask.compute`` with the bounded waits of
    :func:`~ooc_kernels.parallel.cluster.compute` on a Client: a lost scheduler is a
    :class:`~ooc_kernels.exceptions.SchedulerLostError` within seconds), else called now.

    >>> defer, value = setup_calls(False, None)
    >>> value(defer(sum)([1, 2]))
    3
    """
    if not lazy:
        return (lambda fn: fn), (lambda result: result)
    import dask

    from ooc_kernels.parallel.cluster import compute

    # a tuple of delayed values is one delayed value (compute takes collections)
    return ((lambda fn: dask.delayed(fn, pure=True)),
            (lambda result: compute(dask.delayed(result), scheduler=sched)[0]))


def fit_memory_chunks(estimator, data) -> dict | None:
    """The chunks of ``data`` as NumPy arrays (:func:`memory_chunks`) when the estimator's
    fit was given input held in memory (its ``_memory_inputs``: ``(X, y,
    sample_weight)``, dense), else None; computed once per ``data`` and kept in its
    ``_memory`` for the fit."""
    inputs = getattr(estimator, "_memory_inputs", None)
    if inputs is None or estimator._factorized(data):
        return None
    held = getattr(estimator, "_memory", None)
    if held is None or held[0] is not data:
        held = estimator._memory = (data, memory_chunks(
            data, *inputs, regression=not estimator._is_classifier))
    return held[1]


def memory_classes(chunks: dict | None) -> np.ndarray | None:
    """The sorted distinct labels of the chunks' ``y`` (what a Dask reduction over ``y``
    finds), or None without chunks or when the labels cannot be ordered (the caller's
    reduction then reports it).

    >>> memory_classes({"y": [np.array([3, 1]), np.array([3])]}).tolist()
    [1, 3]
    """
    if chunks is None:
        return None
    try:
        return np.unique(np.concatenate(chunks["y"]))
    except TypeError:
        return None


def setup_inputs(estimator, data, sched):
    """``(chunks, defer, value)`` of a set-up pass of ``estimator``'s fit on ``data``:
    the chunks as NumPy arrays with calls made now when the input is held in memory
    (:func:`fit_memory_chunks`), else ``data``'s delayed chunks with Dask's
    (:func:`setup_calls`).  Records in ``estimator._start_in_memory`` whether the fit's
    rounds run in memory and compute the start from the rows they hold
    (:func:`in_memory_rounds`; else the set-up's read gathers what the start needs)."""
    estimator._start_in_memory = in_memory_rounds(estimator, data, sched)
    memory = fit_memory_chunks(estimator, data)
    chunks = data.delayed_chunks() if memory is None else memory
    return (chunks, *setup_calls(memory is None, sched))


def weight_sums(estimator, data, classes, sched) -> np.ndarray:
    """``(sum of sample_weight over the rows of b = -1, over the rows of b = +1)``
    (regression: the whole sum, then 0), one pass over ``sample_weight`` and ``y``
    (:func:`~ooc_kernels.families.dspdc._chunk_tasks._weight_sums` per chunk, summed in
    chunk order)."""
    from ooc_kernels.families.dspdc._chunk_tasks import _summed_weights, _weight_sums

    chunks, defer, value = setup_inputs(estimator, data, sched)
    sws = chunks.get("sample_weight", [None] * data.n_chunks)
    pos = None if classes is None else np.asarray(classes).tolist()[1]
    parts = [defer(_weight_sums)(sw, yk, pos, k)
             for k, (sw, yk) in enumerate(zip(sws, chunks["y"]))]
    return np.asarray(value(defer(_summed_weights)(parts)), dtype=np.float64)


def one_group_in_memory(estimator, data) -> bool:
    """Whether ``shuffle_chunks="auto"`` puts every chunk in one group, so that a round is
    one task on the whole problem: the rows are held in memory (``_rows_in_memory``: no
    read to bound), dense, shuffled, one task per round, no checkpoint (a checkpoint
    resumes the groups it was written with), and the solver's float64 rows fit the
    in-memory path (:data:`~ooc_kernels.families.dspdc._direct.DIRECT_BYTES`).

    >>> from types import SimpleNamespace
    >>> from ooc_kernels.data.inputs import as_chunked
    >>> data = as_chunked(np.zeros((6, 2)), np.zeros(6), chunk_size=2)
    >>> est = SimpleNamespace(shuffle_chunks="auto", shuffle=True, _rows_in_memory=True,
    ...                       _tasks_per_round=1, fit_intercept=True,
    ...                       _checkpoint_path=None, _factorized=lambda data: False)
    >>> one_group_in_memory(est, data), one_group_in_memory(
    ...     SimpleNamespace(**{**vars(est), "_rows_in_memory": False}), data)
    (True, False)
    """
    from ooc_kernels.families.dspdc._direct import DIRECT_BYTES

    width = data.n_features + (1 if estimator.fit_intercept else 0)
    return (estimator.shuffle_chunks == "auto" and bool(estimator.shuffle)
            and bool(getattr(estimator, "_rows_in_memory", False))
            and getattr(estimator, "_checkpoint_path", None) is None
            and estimator._tasks_per_round == 1 and not estimator._factorized(data)
            and data.n_samples * width * 8 <= DIRECT_BYTES)


def in_memory_rounds(estimator, data, sched) -> bool:
    """Whether ``estimator``'s fit on ``data`` runs its rounds in memory
    (:func:`~ooc_kernels.families.dspdc._direct.direct_applies` for a fresh fit: input held
    in memory, dense, one task per round, no checkpoint, no distributed Client, rows within
    :data:`~ooc_kernels.families.dspdc._direct.DIRECT_BYTES`), where the rounds compute the
    start from the rows they hold (:mod:`~ooc_kernels.families.dspdc._start_rule`); known
    before the set-up reads anything."""
    from ooc_kernels.families.dspdc._direct import DIRECT_BYTES
    from ooc_kernels.parallel.cluster import active_client

    width = data.n_features + (1 if estimator.fit_intercept else 0)
    return (bool(getattr(estimator, "_in_memory_input", False))
            and not estimator._factorized(data) and estimator._tasks_per_round == 1
            and getattr(estimator, "_checkpoint_path", None) is None
            and active_client(sched) is None
            and data.n_samples * width * 8 <= DIRECT_BYTES)
