"""The contract check of feature coordinate labels: a model fitted on an xarray input whose
feature dimension has labels refuses, at every later call that reads features, an input with
the same labels in another order or with other labels, and reads an input without labels by
position (see :mod:`ooc_kernels.estimators._feature_coords`).

Examples
--------
>>> from ooc_kernels.testing import problem
>>> from ooc_kernels.estimators import ESTIMATORS
>>> labelled(problem(ESTIMATORS.get("DSGRegressor"), n=4)[0]).dims
('row', 'channel')
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np

from ooc_kernels.exceptions import ValidationError
from ooc_kernels.testing._problems import CHUNK, capabilities_of, make, outputs, problem

__all__ = ["check_estimator_feature_coords", "labelled"]

#: The feature labels of :func:`labelled` inputs, and the order they are permuted to.
LABELS = ("c0", "c1", "c2")
PERMUTED = [1, 2, 0]


def labelled(X: np.ndarray, labels=LABELS):
    """``X`` as a DataArray chunked along its rows, its columns labelled ``labels``."""
    import xarray as xr

    return xr.DataArray(X, dims=("row", "channel"),
                        coords={"channel": list(labels)}).chunk({"row": CHUNK})


def _refused(call, what: str, words: str) -> None:
    try:
        call()
    except ValidationError as err:
        assert words in str(err) and "channel" in str(err), \
            f"{what} was refused, but the message does not say so ({words!r} and the " \
            f"dimension): {err}"
        return
    raise AssertionError(f"{what} was accepted: its features would be read by position, "
                         "in the wrong order")


def _refuses(est, Xt, yt, caps, name: str) -> None:
    """Every method of fitted ``est`` that reads features refuses reordered and relabelled
    coordinates."""
    bad = {"reordered": (labelled(Xt).isel(channel=PERMUTED), "another order"),
           "relabelled": (labelled(Xt, ("c0", "c1", "zz")), "does not have the labels")}
    for kind, (Xb, words) in bad.items():
        methods = {m: (lambda m=m: getattr(est, m)(Xb)) for m in outputs_of(est)}
        if caps.inputs == "supervised":
            methods["score"] = lambda: est.score(Xb, yt)
        for method, call in methods.items():
            _refused(call, f"{name}.{method} of {kind} coordinates", words)


def outputs_of(est) -> list[str]:
    """The output methods ``outputs`` calls on ``est``."""
    from ooc_kernels.testing._problems import OUTPUT_METHODS

    return [m for m in OUTPUT_METHODS if hasattr(est, m)]


def check_estimator_feature_coords(cls, client=None) -> None:
    """A fit on a DataArray with feature labels records them (``feature_coords_``, not
    ``feature_names_in_``); every output method, ``score``, ``partial_fit`` and a
    ``warm_start`` fit refuse the same labels in another order and other labels with a
    ``ValidationError``, also after save and load; the labels in fit's order, a DataArray
    without labels and NumPy give the NumPy outputs, without a feature-name warning."""
    import ooc_kernels as ok

    caps = capabilities_of(cls)
    args = problem(cls)
    est = make(cls).fit(labelled(args[0]), *args[1:])
    name = cls.__name__
    Xt, yt = problem(cls, seed=5, n=60)[:2] if caps.inputs == "supervised" \
        else (problem(cls, seed=5, n=60)[0], None)
    _refuses(est, Xt, yt, caps, name)
    assert np.asarray(getattr(est, "feature_coords_", [])).tolist() == list(LABELS), \
        f"{name}: fit on labelled features left feature_coords_ " \
        f"{getattr(est, 'feature_coords_', None)!r}, not {list(LABELS)}"
    assert not hasattr(est, "feature_names_in_"), \
        f"{name}: feature_names_in_ set from xarray labels (NumPy input would then warn)"
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        eager = outputs(est, Xt)
    for kind, X in {"the same labels": labelled(Xt),
                    "no labels": labelled(Xt).drop_vars("channel")}.items():
        for method, value in outputs(est, X).items():
            got, expected = np.asarray(value), np.asarray(eager[method])
            what = f"{name}.{method} of {kind} differs from NumPy's"
            if expected.dtype.kind != "f":
                assert np.array_equal(got, expected), what
                continue
            tol = 16 * max(np.finfo(expected.dtype).eps, np.finfo(
                np.dtype(getattr(est, "dtype_", None) or expected.dtype)).eps)
            np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=what)
    with tempfile.TemporaryDirectory() as tmp:
        est.save(Path(tmp) / "model.zarr")
        loaded = ok.load(Path(tmp) / "model.zarr")
    _refuses(loaded, Xt, yt, caps, f"{name} loaded")
    moved = labelled(args[0]).isel(channel=PERMUTED)
    if caps.partial_fit:
        _refused(lambda: est.partial_fit(moved, *args[1:]), f"{name}.partial_fit",
                 "another order")
    if "warm_start" in est.get_params():
        est.set_params(warm_start=True)
        _refused(lambda: est.fit(moved, *args[1:]), f"{name} warm_start fit",
                 "another order")
