"""A fit that runs all its ``max_iter`` epochs with ``tol`` set warns as scikit-learn's
``SGDClassifier`` does: a :class:`sklearn.exceptions.ConvergenceWarning` (one rule, in the
shared stopping code, for every family with epochs and a ``tol``).  Not with ``tol=None``
(exactly ``max_iter`` epochs), not when the rule ended the fit, not from ``partial_fit``;
a resumed fit warns once, with the uninterrupted fit's message; a pipeline shows it as a
log line."""

import logging
import re
import warnings

import numpy as np
import pytest
import yaml
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import SGDClassifier

import ooc_kernels as ok
from _interrupt import _interrupt_after, _Stop

FAST = dict(n_features=128, block_size=32, batch_size=16, random_state=0, scheduler="sync",
            progress=False)
X, Y = make_classification(300, n_features=5, n_informative=3, random_state=0)
X_Q = X + 0.5


def _fits():
    """Every estimator whose fit has epochs and a ``tol``, with its ``fit`` arguments."""
    yr = X[:, 0] - X[:, 1] ** 2
    return [
        (ok.DSGClassifier, {}, (X, Y)),
        (ok.DSGClassifier, dict(update="check"), (X, Y)),       # old coordinates: CDSG
        (ok.DSGClassifier, dict(update="uniform"), (X, Y)),     # and UDSG
        (ok.DSGRegressor, {}, (X, yr)),
        (ok.DSGRegressor, dict(update="check"), (X, yr)),
        (ok.DSGOneClassSVM, {}, (X,)),
        (ok.DSGDensityRatio, {}, (X, X_Q)),
        (ok.DSGGaussianProcessRegressor, dict(mean="dsg", noise=0.1), (X, yr)),
    ]


def _ids():
    return [f"{cls.__name__}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'default'}"
            for cls, kw, _ in _fits()]


def _convergence(caught):
    return [w for w in caught if issubclass(w.category, ConvergenceWarning)]


def _fit(est, *args, **kwargs):
    """``est.fit``, with every warning recorded (none turned into an error)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(*args, **kwargs)
    return _convergence(caught)


@pytest.mark.parametrize("cls, params, args", _fits(), ids=_ids())
def test_max_iter_reached_with_tol_warns_and_tol_none_does_not(cls, params, args):
    """The rule of scikit-learn's SGD (reference: SGDClassifier on the same rows warns at
    its max_iter with a tol, and not with tol=None)."""
    with warnings.catch_warnings(record=True) as sgd:
        warnings.simplefilter("always")
        SGDClassifier(max_iter=2, tol=1e-3, random_state=0).fit(X, Y)
        SGDClassifier(max_iter=2, tol=None, random_state=0).fit(X, Y)
    assert len(_convergence(sgd)) == 1              # the reference: only the fit with a tol

    est = cls(max_iter=2, **params, **FAST)
    caught = _fit(est, *args)
    assert est.n_iter_ == 2 and est.stop_reason_ == "max_iter=2 epochs reached"
    assert len(caught) == 1
    warning = caught[0]
    assert warning.category is ConvergenceWarning   # scikit-learn's own class
    assert warning.filename == __file__             # points at the user's call
    text = str(warning.message)
    # scikit-learn's words first, so a filter written for SGD's warning matches too
    assert text.startswith("Maximum number of iteration reached before convergence: "
                           f"{cls.__name__} ran max_iter=2 epochs")
    assert f"tol={est.tol:g}" in text and "Consider increasing max_iter" in text
    assert "set tol=None to run exactly max_iter epochs" in text
    # the last epoch's change, as history_ records it
    key = "loss"
    last, first = est.history_[-1][key], est.history_[0][key]
    assert f"({first:.6g} -> {last:.6g})" in text
    assert f"by {abs(first - last):.3g} on the best before it" in text
    assert "n_iter_no_change=" in text

    exact = cls(max_iter=2, tol=None, **params, **FAST)
    assert _fit(exact, *args) == []
    assert exact.stop_reason_ == "max_iter=2 epochs reached"
    np.testing.assert_array_equal(exact._fitted_arrays()["coef"],
                                  est._fitted_arrays()["coef"])   # the same two epochs


def test_early_stopping_names_the_validation_score():
    est = ok.DSGClassifier(max_iter=3, early_stopping=True, validation_fraction=0.34,
                           chunk_size=100, **FAST)
    (warning,) = _fit(est, X, Y)
    scores = [h["validation_score"] for h in est.history_]
    text = str(warning.message)
    gain = scores[-1] - max(scores[:-1])
    assert "the validation score by" in text and "tol=0.001" in text
    assert f"({max(scores[:-1]):.6g} -> {scores[-1]:.6g})" in text
    assert f"by {abs(gain):.3g}" in text
    assert ("improved" if gain >= 0 else "worsened") in text


def test_one_epoch_says_there_is_nothing_to_compare():
    (warning,) = _fit(ok.DSGRegressor(max_iter=1, **FAST), X, X[:, 0])
    assert "which the first epoch did not have" in str(warning.message)


def test_a_fit_the_rule_ends_does_not_warn_even_at_max_iter():
    """A huge ``tol`` and ``n_iter_no_change=1``: the rule ends the fit in its second
    epoch, which is also the last ``max_iter`` allows: the rule, not max_iter, ended it."""
    for max_iter in (2, 50):
        est = ok.DSGClassifier(max_iter=max_iter, tol=10.0, n_iter_no_change=1, **FAST)
        assert _fit(est, X, Y) == []
        assert est.n_iter_ == 2 and est.stop_reason_.startswith("the training loss")
    converged = ok.DSGRegressor(max_iter=1000, **FAST)
    assert _fit(converged, X, X[:, 0]) == []
    assert converged.n_iter_ < 1000 and "improved by less than" in converged.stop_reason_


def test_partial_fit_never_warns():
    est = ok.DSGClassifier(max_iter=1, **FAST)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        for _ in range(3):
            est.partial_fit(X, Y, classes=[0, 1])
    assert len(est.history_) == 3 and est.stop_reason_ is None


def test_warm_start_warns_for_each_call_that_ends_at_max_iter():
    est = ok.DSGClassifier(max_iter=1, warm_start=True, **FAST)
    assert len(_fit(est, X, Y)) == 1
    assert len(_fit(est, X, Y)) == 1 and est.n_iter_ == 2


@pytest.mark.parametrize("n_writes", [3, 7])
def test_a_resumed_fit_warns_once_with_the_uninterrupted_message(tmp_path, monkeypatch,
                                                                 n_writes):
    """300 rows in Dask chunks of 100, one chunk a round: 3 checkpoints an epoch; the
    crash falls at the end of epoch 1 or in the middle of epoch 3."""
    import dask.array as da

    XD, YD = da.from_array(X, chunks=(100, 5)), da.from_array(Y, chunks=100)
    params = dict(max_iter=4, chunks_per_round=1, shuffle_chunks=1, **FAST)
    whole = ok.DSGClassifier(**params)
    (expected,) = _fit(whole, XD, YD)
    ck = tmp_path / "ck.zarr"
    _interrupt_after(monkeypatch, n_writes)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(_Stop):
            ok.DSGClassifier(**params).fit(XD, YD, checkpoint=ck, checkpoint_every=1)
    assert _convergence(caught) == []
    monkeypatch.undo()
    resumed = ok.DSGClassifier(**params)
    (warning,) = _fit(resumed, XD, YD, checkpoint=ck, resume=True)
    assert str(warning.message) == str(expected.message)
    assert resumed.history_[-1]["loss"] == whole.history_[-1]["loss"]
    # the finished checkpoint, resumed again (a re-run of the same command): once more
    (again,) = _fit(ok.DSGClassifier(**params), XD, YD, checkpoint=ck, resume=True)
    assert str(again.message) == str(expected.message)


def test_families_with_their_own_rule_or_without_tol_warn_once_or_not_at_all(monkeypatch):
    """DSPDC keeps its duality-gap warning (one, not two); PKAWV has no tol: none."""
    from ooc_kernels.families.dspdc import _squared_start

    # the zero start: the start in memory (Newton's) would certify tol before an iteration
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    dspdc = _fit(ok.DSPDCClassifier(alpha=1e-3, max_iter=1, tol=1e-12, standardize=False,
                                    scheduler="sync", random_state=0, progress=False), X, Y)
    assert len(dspdc) == 1 and "relative duality gap" in str(dspdc[0].message)
    for cls in (ok.OnlineKernelRidge, ok.ProjectedKernelRidge):
        est = cls(max_iter=2, n_components=20, scheduler="sync", progress=False)
        assert _fit(est, X, X[:, 0]) == []


def test_the_gp_exact_mean_has_no_epochs_and_no_warning():
    gp = ok.DSGGaussianProcessRegressor(max_iter=1, **FAST)
    assert _fit(gp, X, X[:, 0]) == [] and gp.stop_reason_.startswith("mean='features'")


def test_filtering_by_class_silences_it():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        ok.DSGClassifier(max_iter=1, **FAST).fit(X, Y)


@pytest.mark.parametrize("tol", [1e-3, None])
def test_a_pipeline_logs_the_warning_as_one_line(tmp_path, caplog, tol):
    from ooc_kernels.data.catalog import register_dataset
    from ooc_kernels.pipeline import run_pipeline

    register_dataset(tmp_path / "cat.yaml", "nb", tmp_path / "data" / "nb.zarr")
    spec = {"name": "tiny",
            "data": {"catalog": "cat.yaml", "train": "nb", "generate": {"nb": {
                "generator": "nonlinear_binary", "n_samples": 300, "chunk_size": 100,
                "params": {"n_features": 3}}}},
            "model": {"estimator": "DSGClassifier",
                      "params": {"n_features": 128, "block_size": 32, "max_iter": 2,
                                 "tol": tol, "random_state": 0}},
            "save": {"output_dir": "out"}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(spec))
    with warnings.catch_warnings(), caplog.at_level(logging.WARNING, logger="ooc_kernels"):
        warnings.simplefilter("error")              # no Python warning escapes the run
        run_pipeline(tmp_path / "p.yaml", scheduler="sync", progress=False)
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    if tol is None:
        assert lines == []
    else:
        assert len(lines) == 1 and re.match(
            r"pipeline tiny: Maximum number of iteration reached before convergence: "
            r"DSGClassifier ran max_iter=2 epochs", lines[0])
