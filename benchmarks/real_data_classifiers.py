"""Every registered classifier at its defaults on real data and on realistic tabular traits,
against the peers a user would pick, by accuracy, log loss and fit seconds.

Fits each classifier of ``ooc_kernels``'s registry (every registered estimator that
scikit-learn's ``is_classifier`` calls one: ``DSGClassifier``, ``DSPDCClassifier``)
constructed with ``random_state=seed`` and nothing else but one thread, the synchronous
scheduler and no progress bar, and the peers:

* ``logreg``: ``StandardScaler()`` then ``LogisticRegression(max_iter=1000)``;
* ``svc``: ``StandardScaler()`` then ``SVC()`` (only up to 10,000 training rows; no log
  loss: it has no probabilities without its internal cross-validation);
* ``hgb``: ``HistGradientBoostingClassifier(random_state=seed)``;
* ``knn``: ``StandardScaler()`` then ``KNeighborsClassifier()`` (5 neighbours).

Every fit runs in this one process, single-threaded (``OMP_NUM_THREADS=
OPENBLAS_NUM_THREADS=NUMBA_NUM_THREADS=1``, set before any import), after one warm-up fit of
each ``ooc_kernels`` classifier that compiles its kernels.  Reported per problem and model:
test accuracy, test log loss (the classes of the training rows; none for ``svc``), CPU
seconds of ``fit`` (``time.process_time()``) and wall seconds of ``fit``; medians over the
seeds.  Seed ``s`` is both the split (stratified, 25% test rows) or the draw of a generated
problem and the estimator's ``random_state``.

Problems.  Real data shipped with the packages (nothing is downloaded):

* ``breast_cancer``, ``digits``, ``wine``, ``iris``: scikit-learn's, raw inputs;
* ``anes96``: statsmodels' 1996 American National Election Study (944 rows): the vote
  (Clinton / Dole) from the other ten columns (party identification, left-right
  placements, age, education, income, population and its logarithm, TV news);
* ``fair``: statsmodels' affairs survey (6,366 rows): whether a woman reported an affair
  (``affairs > 0``) from eight integer-coded answers (marriage rating, religiousness,
  education, occupation and her husband's, age, years married, children).

Realistic traits of tabular data, generated (``seed`` draws the data and the split):

* ``scales``: ``make_classification(3000, 20 inputs, 8 informative)`` with every input
  multiplied by ``10 ** u``, ``u`` uniform in ``[-3, 5]``, and shifted by ``10 ** v``
  times a normal draw, ``v`` uniform in ``[-3, 5]``;
* ``offset``: 3,000 rows, a label from ``sin(2 z_1) + z_2 z_3`` (3 Gaussian inputs)
  with ``z_1`` read on a baseline of ``1e7`` (a reading of unit spread on a large constant,
  a time in fine units: float32 values there are 1 apart);
* ``heavy_tails``: 3,000 rows, a label from ``sin`` and products of 6 Gaussian latents
  (plus 10% flipped labels), observed through ``sinh(2 z)``, ``exp(2 z)`` and
  ``z / |N(0, 1)|`` (income-, count- and ratio-like), plus 4 Cauchy noise inputs;
* ``categorical``: 3,000 rows, three integer-coded categoricals (5, 12 and 30 levels,
  codes in a random order) and a one-hot block of a 10-level one, each level with a random
  effect on the logit, plus 4 numeric inputs, 3 of them with a nonlinear effect; string
  labels ``"no"`` / ``"yes"``;
* ``dup_const``: ``make_classification(2000, 10 inputs, 6 informative)`` plus 4 copies of
  one informative input, 5 constant inputs, 3 inputs zero on all but 1% of the rows;
* ``strings3``: ``make_classification(1500, 12 inputs, 3 classes)`` whose labels are the
  strings ``"low"``, ``"mid"``, ``"high"``;
* ``many_classes``: 60 classes with 12 rows each (9 training, 3 test rows per class), 16
  inputs, Gaussian classes around centres drawn with spread 1.5; labels ``"c00"`` ..
  ``"c59"``.

    OMP_NUM_THREADS=1 python benchmarks/real_data_classifiers.py --seeds 3 \\
        --out benchmarks/results/real_data_classifiers.json
"""

from __future__ import annotations

import os

if __name__ == "__main__":  # one thread everywhere, set before NumPy is imported
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
                 "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
    os.environ.setdefault("OOC_KERNELS_PROGRESS", "0")

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REAL = ("breast_cancer", "digits", "wine", "iris", "anes96", "fair")
SYNTHETIC = ("scales", "offset", "heavy_tails", "categorical", "dup_const", "strings3",
             "many_classes")
PROBLEMS = REAL + SYNTHETIC
PEERS = ("logreg", "svc", "hgb", "knn")
#: SVC is fitted only up to this many training rows.
SVC_MAX_ROWS = 10_000


# ---------------------------------------------------------------------------- problems
def _split(X, y, seed, test_size=0.25):
    from sklearn.model_selection import train_test_split

    return train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)


def _sklearn(name, seed):
    from sklearn import datasets

    X, y = getattr(datasets, "load_" + name)(return_X_y=True)
    return _split(X, y, seed)


def _anes96(seed):
    import statsmodels.api as sm

    data = sm.datasets.anes96.load_pandas().data
    y = data["vote"].to_numpy().astype(int)
    X = data.drop(columns=["vote"]).to_numpy(dtype=float)
    return _split(X, y, seed)


def _fair(seed):
    import statsmodels.api as sm

    data = sm.datasets.fair.load_pandas().data
    y = (data["affairs"].to_numpy() > 0).astype(int)
    X = data.drop(columns=["affairs"]).to_numpy(dtype=float)
    return _split(X, y, seed)


def _scales(seed):
    from sklearn.datasets import make_classification

    rng = np.random.default_rng(seed)
    X, y = make_classification(3000, n_features=20, n_informative=8, n_redundant=4,
                               random_state=seed)
    X = X * 10.0 ** rng.uniform(-3, 5, 20) + 10.0 ** rng.uniform(-3, 5, 20) * rng.normal(
        size=20)
    return _split(X, y, seed)


def _offset(seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(3000, 3))
    y = (np.sin(2 * z[:, 0]) + z[:, 1] * z[:, 2] > 0).astype(int)
    X = z.copy()
    X[:, 0] += 1e7
    return _split(X, y, seed)


def _heavy_tails(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    z = rng.normal(size=(n, 6))
    f = np.sin(2 * z[:, 0]) + z[:, 1] * z[:, 2] + 0.8 * z[:, 3] - 0.5 * z[:, 4] ** 2 + 0.5
    y = (f > np.median(f)).astype(int)
    flip = rng.random(n) < 0.1
    y[flip] = 1 - y[flip]
    X = np.column_stack([np.sinh(2 * z[:, 0]), np.exp(2 * z[:, 1]), np.exp(1.5 * z[:, 2]),
                         z[:, 3] / np.abs(rng.normal(size=n)), np.sinh(3 * z[:, 4]),
                         z[:, 5], rng.standard_cauchy((n, 4))])
    return _split(X, y, seed)


def _categorical(seed):
    rng = np.random.default_rng(seed)
    n = 3000
    logit = np.zeros(n)
    cols = []
    for levels in (5, 12, 30):
        c = rng.integers(0, levels, n)
        logit += rng.normal(0, 1.0, levels)[c]
        cols.append(rng.permutation(levels)[c].astype(float))  # codes in a random order
    c = rng.integers(0, 10, n)
    logit += rng.normal(0, 1.0, 10)[c]
    onehot = np.eye(10)[c]
    num = rng.normal(size=(n, 4))
    logit += np.sin(2 * num[:, 0]) + num[:, 1] ** 2 - 1 + 0.5 * num[:, 2]
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-2 * logit)), "yes", "no")
    X = np.column_stack(cols + [onehot, num])
    return _split(X, y, seed)


def _dup_const(seed):
    from sklearn.datasets import make_classification

    rng = np.random.default_rng(seed)
    X, y = make_classification(2000, n_features=10, n_informative=6, n_redundant=2,
                               shuffle=False, random_state=seed)
    n = len(y)
    sparse = np.where(rng.random((n, 3)) < 0.01, rng.normal(size=(n, 3)), 0.0)
    X = np.column_stack([X, np.repeat(X[:, :1], 4, axis=1), np.full((n, 5), 3.0), sparse])
    return _split(X, y, seed)


def _strings3(seed):
    from sklearn.datasets import make_classification

    X, y = make_classification(1500, n_features=12, n_informative=6, n_classes=3,
                               random_state=seed)
    return _split(X, np.array(["low", "mid", "high"])[y], seed)


def _many_classes(seed):
    rng = np.random.default_rng(seed)
    k, per, d = 60, 12, 16
    centres = rng.normal(0, 1.5, (k, d))
    y = np.repeat(np.arange(k), per)
    X = centres[y] + rng.normal(size=(k * per, d))
    labels = np.array([f"c{i:02d}" for i in range(k)])[y]
    return _split(X, labels, seed, test_size=0.25)


def problem(name, seed):
    """``X_train, X_test, y_train, y_test`` of problem ``name`` for ``seed``."""
    if name in ("breast_cancer", "digits", "wine", "iris"):
        return _sklearn(name, seed)
    return globals()["_" + name](seed)


# ---------------------------------------------------------------------------- models
def classifiers():
    """The registered classifiers, by name."""
    from sklearn.base import is_classifier

    from ooc_kernels.estimators._registry import ESTIMATORS

    out = {}
    for name in ESTIMATORS.names():
        cls = ESTIMATORS.get(name)
        if is_classifier(cls()):
            out[name] = cls
    return out


def make(name, seed, n_train, ours):
    """A fresh model ``name`` (a registered classifier or a peer), or None where it is not
    run."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    if name in ours:
        extra = {"n_jobs": 1} if "n_jobs" in ours[name]().get_params() else {}
        return ours[name](random_state=seed, scheduler="sync", progress=False, **extra)
    if name == "logreg":
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    if name == "svc":
        return make_pipeline(StandardScaler(), SVC()) if n_train <= SVC_MAX_ROWS else None
    if name == "hgb":
        return HistGradientBoostingClassifier(random_state=seed)
    if name == "knn":
        return make_pipeline(StandardScaler(), KNeighborsClassifier())
    raise ValueError(name)


def run_one(model, split):
    """Fit ``model`` on the split: accuracy, log loss, CPU and wall seconds of ``fit``."""
    from sklearn.metrics import log_loss

    X, Xt, y, yt = split
    cpu, wall = time.process_time(), time.perf_counter()
    model.fit(X, y)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    pred = model.predict(Xt)
    out = {"accuracy": float(np.mean(pred == yt)), "log_loss": None, "cpu_seconds": cpu,
           "wall_seconds": wall}
    if hasattr(model, "predict_proba"):
        try:
            proba = model.predict_proba(Xt)
            out["log_loss"] = float(log_loss(yt, proba, labels=model.classes_))
        except (AttributeError, ValueError) as exc:  # no probabilities for this loss
            out["log_loss_error"] = str(exc)[:120]
    return out


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=PROBLEMS)
    p.add_argument("--models", nargs="+", default=None,
                   help="a subset of the models (registered names and peers)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    from ooc_kernels.exceptions import OocKernelsError

    ours = classifiers()
    names = args.models or [*ours, *PEERS]
    warm = problem("breast_cancer", 0)
    for name in ours:  # compile the kernels before any timed fit
        if name in names:
            make(name, 0, len(warm[2]), ours).fit(warm[0], warm[2])
    results = []
    for prob in args.problems:
        runs = {m: [] for m in names}
        for seed in range(args.seeds):
            split = problem(prob, seed)
            for m in names:
                model = make(m, seed, len(split[2]), ours)
                if model is None:
                    continue
                try:
                    r = run_one(model, split)
                except OocKernelsError as exc:  # e.g. a binary-only model on 3 classes
                    print(prob, seed, m, "refused:", str(exc)[:100], flush=True)
                    continue
                runs[m].append(r)
                print(prob, seed, m, json.dumps(r), flush=True)
        row = {"problem": prob, "n_train": len(split[2]), "n_inputs": split[0].shape[1],
               "n_classes": len(np.unique(split[2])), "models": {}}
        for m, rs in runs.items():
            if rs:
                row["models"][m] = {k: _median(r.get(k) for r in rs)
                                    for k in ("accuracy", "log_loss", "cpu_seconds",
                                              "wall_seconds")} | {"runs": rs}
        results.append(row)
        print(table([row]), flush=True)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps({"command": " ".join(sys.argv),
                                            "load_average": os.getloadavg(),
                                            "results": results}, indent=1))
    print(table(results))
    return results


def table(results):
    """A Markdown table: accuracy / log loss / CPU seconds per problem and model."""
    models = []
    for row in results:
        models += [m for m in row["models"] if m not in models]
    lines = ["| problem (train rows x inputs, classes) | " + " | ".join(models) + " |",
             "|---|" + "---|" * len(models)]
    for row in results:
        cells = []
        for m in models:
            r = row["models"].get(m)
            if r is None:
                cells.append("-")
                continue
            ll = "-" if r["log_loss"] is None or not math.isfinite(r["log_loss"]) else \
                f"{r['log_loss']:.3f}"
            cells.append(f"{r['accuracy']:.3f} / {ll} / {r['cpu_seconds']:.2f}")
        lines.append(f"| {row['problem']} ({row['n_train']} x {row['n_inputs']}, "
                     f"{row['n_classes']}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
