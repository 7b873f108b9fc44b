"""Metrics and predictions over lazy datasets, computed chunk by chunk.

Examples
--------
>>> import numpy as np, xarray as xr
>>> import ooc_kernels as ok
>>> from ooc_kernels.evaluation import evaluate
>>> X = np.random.default_rng(0).normal(size=(60, 2)).astype("float32")
>>> y = (X[:, 0] > 0).astype("int64")
>>> clf = ok.DSGClassifier(n_features=256, batch_size=8, random_state=0,
...                        scheduler="sync").fit(X, y)
>>> sorted(evaluate(clf, X, y))
['accuracy', 'log_loss']
"""

from __future__ import annotations

import os
from pathlib import Path

import dask
import dask.array as da
import numpy as np

from ooc_kernels._atomic import KIND_ATTR, atomic_dir
from ooc_kernels._checksums import compressors
from ooc_kernels._paths import user_path
from ooc_kernels._progress import progress_bar
from ooc_kernels.data.zarr_io import consolidate
from ooc_kernels.data.inputs import as_chunked, model_input, wrap_prediction
from ooc_kernels.estimators._feature_coords import check_read_input, opened_input
from ooc_kernels.exceptions import InvalidDataError, ValidationError
from ooc_kernels.parallel.cluster import (
    active_client,
    compute,
    scheduler_loss_during,
    scheduler_lost,
)
from ooc_kernels.parallel.scheduler import scheduler_context

__all__ = ["evaluate", "scored_task", "write_predictions"]

#: What :func:`evaluate` scores: the task of an estimator (``capabilities.task``) and its
#: metrics.
METRICS = {"classification": "accuracy, and log_loss with predict_proba",
           "regression": "r2, rmse, mae"}

#: What the estimators of the other tasks predict, for the error that refuses them.
_UNSCORED = {
    "novelty": "a novelty detector: its predict gives +1 (inlier) or -1 (outlier), not a "
               "class or a target; to score it against labels, compare its predict or its "
               "decision_function with them in Python, e.g. "
               "sklearn.metrics.roc_auc_score(y == inlier_label, est.decision_function(X))",
    "density_ratio": "a density-ratio estimator: its predict gives p(x) / q(x), which has "
                     "no targets to be compared with; its divergence_ is the fit's estimate "
                     "of KL(p || q)",
    "transform": "a transformer: it has no predictions to score",
}


def _shown(values, most: int = 10) -> str:
    """A list of classes for a message: the first ``most`` of a longer one, and the count."""
    values = list(values)
    return repr(values) if len(values) <= most else \
        f"{values[:most]!r} (the first {most} of {len(values)})"


def _kind(dtype) -> str | None:
    """``"numbers"`` or ``"text"`` for a dtype of labels or targets; None for objects
    (checked value by value)."""
    kind = np.dtype(dtype).kind
    return "numbers" if kind in "biuf" else "text" if kind in "US" else \
        None if kind == "O" else f"values of dtype {np.dtype(dtype)}"


def _check_target_kind(estimator, y, classifier: bool) -> None:
    """Refuse, before any chunk is read, targets that cannot be what ``estimator``
    predicts: a regressor's targets are numbers, a classifier's labels of the kind of its
    classes (NumPy would compare text with numbers as text: never equal, so every row would
    count as wrong and the log loss would take another class's probability)."""
    name = type(estimator).__name__
    have = _kind(y.dtype)
    if classifier:
        classes = np.asarray(estimator.classes_)
        want = _kind(classes.dtype)
        if have is None or want is None or have == want:
            return
        raise InvalidDataError(
            f"y holds {have} (dtype {y.dtype}), but {name} was fitted on classes of "
            f"{want} ({_shown(classes.tolist())}); score it on labels of the same kind as "
            "its classes (e.g. the same column of the same dataset), or fit it on these "
            "labels.")
    if have in (None, "numbers"):
        return
    raise InvalidDataError(
        f"y holds {have} (dtype {y.dtype}), but {name} is a regressor: its targets are "
        "numbers; score it on numeric targets, or fit a classifier on these labels.")


def _y_index(y, classes, block_info=None):
    """Each label's position in ``classes``; a label that is not a class is an
    :class:`InvalidDataError` naming it, its chunk and row (its log loss is undefined, as
    scikit-learn's ``log_loss`` says)."""
    y = np.asarray(y)
    try:
        idx = np.clip(np.searchsorted(classes, y), 0, len(classes) - 1)
        bad = np.asarray(classes[idx] != y, dtype=bool)
    except TypeError:   # labels of objects that cannot be compared with the classes
        bad = np.ones(len(y), dtype=bool)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        chunk = block_info[0]["chunk-location"][0] if block_info else "?"
        raise InvalidDataError(
            f"label {y[row].tolist()!r} in chunk {chunk}, row {row} is not one of the classes "
            f"{_shown(np.asarray(classes).tolist())} the model was fitted on, so its log "
            "loss is undefined; score the rows whose labels are among the classes "
            "(keep = numpy.isin(y, est.classes_)), or fit the model with every class "
            "(classes=... in partial_fit, or the dataset's 'classes' attribute).")
    return idx


def _take_true(proba, idx):
    return proba[np.arange(len(idx)), idx[:, 0]]  # one chunk: probability of the true class


def _classifier_stats(pred, y, p_true=None):
    """One chunk's row: ``[rows, correct predictions, summed log loss]``."""
    loss = 0.0 if p_true is None else float(-np.log(np.clip(p_true, 1e-15, 1.0)).sum())
    return np.array([[len(y), float(np.sum(pred == y)), loss]])


def _regressor_stats(pred, y):
    """One chunk's row: ``[rows, mean of y, squared deviations of y from that mean,
    summed squared residual, summed absolute residual]``."""
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as err:   # objects that are not numbers
        raise InvalidDataError(
            f"a regressor's targets are numbers, but y cannot be read as numbers "
            f"({type(err).__name__}: {err}); score it on numeric targets.") from err
    resid = y - np.asarray(pred, dtype=np.float64)
    mean = y.mean() if len(y) else 0.0
    return np.array([[len(y), mean, float(((y - mean) ** 2).sum()),
                      float((resid ** 2).sum()), float(np.abs(resid).sum())]])


def _r2(ss_res: float, ss_tot: float, n: float) -> float:
    """R^2 as scikit-learn's ``r2_score`` gives it: NaN for fewer than two rows, and for
    constant targets (``ss_tot == 0``) 1.0 when every prediction is exact, else 0.0
    (``force_finite=True``), not ``-inf`` or NaN."""
    if n < 2:
        return float("nan")
    if ss_tot == 0:
        return 1.0 if ss_res == 0 else 0.0
    return 1.0 - ss_res / ss_tot


def scored_task(estimator) -> str:
    """``"classification"`` or ``"regression"``: the metrics :func:`evaluate` computes for
    ``estimator`` (an estimator or its class); the task comes from its ``capabilities``, or
    from scikit-learn's estimator type for an estimator without them.

    Raises
    ------
    ValidationError
        The estimator is neither a classifier nor a regressor (a novelty detector such as
        ``DSGOneClassSVM``, ``DSGDensityRatio``): the message names it and what is scored.

    Examples
    --------
    >>> import ooc_kernels as ok
    >>> scored_task(ok.DSGRegressor)
    'regression'
    >>> scored_task(ok.DSGOneClassSVM)
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: evaluate scores classifiers (accuracy, and \
log_loss with predict_proba) and regressors (r2, rmse, mae); DSGOneClassSVM is a novelty \
detector: ...
    """
    from sklearn.base import is_classifier, is_regressor

    caps = getattr(estimator, "capabilities", None)
    if caps is not None:
        task = caps.task
    elif is_classifier(estimator):
        task = "classification"
    else:
        task = "regression" if is_regressor(estimator) else "unknown"
    if task in METRICS:
        return task
    name = estimator.__name__ if isinstance(estimator, type) else type(estimator).__name__
    what = _UNSCORED.get(task, "neither a classifier nor a regressor")
    raise ValidationError(
        f"evaluate scores classifiers ({METRICS['classification']}) and regressors "
        f"({METRICS['regression']}); {name} is {what}.")


def _chunk_stats(estimator, data) -> tuple[da.Array, bool]:
    """A lazy ``(n_chunks, k)`` array of per-chunk sufficient statistics, and whether they
    are a classifier's (with log loss when it has ``predict_proba``)."""
    Xd, yd = model_input(data), data.y
    pred = estimator.predict(Xd)
    args = [pred, yd]
    classifier = hasattr(estimator, "classes_")
    _check_target_kind(estimator, yd, classifier)
    if classifier:
        stats, k = _classifier_stats, 3
        if hasattr(estimator, "predict_proba"):
            yi = yd.map_blocks(_y_index, estimator.classes_, dtype=np.intp)[:, None]
            args.append(da.map_blocks(_take_true, estimator.predict_proba(Xd), yi,
                                      drop_axis=1, dtype=np.float64))
    else:
        stats, k = _regressor_stats, 5
    args = da.core.unify_chunks(*[a for arr in args for a in (arr, "i")])[1]
    n_blocks = args[0].numblocks[0]
    return da.map_blocks(stats, *args, chunks=((1,) * n_blocks, (k,)), new_axis=1,
                         dtype=np.float64), classifier


def _parallel_slots(sched) -> int:
    """How many chunks the scheduler works on at once: the Client's threads, 1 for the
    synchronous scheduler, else Dask's ``num_workers`` or the number of cores."""
    client = active_client(sched)
    if client is not None and scheduler_lost(client):
        # asking a lost scheduler waits out the Client's reconnection timeout; the
        # computation that follows reports the loss at once (bounded waits of ``compute``)
        return 1
    if client is not None:
        return max(1, sum(client.nthreads().values()))
    name = sched if sched is not None else dask.config.get("scheduler", None)
    if name in ("sync", "synchronous", "single-threaded"):
        return 1
    return int(dask.config.get("num_workers", None) or os.cpu_count() or 1)


def _batches(n_chunks: int, sched) -> list[tuple[int, int]]:
    """Consecutive ``(first, stop)`` chunk ranges of twice the scheduler's parallel slots:
    each range is one computation, after which the progress bar advances."""
    width = 2 * _parallel_slots(sched)
    return [(i, min(i + width, n_chunks)) for i in range(0, n_chunks, width)]


def _compute(obj, sched):
    """``dask.compute(obj)[0]`` on ``sched`` (on a Client with bounded waits: a lost
    scheduler is reported, :func:`~ooc_kernels.parallel.cluster.compute`)."""
    (value,) = compute(obj, scheduler=sched)
    return value


def evaluate(estimator, X, y=None, *, progress: bool | None = None,
             desc: str = "evaluate") -> dict:
    """Metrics of a fitted estimator on ``X`` (any accepted input), in one pass.

    Classifiers: ``accuracy`` (and ``log_loss`` when probabilities exist).
    Regressors: ``r2``, ``rmse``, ``mae``.  Other estimators are refused before any data
    is read (:func:`scored_task`): a novelty detector (``DSGOneClassSVM``) predicts +1 or
    -1, not a class or a target, and a density-ratio estimator (``DSGDensityRatio``) has no
    targets, so no metric of either is what its name says; score them in Python against
    labels of your own (e.g. ``roc_auc_score`` of the inlier labels and
    ``decision_function``).

    The chunks are scored a few at a time (twice as many as the scheduler runs at once);
    each chunk gives a row of sums, and the metrics follow from those rows, so memory stays
    at a few chunks and the progress bar advances chunk by chunk.

    Parameters
    ----------
    estimator : fitted estimator
    X : any input the estimator accepts
    y : array-like, optional
        The targets, unless ``X`` carries them (a dataset, a catalog entry).
    progress : bool, optional
        A progress bar over chunks (default: on a terminal or in a notebook); without a bar,
        up to 10 lines through the ``ooc_kernels`` logger (:mod:`ooc_kernels._progress`).
    desc : str, default "evaluate"
        The bar's label.

    Returns
    -------
    dict
        Metric name to value.

    Raises
    ------
    ValidationError
        ``estimator`` is neither a classifier nor a regressor (see :func:`scored_task`).
    """
    scored_task(estimator)
    X = opened_input(X)
    data = as_chunked(X, y, chunk_size=estimator.chunk_size, require_y=True)
    check_read_input(estimator, data, X)   # names and labels: model_input has none
    stats, classifier = _chunk_stats(estimator, data)
    n_chunks = stats.numblocks[0]
    rows = []
    with scheduler_context(getattr(estimator, "scheduler", None)) as sched, \
            scheduler_loss_during("evaluate"), \
            progress_bar(total=n_chunks, desc=desc, enabled=progress, unit="chunk",
                         log_lines=10) as bar:
        for first, stop in _batches(n_chunks, sched):
            rows.append(np.asarray(_compute(stats[first:stop], sched)))
            bar.update(stop - first)
    rows = np.concatenate(rows) if rows else np.zeros((0, stats.shape[1]))
    n = rows[:, 0].sum()
    if classifier:
        out = {"accuracy": rows[:, 1].sum() / n}
        if hasattr(estimator, "predict_proba"):
            out["log_loss"] = rows[:, 2].sum() / n
    else:
        # squared deviations of y about the overall mean, from the chunks' own (Chan et al.)
        counts, means, m2 = rows[:, 0], rows[:, 1], rows[:, 2]
        mean = (counts * means).sum() / n
        ss_tot = m2.sum() + (counts * (means - mean) ** 2).sum()
        out = {"r2": _r2(rows[:, 3].sum(), ss_tot, n), "rmse": np.sqrt(rows[:, 3].sum() / n),
               "mae": rows[:, 4].sum() / n}
    return {k: float(v) for k, v in out.items()}


def write_predictions(estimator, X, path, *, overwrite: bool = False,
                      progress: bool | None = None, desc: str = "predictions") -> Path:
    """Write predictions (and class probabilities when available) to a Zarr store.

    The store is written chunk by chunk into a temporary sibling folder and renamed into
    place when complete: a few chunks at a time (twice as many as the scheduler runs at
    once), each group into its region of the store, so the progress bar advances chunk by
    chunk.  For an xarray input the predictions lie along its own sample dimension, with
    its coordinates there (e.g. ``time``); otherwise along ``sample``.  Every array of the
    store (predictions, probabilities, coordinates) is written with the codecs of the
    library's datasets (:func:`ooc_kernels._checksums.compressors`): each chunk ends with the
    CRC32C of its bytes, so a damaged chunk fails to decode when the store is read (by
    ``xarray.open_zarr`` or zarr) instead of decoding to other numbers.

    Parameters
    ----------
    estimator : fitted estimator
    X : any input the estimator accepts
    path : str, bytes or path-like
        The Zarr store to write.
    overwrite : bool, default False
        Replace an existing prediction store at ``path`` (once the new one is complete).
        Only a prediction store written by this function is ever replaced.
    progress : bool, optional
        A progress bar over chunks (default: on a terminal or in a notebook); without a bar,
        up to 10 lines through the ``ooc_kernels`` logger (:mod:`ooc_kernels._progress`).
    desc : str, default "predictions"
        The bar's label.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    DatasetExistsError
        ``path`` exists and ``overwrite`` is False.
    ForeignPathError
        ``path`` exists and is not a prediction store of this library (a folder of other
        files, a file, a model, a symbolic link ...); it is left as it is.
    """
    import xarray as xr

    opened = opened_input(X)
    data = as_chunked(opened, chunk_size=estimator.chunk_size)
    check_read_input(estimator, data, opened)   # names and labels: model_input has none
    pred = estimator.predict(model_input(data))
    like = wrap_prediction(X, pred)  # the input's sample dim and coordinates, if any
    sample = like.dims[0] if isinstance(like, xr.DataArray) else "sample"
    coords = {k: c.variable for k, c in like.coords.items()} \
        if isinstance(like, xr.DataArray) else {}
    variables = {"prediction": ((sample,), pred)}
    if hasattr(estimator, "classes_") and hasattr(estimator, "predict_proba"):
        variables["proba"] = ((sample, "class"), estimator.predict_proba(model_input(data)))
        coords["class"] = np.asarray(estimator.classes_)
    ds = xr.Dataset(variables, coords=coords, attrs={KIND_ATTR: "predictions"})
    chunks = ds["prediction"].chunks[0]
    bounds = np.concatenate([[0], np.cumsum(chunks)]).astype(int)
    lazy = list(variables)  # written region by region; the rest (coordinates) at creation
    path = user_path(path)
    with atomic_dir(path, kind="predictions", overwrite=overwrite) as tmp, \
            scheduler_context(getattr(estimator, "scheduler", None)) as sched, \
            scheduler_loss_during("write_predictions"), \
            progress_bar(total=len(chunks), desc=desc, enabled=progress, unit="chunk",
                         log_lines=10) as bar:
        # the store's layout and coordinates; the lazy variables' values come below
        ds.to_zarr(str(tmp), mode="w", consolidated=False, compute=False,
                   encoding={name: {"compressors": compressors()} for name in ds.variables})
        for first, stop in _batches(len(chunks), sched):
            rows = slice(int(bounds[first]), int(bounds[stop]))
            part = ds[lazy].isel({sample: rows}).drop_vars(list(ds.coords))
            part.attrs = {}
            _compute(part.to_zarr(str(tmp), region={sample: rows}, consolidated=False,
                                  compute=False), sched)
            bar.update(stop - first)
        consolidate(tmp)
    return path
