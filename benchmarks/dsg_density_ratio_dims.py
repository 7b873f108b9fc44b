"""DSGDensityRatio's defaults in more than two dimensions: real data and d-D Gaussian pairs.

Real data (scikit-learn's bundled sets), each split 50/50 into a training and a held-out
half (stratified on the class of p, seeds 0, 1, 2); within each half ``X_p`` is the class's
rows and ``X_q`` all the rows:

* digits (64 features): p = the images of the digits 0-4, q = all digits; and p = the
  images of the digit 3, q = all digits;
* breast cancer (30 features): p = malignant, q = all;
* wine (13 features): p = class 0, q = all.

Score: the held-out KL lower bound ``mean_p f - mean_q e^f + 1`` (the bound of
``divergence_``, higher is better) with ``f`` the estimate of ``log(p / q)`` of each method.
The peer: ``Nystroem`` (300 components, the median width on the pooled standardized training
rows) + ``LogisticRegression`` (scikit-learn defaults) separating the two samples, whose odds
give ``log(p / q) = decision + log(n_q / n_p)``.

Gaussian pairs, 20,000-row held-out draws of p and q, the closed-form log-ratio: ``shift1``
(the 2-D pair of ``benchmarks/dsg_density_ratio.py``, ``q = N(0.7 e_1, diag(1.3^2, 1, ...))``,
padded with identical N(0, 1) columns) and ``all`` (``q = N(0.7 / sqrt(d) 1, 1.1^2 I)``).
Reported: the RMSE of ``f`` against ``log(p / q)`` at held-out draws of p and the held-out
bound (medians of seeds 0, 1, 2).

Settings: ``before`` is ``alpha = 1 / sqrt(n_p + n_q)``, ``max_iter=20`` (given
explicitly), ``defaults`` the estimator's defaults, and the two changes alone.

    python benchmarks/dsg_density_ratio_dims.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import ooc_kernels as ok
from ooc_kernels.features.bandwidth import median_heuristic

SETS = {
    "digits 0-4 / all": lambda: (load_digits(return_X_y=True), lambda y: y < 5),
    "digit 3 / all": lambda: (load_digits(return_X_y=True), lambda y: y == 3),
    "breast cancer malignant / all": lambda: (load_breast_cancer(return_X_y=True),
                                              lambda y: y == 0),
    "wine class 0 / all": lambda: (load_wine(return_X_y=True), lambda y: y == 0),
}


def settings(n):
    before = dict(alpha=1 / np.sqrt(n), max_iter=20)
    return {"before (1/sqrt(n), max_iter=20)": before,
            "max_iter=100 only": dict(alpha=1 / np.sqrt(n), max_iter=100),
            "alpha rule only (max_iter=20)": dict(max_iter=20),
            "defaults": {}}


def bound(fp, fq):
    return float(np.mean(fp) - np.mean(np.exp(fq)) + 1)


def dsg(Xp, Xq, seed, **kw):
    t = time.perf_counter()
    est = ok.DSGDensityRatio(random_state=seed, scheduler="sync", progress=False,
                             chunk_size=max(1, len(Xp) // 8), **kw).fit(Xp, Xq)
    return est.decision_function, est.n_iter_, time.perf_counter() - t


def peer(Xp, Xq, seed):
    t = time.perf_counter()
    X = np.concatenate([Xp, Xq])
    y = np.r_[np.ones(len(Xp)), np.zeros(len(Xq))]
    scaler = StandardScaler().fit(X)
    Z = scaler.transform(X)
    width = median_heuristic(Z, random_state=seed)
    ny = Nystroem(gamma=1 / (2 * width ** 2), n_components=min(300, len(X)),
                  random_state=seed).fit(Z)
    clf = LogisticRegression(max_iter=2000).fit(ny.transform(Z), y)

    def f(T):
        return (clf.decision_function(ny.transform(scaler.transform(T)))
                + np.log(len(Xq) / len(Xp)))
    return f, 0, time.perf_counter() - t


def real(seeds):
    print("| data (p / q) | d | method | held-out KL bound, mean (seeds) | epochs | seconds |")
    print("|---|---|---|---|---|---|")
    for name, load in SETS.items():
        (X, y), is_p = load()
        rows = {}
        for seed in seeds:
            tr, te = train_test_split(np.arange(len(X)), test_size=0.5, random_state=seed,
                                      stratify=is_p(y))
            Xp, Xq = X[tr][is_p(y[tr])], X[tr]
            Tp, Tq = X[te][is_p(y[te])], X[te]
            runs = {k: dsg(Xp, Xq, seed, **kw)
                    for k, kw in settings(len(Xp) + len(Xq)).items()}
            runs["Nystroem + LogisticRegression"] = peer(Xp, Xq, seed)
            for k, (f, it, sec) in runs.items():
                rows.setdefault(k, []).append((bound(f(Tp), f(Tq)), it, sec))
        for k, vals in rows.items():
            v = np.asarray(vals)
            each = " ".join(f"{x:.2f}" for x in v[:, 0])
            epochs = "-" if k.startswith("Nystroem") else "/".join(f"{e:.0f}" for e in v[:, 1])
            print(f"| {name} | {X.shape[1]} | {k} | {v[:, 0].mean():.3f} ({each}) | {epochs} "
                  f"| {v[:, 2].mean():.2f} |", flush=True)


def gauss_pair(kind, d, n, seed):
    rng = np.random.default_rng(seed)
    if kind == "shift1":
        mean, sd = np.r_[0.7, np.zeros(d - 1)], np.r_[1.3, np.ones(d - 1)]
    else:
        mean, sd = np.full(d, 0.7 / np.sqrt(d)), np.full(d, 1.1)
    Xp, Xq = rng.normal(size=(n, d)), rng.normal(size=(n, d)) * sd + mean
    Tp, Tq = rng.normal(size=(20000, d)), rng.normal(size=(20000, d)) * sd + mean

    def log_ratio(T):
        return (-0.5 * (T ** 2).sum(1) + 0.5 * (((T - mean) / sd) ** 2).sum(1)
                + np.log(sd).sum())
    return Xp, Xq, Tp, Tq, log_ratio


def gaussians(seeds, cases):
    print("| pair | d | n per sample | method | log-ratio RMSE | held-out KL bound "
          "(closed form) | epochs |")
    print("|---|---|---|---|---|---|---|")
    for case in cases:
        kind, d, n = case.split(":")
        d, n = int(d), int(n)
        rows = {}
        for seed in seeds:
            Xp, Xq, Tp, Tq, log_ratio = gauss_pair(kind, d, n, seed)
            kl = float(np.mean(log_ratio(Tp)))
            for k, kw in settings(2 * n).items():
                f, it, _ = dsg(Xp, Xq, seed, **kw)
                fp = f(Tp)
                rows.setdefault(k, []).append(
                    (np.sqrt(np.mean((fp - log_ratio(Tp)) ** 2)), bound(fp, f(Tq)), kl, it))
        for k, vals in rows.items():
            m = np.median(np.asarray(vals), axis=0)
            print(f"| {kind} | {d} | {n} | {k} | {m[0]:.3f} | {m[1]:.3f} ({m[2]:.3f}) | "
                  f"{m[3]:.0f} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--gaussians", nargs="+",
                    default=["shift1:5:2000", "all:5:2000", "shift1:5:8000", "shift1:20:2000",
                             "all:20:2000", "all:20:8000"],
                    help="KIND:D:N cases (KIND shift1 or all)")
    args = ap.parse_args()
    real(args.seeds)
    print()
    gaussians(args.seeds, args.gaussians)


if __name__ == "__main__":
    main()
