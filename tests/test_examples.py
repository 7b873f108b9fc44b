"""The runnable examples of the guides and their figures.

Each script under ``docs/examples/`` runs at a tiny size (seconds) and its result is checked
against an independent oracle: the DSG classifier against the analytic labels of its 2-D
problem, the DSPDC gaps against the ridge optimum that scikit-learn computes.  The documents
must show the command that writes each figure and the figure itself (committed, small).
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
MAX_SVG_BYTES = 200_000

#: document -> (example script, the figure it writes): the guide of each estimator family,
#: and the README, which shows the DSG figure near its top.
FIGURES = {
    "docs/algorithms/dsg_kernels.md": ("dsg_decision_surface.py", "dsg_decision_surface.svg"),
    "docs/dspdc.md": ("dspdc_gap.py", "dspdc_gap_example.svg"),
    "docs/machines/gaussian_process.md": ("gaussian_process_band.py",
                                          "gaussian_process_band.svg"),
    "docs/machines/one_class.md": ("one_class_contour.py", "one_class_contour.svg"),
    "docs/machines/projected_kernel_ridge.md": ("projected_kernel_ridge.py",
                                                "projected_kernel_ridge.svg"),
    "docs/machines/regression.md": ("quantile_bands.py", "quantile_bands.svg"),
    "docs/machines/online_kernel_ridge.md": ("online_kernel_ridge.py",
                                             "online_kernel_ridge.svg"),
    "README.md": ("dsg_decision_surface.py", "dsg_decision_surface.svg"),
}


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"_example_{name[:-3]}", EXAMPLES / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_svg(path: Path) -> None:
    assert path.stat().st_size < MAX_SVG_BYTES, f"{path}: {path.stat().st_size} bytes"
    root = ET.parse(path).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"


@pytest.mark.slow   # about ten seconds, most of it imports and the bandwidth trials
def test_dsg_example_learns_the_circle(tmp_path):
    out = tmp_path / "surface.svg"
    result = _load("dsg_decision_surface.py").main(
        ["--n", "4000", "--chunk-size", "1000", "--epochs", "2", "--grid", "25",
         "--out", str(out)])
    _check_svg(out)
    clf = result["clf"]
    assert len(clf.history_) == 2 and all(math.isfinite(h["loss"]) for h in clf.history_)
    # oracle: the problem's label is 1 outside the circle of radius sqrt(2 ln 2)
    X = np.random.default_rng(7).standard_normal((2000, 2)).astype(np.float32)
    truth = (X.astype(np.float64) ** 2).sum(axis=1) > 2 * math.log(2)
    assert np.mean(clf.predict(X) == truth) > 0.85      # a linear model gets about 0.5


@pytest.mark.slow   # a few seconds: a small store, three epochs
def test_one_class_example_finds_the_planted_outliers(tmp_path):
    from sklearn.metrics import roc_auc_score

    out = tmp_path / "contour.svg"
    result = _load("one_class_contour.py").main(
        ["--n", "3000", "--chunk-size", "1000", "--epochs", "3", "--grid", "25",
         "--out", str(out)])
    _check_svg(out)
    # oracle: inliers of the mixture against uniform outliers in [-8, 8]^2 drawn here
    rng = np.random.default_rng(11)
    centers = np.array([[-2.0, -2.0], [2.0, 2.0], [2.0, -2.0]])
    inliers = centers[rng.integers(0, 3, 1000)] + 0.6 * rng.normal(size=(1000, 2))
    test = np.vstack([inliers, rng.uniform(-8, 8, (1000, 2))])
    auc = roc_auc_score(np.r_[np.ones(1000), np.zeros(1000)],
                        result["det"].decision_function(test))
    assert auc > 0.9                    # a constant decision function gets 0.5
    assert 0.0 <= result["train_outliers"] <= 0.3


@pytest.mark.slow   # a few seconds: four short streams
def test_online_kernel_ridge_example_equals_kernel_awv(tmp_path):
    from ooc_kernels.families.pkawv.reference import kernel_awv

    out = tmp_path / "online.svg"
    result = _load("online_kernel_ridge.py").main(
        ["--n", "600", "--n-exact", "200", "--chunk-size", "150", "--out", str(out)])
    _check_svg(out)
    # oracle: Kernel-AWV solved directly at every round, on the first 200 rows
    X, y = result["X"], result["y"]
    losses = (y[:200] - kernel_awv(X[:200], y[:200], 1.0, 1.0)) ** 2
    np.testing.assert_allclose(result["curves"]["exact (Kernel-AWV)"],
                               np.cumsum(losses) / np.arange(1, 201), rtol=1e-9)
    # the Taylor forecasts beat the constant forecast 0 (the mean square of y) by far
    assert result["curves"]["Taylor, M = 3"][-1] < 0.5 * np.mean(y ** 2)


@pytest.mark.slow   # a few seconds: three small quantile fits
def test_quantile_example_covers_its_levels(tmp_path):
    out = tmp_path / "bands.svg"
    result = _load("quantile_bands.py").main(["--n", "6000", "--chunk-size", "2000",
                                              "--out", str(out)])
    _check_svg(out)
    # oracle: the fraction of fresh rows below each fitted quantile is its level (20,000
    # held-out rows: sampling error 0.0035 at most), and the fits are ordered
    for tau, coverage in result["coverage"].items():
        assert abs(coverage - tau) < 0.03, (tau, coverage)
    grid = np.linspace(-3, 3, 50)[:, None]
    lo, mid, hi = (result["models"][t].predict(grid) for t in (0.1, 0.5, 0.9))
    assert (lo < mid).all() and (mid < hi).all()


def test_dspdc_example_gap_bounds_the_distance_to_the_ridge_optimum(tmp_path):
    from sklearn.linear_model import Ridge

    out = tmp_path / "gap.svg"
    alpha = 1e-3
    result = _load("dspdc_gap.py").main(
        ["--n", "1500", "--p", "8", "--chunk-size", "500", "--epochs", "6",
         "--alpha", str(alpha), "--out", str(out)])
    _check_svg(out)
    X, y = result["X"], result["y"]
    n = X.shape[0]
    # oracle: scikit-learn's Ridge minimizes |Xw - y|^2 + (alpha n) |w|^2, the same minimizer
    w = Ridge(alpha=alpha * n, fit_intercept=False, solver="cholesky").fit(X, y).coef_
    p_star = np.mean((X @ w - y) ** 2) / 2 + alpha * w @ w / 2
    np.testing.assert_allclose(result["ridge_primal"], p_star, rtol=1e-10)
    history = result["ridge"].gap_history_
    assert len(history) == 7            # the start's gap, then one per epoch
    for h in history:   # weak duality: 0 <= P(x) - P* <= P(x) - D(y)
        assert -1e-12 <= h["primal"] - p_star <= h["gap"] + 1e-12, h
    # the squared loss's start is the ridge solution: certified to rounding before an epoch
    assert history[0]["iterations"] == 0 and history[0]["relative_gap"] <= 1e-12
    logistic = result["logistic"].gap_history_
    assert len(logistic) == 7           # the start's gap, then one per epoch
    # the logistic loss's start is Newton's solution (tol=None: to a relative gap of 1e-10)
    assert logistic[0]["iterations"] == 0 and 0.0 < logistic[0]["relative_gap"] <= 1e-10
    # the epochs from there keep the certificate: no epoch's gap above the start's bound
    assert all(h["iterations"] > 0 and h["relative_gap"] <= 1e-10 for h in logistic[1:])


@pytest.mark.slow   # a few seconds: four fits of a small store
def test_projected_kernel_ridge_example_converges_to_exact_krr(tmp_path):
    from sklearn.kernel_ridge import KernelRidge

    out = tmp_path / "pkr.svg"
    result = _load("projected_kernel_ridge.py").main(["--n", "800", "--out", str(out)])
    _check_svg(out)
    X, y = _load("projected_kernel_ridge.py").make_data(800)
    sigma = result["models"]["Taylor M=2"].bandwidth_
    exact = KernelRidge(alpha=1.0, kernel="rbf", gamma=1 / (2 * sigma ** 2)).fit(X, y)
    reference = exact.predict(result["grid"])
    for label in ("Taylor M=10", "Nystrom, 60 rows"):
        np.testing.assert_allclose(result["curves"][label], reference, atol=0.02,
                                   err_msg=label)
    # a low degree is a different model (the figure shows the convergence in the degree)
    assert np.max(np.abs(result["curves"]["Taylor M=2"] - reference)) > 0.1


@pytest.mark.parametrize("document", sorted(FIGURES))
def test_documents_show_the_example_and_its_figure(document):
    script, figure = FIGURES[document]
    text = (ROOT / document).read_text()
    image = ROOT / "docs" / "img" / figure
    link = Path(os.path.relpath(image, (ROOT / document).parent)).as_posix()
    assert f"]({link})" in text, f"{document} does not show {link}"
    assert f"python docs/examples/{script}" in text, f"{document} lacks the command"
    assert (EXAMPLES / script).is_file()
    _check_svg(image)
    if document == "README.md":       # near the top: before the first section
        assert text.index(f"]({link})") < text.index("\n## ")


def test_every_example_has_a_guide():
    shown = {script for script, _ in FIGURES.values()}
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(shown)
    for script, figure in FIGURES.values():   # the default output is the committed figure
        assert re.search(rf'default="docs/img/{re.escape(figure)}"',
                         (EXAMPLES / script).read_text()), script
