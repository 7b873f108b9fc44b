"""The averaging default of the DSG losses: the averaged iterate against the last iterate,
at equal wall-clock time, on problems a user of each loss would bring.

``DSGRegressor(average="auto")`` (and ``DSGClassifier``'s) predicts with the averaged
iterate for the losses whose derivative is not Lipschitz or whose gradient on an outlier
does not shrink with its residual (:data:`~ooc_kernels.families.dsg._schedule.
AVERAGED_LOSSES`), and with the last iterate otherwise.  This script measures both
settings, everything else at its default (``bandwidth="auto"``, ``tol=1e-3``, ...):

* ``averaged``: ``average=True``;
* ``last``: ``average=False`` (the default before ``"auto"``), first with its own
  stopping rule (``last``), then continued by ``partial_fit`` epochs until it has used at
  least the averaged fit's wall-clock time (``last_equal_time``).

Problems (``x ~ U(-3, 3)^2``, ``f(x) = sin(x_1) + cos(2 x_2) / 2``, test rows without
corruption, scored against the clean ``f``):

* ``corrupted``: ``y = f + 0.2 N(0, 1)``, 10% of the labels replaced by ``6 + 3 N(0, 1)``;
* ``heavy_tailed``: ``y = f + 0.3 t_1.5`` (Student's t, 1.5 degrees of freedom: infinite
  variance);
* ``clean``: ``y = f + 0.2 N(0, 1)``;
* ``quantile``: ``x ~ U(-3, 3)``, ``y = sin(x) + (0.2 + 0.3 |x|) N(0, 1)``, the coverage
  (fraction of test targets below the prediction) of ``tau`` in 0.1, 0.5, 0.9 and the
  pinball loss;
* classification (``--classifiers``): ``make_moons(noise=0.3)`` and ``make_circles(noise=
  0.15, factor=0.5)``, error rate, for hinge, squared hinge and logistic.

Scores: mean squared error against ``f`` (regression), ``|coverage - tau|`` and pinball
(quantile), error rate (classification), on 20,000 test rows.  Medians
(and the worst run) over ``--repeats`` seeds; written to ``--json``.  Run from the repository root::

    python benchmarks/dsg_loss_defaults.py --n 2000 --repeats 5
    python benchmarks/dsg_loss_defaults.py --n 20000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from sklearn.datasets import make_circles, make_moons

import ooc_kernels as ok

REGRESSION_LOSSES = ("squared", "huber", "epsilon_insensitive", "quantile")
CLASSIFICATION_LOSSES = ("logistic", "hinge", "squared_hinge")
TEST_ROWS = 20_000


def _f(X):
    return np.sin(X[:, 0]) + 0.5 * np.cos(2.0 * X[:, 1])


def regression_problem(name, n, seed):
    """Training rows, their (corrupted) targets; test rows and the clean function there."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, size=(n, 2))
    f = _f(X)
    if name == "corrupted":
        y = f + 0.2 * rng.normal(size=n)
        y = np.where(rng.random(n) < 0.1, 6.0 + 3.0 * rng.normal(size=n), y)
    elif name == "heavy_tailed":
        y = f + 0.3 * rng.standard_t(1.5, size=n)
    else:
        y = f + 0.2 * rng.normal(size=n)
    Xt = np.random.default_rng(seed + 1000).uniform(-3.0, 3.0, size=(TEST_ROWS, 2))
    return X, y, Xt, _f(Xt)


def heteroscedastic(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3.0, 3.0, size=(n, 1))
    return X, np.sin(X[:, 0]) + (0.2 + 0.3 * np.abs(X[:, 0])) * rng.normal(size=n)


def classification_problem(name, n, seed):
    make = (lambda m, s: make_moons(m, noise=0.3, random_state=s)) if name == "moons" \
        else (lambda m, s: make_circles(m, noise=0.15, factor=0.5, random_state=s))
    X, y = make(n, seed)
    Xt, yt = make(TEST_ROWS, seed + 1000)
    return X, y, Xt, yt


def equal_time_runs(make, X, y, score):
    """``averaged``, ``last`` and ``last_equal_time``: their scores, seconds and epochs."""
    out = {}
    t = time.perf_counter()
    est = make(True).fit(X, y)
    out["averaged"] = dict(score=score(est), seconds=time.perf_counter() - t,
                           epochs=est.n_iter_, bandwidth=est.bandwidth_)
    t = time.perf_counter()
    est = make(False).fit(X, y)
    seconds = time.perf_counter() - t
    out["last"] = dict(score=score(est), seconds=seconds, epochs=est.n_iter_,
                       bandwidth=est.bandwidth_)
    epochs = est.n_iter_
    while seconds < out["averaged"]["seconds"]:
        t = time.perf_counter()
        est.partial_fit(X, y)
        seconds += time.perf_counter() - t
        epochs += 1
    out["last_equal_time"] = dict(score=score(est), seconds=seconds, epochs=epochs,
                                  bandwidth=est.bandwidth_)
    return out


def _summary(runs):
    """Per setting: the median of every quantity, the worst score, and the runs."""
    return {setting: {**{k: float(np.median([r[setting][k] for r in runs]))
                         for k in runs[0][setting]},
                      "worst": float(max(r[setting]["score"] for r in runs)),
                      "runs": [r[setting] for r in runs]} for setting in runs[0]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--problems", default="corrupted,heavy_tailed,clean,quantile")
    p.add_argument("--losses", default=",".join(REGRESSION_LOSSES),
                   help="regression losses of the regression problems")
    p.add_argument("--classifiers", action="store_true",
                   help="also hinge, squared hinge and logistic on moons and circles")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    common = dict(scheduler="sync", progress=False)
    out = {"setup": {k: v for k, v in vars(args).items() if k != "json"}}

    def report(key, med):
        out[key] = med
        print(key, " | ".join(f"{s}: {v['score']:.4f} worst {v['worst']:.4f} ("
                              f"{v['seconds']:.2f} s, {v['epochs']:.0f} ep)"
                              for s, v in med.items()), flush=True)

    for problem in args.problems.split(","):
        if problem == "quantile":
            for tau in (0.1, 0.5, 0.9):
                runs = []
                for seed in range(args.repeats):
                    X, y = heteroscedastic(args.n, seed)
                    Xt, yt = heteroscedastic(TEST_ROWS, seed + 1000)

                    def make(avg, tau=tau, seed=seed):
                        return ok.DSGRegressor(loss="quantile", quantile=tau, average=avg,
                                               random_state=seed, **common)

                    def coverage_error(est, Xt=Xt, yt=yt, tau=tau):
                        return abs(float(np.mean(yt <= est.predict(Xt))) - tau)
                    runs.append(equal_time_runs(make, X, y, coverage_error))
                report(f"quantile_{tau} |coverage - tau|", _summary(runs))
            continue
        for loss in args.losses.split(","):
            runs = []
            for seed in range(args.repeats):
                X, y, Xt, ft = regression_problem(problem, args.n, seed)

                def make(avg, loss=loss, seed=seed):
                    return ok.DSGRegressor(loss=loss, average=avg, random_state=seed,
                                           **common)

                def mse(est, Xt=Xt, ft=ft):
                    return float(np.mean((est.predict(Xt) - ft) ** 2))
                runs.append(equal_time_runs(make, X, y, mse))
            report(f"{problem} {loss} MSE", _summary(runs))
    if args.classifiers:
        for problem in ("moons", "circles"):
            for loss in CLASSIFICATION_LOSSES:
                runs = []
                for seed in range(args.repeats):
                    X, y, Xt, yt = classification_problem(problem, args.n, seed)

                    def make(avg, loss=loss, seed=seed):
                        return ok.DSGClassifier(loss=loss, average=avg, random_state=seed,
                                                **common)

                    def error(est, Xt=Xt, yt=yt):
                        return float(np.mean(est.predict(Xt) != yt))
                    runs.append(equal_time_runs(make, X, y, error))
                report(f"{problem} {loss} error", _summary(runs))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
