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

from pathlib import Path

import dask
import dask.array as da
import numpy as np

from ooc_kernels._atomic import KIND_ATTR, atomic_dir
from ooc_kernels.data.zarr_io import consolidate
from ooc_kernels.data.inputs import as_chunked, model_input, wrap_prediction
from ooc_kernels.parallel.scheduler import scheduler_context

__all__ = ["evaluate", "write_predictions"]


def _y_index(y, classes):
    idx = np.searchsorted(classes, y)
    return np.clip(idx, 0, len(classes) - 1)


def _take_true(proba, idx):
    return proba[np.arange(len(idx)), idx[:, 0]]  # one chunk: probability of the true class


def evaluate(estimator, X, y=None) -> dict:
    """Metrics of a fitted estimator on ``X`` (any accepted input), in one pass.

    Classifiers: ``accuracy`` (and ``log_loss`` when probabilities exist).
    Regressors: ``r2``, ``rmse``, ``mae``.
    """
    data = as_chunked(X, y, chunk_size=estimator.chunk_size, require_y=True)
    Xd, yd = model_input(data), data.y
    if hasattr(estimator, "classes_"):
        classes = estimator.classes_
        out = {"accuracy": (estimator.predict(Xd) == yd).astype(np.float64).mean()}
        if hasattr(estimator, "predict_proba"):
            proba = estimator.predict_proba(Xd)
            yi = yd.map_blocks(_y_index, classes, dtype=np.intp)[:, None]
            p_true = da.map_blocks(_take_true, proba, yi, drop_axis=1, dtype=np.float64)
            out["log_loss"] = -da.log(da.clip(p_true, 1e-15, 1.0)).mean()
    else:
        pred = estimator.predict(Xd).astype(np.float64)
        yt = yd.astype(np.float64)
        resid = yt - pred
        ss_tot = ((yt - yt.mean()) ** 2).sum()
        out = {"r2": 1.0 - (resid ** 2).sum() / ss_tot,
               "rmse": da.sqrt((resid ** 2).mean()), "mae": abs(resid).mean()}
    with scheduler_context(getattr(estimator, "scheduler", None)) as sched:
        (values,) = dask.compute(out, scheduler=sched)
    return {k: float(v) for k, v in values.items()}


def write_predictions(estimator, X, path, *, overwrite: bool = False) -> Path:
    """Write predictions (and class probabilities when available) to a Zarr store.

    The store is written chunk by chunk into a temporary sibling folder and renamed into
    place when complete.  For an xarray input the predictions lie along its own sample
    dimension, with its coordinates there (e.g. ``time``); otherwise along ``sample``.

    Parameters
    ----------
    estimator : fitted estimator
    X : any input the estimator accepts
    path : str or path-like
        The Zarr store to write.
    overwrite : bool, default False
        Replace an existing prediction store at ``path`` (once the new one is complete).
        Only a prediction store written by this function is ever replaced.

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

    data = as_chunked(X, chunk_size=estimator.chunk_size)
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
    path = Path(path)
    with atomic_dir(path, kind="predictions", overwrite=overwrite) as tmp, \
            scheduler_context(getattr(estimator, "scheduler", None)):
        ds.to_zarr(str(tmp), mode="w", consolidated=False)
        consolidate(tmp)
    return path
