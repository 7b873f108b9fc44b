"""What limits DSPDC on scikit-learn's breast cancer (569 x 30, binary) at ``alpha = 1e-4``.

Every figure of docs/dspdc.md's "Breast cancer: what limits it" (and the benchmarks page's
"DSPDC on small real data"):

* ``optimum``: the standardized problem's optimum by Newton's method in NumPy (gradient
  below 1e-14): ``P*``, ``||x*||``, the Hessian's extreme eigenvalues, the rows whose
  ``p (1 - p)`` is below 1e-3 there, the standardized columns' covariance eigenvalues, and
  the rows' mean squared norm and squared mean norm (the constants of uniform sampling and
  of sampling by norm);
* ``sides``: the default fit's ``P - P*`` and ``D* - D`` at every evaluation;
* ``rates``: the default fit's e-folds of the gap per pass between evaluations, with the
  ``step_boost`` and the rate the theorems promise;
* ``fixed``: the relative gap after ``--passes`` passes with fixed adaptive steps (the step
  rule off) at each ``step_boost`` of ``--boosts``, and with the conjugate's strong
  convexity ``gamma`` multiplied by each of ``--gamma-boosts`` (the theorems' steps for it,
  given as ``theta``, ``tau``, ``sigma``);
* ``columns``: the defaults on the same labels with whitened columns (PCA of the
  standardized columns, each component scaled to variance 1) and on Gaussian columns;
* ``sdca``: the relative gap of the mini-batch SDCA baseline after ``--passes`` passes;
* ``lbfgs``: the iterations scikit-learn's L-BFGS (``LogisticRegression``) needs before
  ``||grad P||^2 / (2 alpha)`` (the gap at the duals ``phi'(a_i^T x)``) is at most 1e-4 and
  1e-6 of ``P``;
* ``newton``: the iterations of Newton's method (exact Hessian, backtracking from 0) before
  ``||grad P||^2 / (2 alpha)`` is at most 1e-4 and 1e-6 of ``P``, and the evaluations of
  ``P`` and its derivatives they took (each a pass over the rows);
* ``alphas``: the defaults' passes to 1e-4 and 1e-6 at each of ``--alphas``;
* ``start``: the default fit at ``tol`` = 1e-4 and 1e-6, which starts from Newton's solution
  (the logistic loss's start in memory, ``families/dspdc/_logistic_start.py``): its certified
  gap, its epochs and DSPDC iterations, the start's Newton iterations and its reads of the
  rows (per iteration the gradient, the Hessian and the direction's margins; then the fit's
  duals at the start and its certificate's losses).

Every section but ``start`` describes DSPDC's own iterations, so it fits from the zero
start (``_squared_start.START_MAX_FEATURES = 0``, which turns the starts off).

    python benchmarks/dspdc_breast_cancer.py --out benchmarks/results/dspdc_breast_cancer.json

Passes are deterministic (``random_state=0``) and do not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

ALPHA = 1e-4


def standardized(X):
    """The solver's rows: standardized columns and the intercept's column of 1."""
    return np.hstack([(X - X.mean(axis=0)) / X.std(axis=0), np.ones((len(X), 1))])


def objective(A, b, alpha):
    n = len(b)

    def P(x):
        return float(np.mean(np.logaddexp(0.0, -b * (A @ x))) + alpha / 2 * x @ x)

    def grad(x):
        s = 1.0 / (1.0 + np.exp(b * (A @ x)))
        return -(A.T @ (b * s)) / n + alpha * x

    def hess(x):
        s = 1.0 / (1.0 + np.exp(b * (A @ x)))
        return (A.T * (s * (1.0 - s))) @ A / n + alpha * np.eye(A.shape[1])
    return P, grad, hess


def newton(A, b, alpha):
    P, grad, hess = objective(A, b, alpha)
    x = np.zeros(A.shape[1])
    for _ in range(200):
        g = grad(x)
        if np.linalg.norm(g) < 1e-14:
            break
        d, t = np.linalg.solve(hess(x), g), 1.0
        while P(x - t * d) > P(x) - 0.25 * t * g @ d and t > 1e-12:
            t /= 2.0
        x = x - t * d
    return x


def newton_certified(A, b, alpha, targets=("1e-4", "1e-6")):
    """Newton's iterations (and passes over the rows: gradient and Hessian, and every
    backtracking evaluation) before the gap at the duals ``phi'(a_i^T x)`` certifies each
    target."""
    P, grad, hess = objective(A, b, alpha)
    x, passes, found = np.zeros(A.shape[1]), 0, {}
    for it in range(1, 100):
        g = grad(x)
        d, t = np.linalg.solve(hess(x), g), 1.0
        passes += 1
        while P(x - t * d) > P(x) - 0.25 * t * g @ d and t > 1e-12:
            t /= 2.0
            passes += 1
        x = x - t * d
        g = grad(x)
        rel = float(g @ g / (2 * alpha) / P(x))
        for target in targets:
            if rel <= float(target) and target not in found:
                found[target] = {"iterations": it, "passes": passes + 1}
        if len(found) == len(targets):
            break
    return found


def start_fits(X, y) -> dict:
    """The default fits at ``tol`` = 1e-4 and 1e-6 from Newton's start: the certified gap,
    epochs, DSPDC iterations, Newton iterations and the start's reads of the rows."""
    import ooc_kernels as ok
    from ooc_kernels.families.dspdc import _logistic_start

    runs, real = [], _logistic_start.logistic_newton

    def counted(*args, **kwargs):
        x, iterations = real(*args, **kwargs)
        runs.append(iterations)
        return x, iterations

    _logistic_start.logistic_newton = counted
    found = {}
    try:
        for tol in ("1e-4", "1e-6"):
            runs.clear()
            est = ok.DSPDCClassifier(random_state=0, tol=float(tol), progress=False)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est.fit(X, y)
            k = sum(runs)
            found[tol] = {"relative_gap": float(est.gap_history_[-1]["relative_gap"]),
                          "stop_reason": est.stop_reason_, "epochs": int(est.n_iter_),
                          "dspdc_iterations": int(est.gap_history_[-1]["iterations"]),
                          "newton_iterations": k,
                          # k iterations of 3 reads, the last gradient, the duals at
                          # the start (A x_0, then A^T (w y)), the certificate's losses
                          "row_reads": 3 * k + 1 + 2 + 1}
    finally:
        _logistic_start.logistic_newton = real
    return found


def fit(X, y, **params):
    import ooc_kernels as ok

    est = ok.DSPDCClassifier(random_state=0, tol=1e-7, progress=False, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return est


def gap_at(history, passes):
    """The relative gap of the last evaluation at or before ``passes``."""
    return float([e for e in history if e["passes"] <= passes][-1]["relative_gap"])


def first_pass(history, target):
    return next((float(e["passes"]) for e in history if e["relative_gap"] <= target), None)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=57,
                        help="passes after which the fixed steps' gaps are compared")
    parser.add_argument("--boosts", type=float, nargs="+", default=[0.3, 1, 3, 10, 30])
    parser.add_argument("--gamma-boosts", type=float, nargs="+", default=[10, 100])
    parser.add_argument("--alphas", type=float, nargs="+", default=[3e-4, 1e-3, 1e-2])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression

    from ooc_kernels.families.dspdc import _gap_report, estimators
    from ooc_kernels.families.dspdc.in_memory.baselines import sdca
    from ooc_kernels.families.dspdc.params import dspdc_parameters

    X, y = load_breast_cancer(return_X_y=True)
    n = len(y)
    A, b = standardized(X), np.where(y == 1, 1.0, -1.0)
    P, grad, hess = objective(A, b, ALPHA)
    x_star = newton(A, b, ALPHA)
    p_star = P(x_star)
    s = 1.0 / (1.0 + np.exp(-b * (A @ x_star)))
    curv = s * (1.0 - s)
    cov = np.linalg.eigvalsh(A[:, :-1].T @ A[:, :-1] / n)
    H = np.linalg.eigvalsh(hess(x_star))
    out = {"optimum": {"P*": p_star, "norm_x*": float(np.linalg.norm(x_star)),
                       "hessian_eigenvalues": [float(H[0]), float(H[-1])],
                       "flat_rows": int((curv < 1e-3).sum()), "rows": n,
                       "covariance_eigenvalues": [float(cov[0]), float(cov[1]),
                                                  float(cov[-1])],
                       "mean_squared_row_norm": float((A ** 2).sum(axis=1).mean()),
                       "squared_mean_row_norm": float(np.sqrt((A ** 2).sum(axis=1)).mean()
                                                      ** 2)}}
    out["start"] = start_fits(X, y)
    from ooc_kernels.families.dspdc import _squared_start

    _squared_start.START_MAX_FEATURES = 0       # DSPDC's own iterations from here on
    default = fit(X, y)
    h = default.gap_history_
    out["sides"] = [{"passes": e["passes"], "P-P*": e["primal"] - p_star,
                     "D*-D": p_star - e["dual"]} for e in h]
    out["rates"] = [{"passes": b2["passes"], "step_boost": b2["step_boost"],
                     "observed": float(np.log(a["gap"] / b2["gap"])
                                       / (b2["passes"] - a["passes"])),
                     "promised": b2["rate"]} for a, b2 in zip(h[:-1], h[1:])]
    out["default"] = {"passes_1e-4": first_pass(h, 1e-4), "final_relative_gap":
                      float(h[-1]["relative_gap"]), "epochs": int(default.n_iter_)}
    stalled, boost = _gap_report.gap_stalled, dict(estimators.STEP_BOOST)
    fixed = []
    try:
        _gap_report.gap_stalled = lambda history, *a, **k: False
        for bst in args.boosts:
            estimators.STEP_BOOST["logistic"] = bst
            hf = fit(X, y, max_iter=args.passes + 3).gap_history_
            fixed.append({"step_boost": bst, "relative_gap": gap_at(hf, args.passes),
                          "passes_1e-4": first_pass(hf, 1e-4)})
    finally:
        _gap_report.gap_stalled = stalled
        estimators.STEP_BOOST.update(boost)
    for gb in args.gamma_boosts:
        prm = dspdc_parameters(n, A.shape[1], 1, A.shape[1], out["optimum"]
                               ["mean_squared_row_norm"], ALPHA, 4.0 * gb)
        hg = fit(X, y, max_iter=args.passes + 3, steps="theorem", theta=prm.theta,
                 tau=prm.tau, sigma=prm.sigma).gap_history_
        fixed.append({"gamma_boost": gb, "relative_gap": gap_at(hg, args.passes)})
    out["fixed"] = fixed
    Z = A[:, :-1]
    ev, Q = np.linalg.eigh(Z.T @ Z / n)
    columns = {}
    for name, D in (("whitened", Z @ Q / np.sqrt(ev)),
                    ("gaussian", np.random.default_rng(0).normal(size=X.shape))):
        hc = fit(D, y).gap_history_
        columns[name] = {"passes_1e-4": first_pass(hc, 1e-4),
                         "relative_gap_at_passes": gap_at(hc, args.passes)}
    out["columns"] = columns
    res = sdca(A, b, loss="logistic", lam1=0.0, lam2=ALPHA, max_epochs=args.passes)
    last = res.history[-1]
    out["sdca"] = {"passes": float(last["passes"]),
                   "relative_gap": float(last["gap"] / last["primal"])}
    lbfgs = {}
    for it in range(1, 200):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = LogisticRegression(C=1.0 / (ALPHA * n), fit_intercept=False, tol=1e-14,
                                       max_iter=it).fit(A, y)
        x = model.coef_.ravel()
        g = grad(x)
        rel = float(g @ g / (2 * ALPHA) / P(x))
        for target in ("1e-4", "1e-6"):
            if rel <= float(target) and target not in lbfgs:
                lbfgs[target] = it
        if len(lbfgs) == 2:
            break
    out["lbfgs_iterations"] = lbfgs
    out["newton"] = newton_certified(A, b, ALPHA)
    alphas = []
    for alpha in args.alphas:
        ha = fit(X, y, alpha=alpha).gap_history_
        alphas.append({"alpha": alpha, "passes_1e-4": first_pass(ha, 1e-4),
                       "passes_1e-6": first_pass(ha, 1e-6)})
    out["alphas"] = alphas
    summary = {k: v for k, v in out.items() if k not in ("sides", "rates")}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)}, **out},
                                       indent=1))


if __name__ == "__main__":
    main()
