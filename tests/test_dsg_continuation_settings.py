"""A continuation (a later ``partial_fit``, a ``warm_start`` fit) of a DSG model runs with
the estimator's current settings of how it reads its rows: ``on_invalid`` and ``shuffle``
may change between fits (``CONTINUATION_PARAMS``), so the chunk algorithm of the next fit
must apply the values set now, not those of the first fit."""

import numpy as np
import pytest

from ooc_kernels.estimators import ESTIMATORS
from ooc_kernels.testing import problem

BAD_ROWS = [3, 100, 171]


def _estimator(name, how, **params):
    cls = ESTIMATORS.get(name)
    kw = dict(max_iter=1, tol=None, scheduler="sync", progress=False, random_state=0,
              on_invalid="error", **params)
    if how == "warm_start":
        kw["warm_start"] = True
    if name == "DSGGaussianProcessRegressor":  # its exact mean runs no epoch: it warns
        del kw["max_iter"], kw["tol"]          # that max_iter and tol have no effect
    return cls(**{k: v for k, v in kw.items() if k in cls().get_params()})


def _first(est, args, how):
    if how == "partial_fit":
        extra = {"classes": np.unique(args[1])} if len(args) > 1 and \
            est.capabilities.task == "classification" else {}
        return est.partial_fit(*args, **extra)
    return est.fit(*args)


CASES = [("DSGRegressor", "partial_fit"), ("DSGRegressor", "warm_start"),
         ("DSGClassifier", "partial_fit"), ("DSGClassifier", "warm_start"),
         ("DSGOneClassSVM", "partial_fit"), ("DSGOneClassSVM", "warm_start"),
         ("DSGGaussianProcessRegressor", "warm_start")]


@pytest.mark.parametrize("name, how", CASES)
def test_on_invalid_set_to_skip_applies_to_the_continuation(name, how):
    cls = ESTIMATORS.get(name)
    args = problem(cls, n=240)
    est = _first(_estimator(name, how), args, how)
    skipped = est.n_samples_skipped_
    bad = [a.copy() for a in args]
    bad[0][BAD_ROWS, 1] = np.nan
    est.set_params(on_invalid="skip")
    _first(est, bad, how)
    # the rows with NaN are left out, counted once each, and the model stays finite
    assert est.n_samples_skipped_ - skipped == len(BAD_ROWS)
    out = est.decision_function(args[0]) if hasattr(est, "decision_function") \
        else est.predict(args[0])
    assert np.isfinite(np.asarray(out, dtype=float)).all()


@pytest.mark.parametrize("name, how", CASES)
def test_the_continuations_algorithm_reads_the_rows_as_set_now(name, how):
    cls = ESTIMATORS.get(name)
    est = _first(_estimator(name, how, shuffle=True), problem(cls, n=240), how)
    est.set_params(shuffle=False, on_invalid="skip")
    config = est._make_algorithm().config
    assert (config.shuffle, config.on_invalid) == (False, "skip")
