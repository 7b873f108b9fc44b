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

Settings: ``before`` is ``alpha = 1 / sqrt(n_p + n_q)``, ``max_iter=20``, ``tol=1e-3`` (given
explicitly), ``defaults`` the estimator's defaults, the two changes of ``alpha`` and
``max_iter`` alone (``tol=1e-3``), and the defaults with ``tol=1e-3``.

``--shifts NAME ...`` runs only the covariate-shift table (``shifted``): the ratio known
for real and statsmodels-shipped data, ``DSGDensityRatio`` at its defaults against
``Nystroem`` + ``LogisticRegression``, a linear ``LogisticRegression`` and uLSIF written in
NumPy (CPU seconds of each fit)::

    python benchmarks/dsg_density_ratio_dims.py --shifts "diabetes, by bmi" ...

    python benchmarks/dsg_density_ratio_dims.py
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_wine
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
    before = dict(alpha=1 / np.sqrt(n), max_iter=20, tol=1e-3)
    return {"before (1/sqrt(n), max_iter=20)": before,
            "max_iter=100 only": dict(alpha=1 / np.sqrt(n), max_iter=100, tol=1e-3),
            "alpha rule only (max_iter=20)": dict(max_iter=20, tol=1e-3),
            "tol=1e-3": dict(tol=1e-3),
            "defaults": {}}


def bound(fp, fq):
    return float(np.mean(fp) - np.mean(np.exp(fq)) + 1)


def dsg(Xp, Xq, seed, clock=time.perf_counter, **kw):
    t = clock()
    kw = {"chunk_size": max(1, len(Xp) // 8), **kw}
    est = ok.DSGDensityRatio(random_state=seed, scheduler="sync", progress=False,
                             **kw).fit(Xp, Xq)
    return est.decision_function, est.n_iter_, clock() - t


def peer(Xp, Xq, seed, clock=time.perf_counter):
    t = clock()
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
    return f, 0, clock() - t


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


def _statsmodels(name):
    """``(X, None)`` of a data set statsmodels ships (no download): every column numeric."""
    import statsmodels.api as sm

    return getattr(sm.datasets, name).load_pandas().data.to_numpy(np.float64), None


def _with_traits(X):
    from dsg_one_class_real import _traits  # benchmarks/dsg_one_class_real.py

    return _traits((X, None))[0]


#: Covariate-shift sets: ``name -> (load, z)``; ``z(X)`` is the value the selection
#: depends on (standardized on the whole set).
SHIFTS = {
    "diabetes, by bmi": (lambda: load_diabetes(return_X_y=True), lambda X: X[:, 2]),
    "breast cancer, by mean radius": (lambda: load_breast_cancer(return_X_y=True),
                                      lambda X: X[:, 0]),
    "wine, by alcohol": (lambda: load_wine(return_X_y=True), lambda X: X[:, 0]),
    "digits, by ink": (lambda: load_digits(return_X_y=True), lambda X: X.sum(1)),
    "fair (statsmodels), by age": (lambda: _statsmodels("fair"), lambda X: X[:, 1]),
    "randhie (statsmodels), by log incentive payment": (lambda: _statsmodels("randhie"),
                                             lambda X: X[:, 3]),
    "breast cancer + traits, by radius": (
        lambda: (_with_traits(load_breast_cancer(return_X_y=True)[0]), None),
        lambda X: np.log(X[:, 0])),                   # the heavy-tailed exp(2 z) column
}


def ulsif(Xp, Xq, seed, centers=100, widths=(0.25, 0.5, 1, 2, 4),
          lambdas=(1e-3, 1e-2, 1e-1, 1.0)):
    """uLSIF (Kanamori, Hido and Sugiyama 2009) in NumPy: ``r(x) = sum_l a_l k(x, c_l)``
    with ``centers`` rows of ``X_p`` as centres, Gaussian widths (multiples of the median
    distance on the pooled standardized rows) and the ridge ``lambda`` chosen by the
    closed-form leave-one-out score; returns ``log(max(r, 1e-3))``."""
    t = time.process_time()
    scaler = StandardScaler().fit(np.concatenate([Xp, Xq]))
    P, Q = scaler.transform(Xp), scaler.transform(Xq)
    rng = np.random.default_rng(seed)
    C = P[rng.choice(len(P), min(centers, len(P)), replace=False)]
    med = median_heuristic(np.concatenate([P, Q]), random_state=seed)
    n = min(len(P), len(Q))
    Pn, Qn = P[rng.choice(len(P), n, replace=False)], Q[rng.choice(len(Q), n, replace=False)]

    def gram(X, width):
        d2 = (X ** 2).sum(1)[:, None] - 2 * X @ C.T + (C ** 2).sum(1)[None]
        return np.exp(-np.maximum(d2, 0) / (2 * (width * med) ** 2))

    best = (np.inf, None)
    for w in widths:
        Kp, Kq = gram(P, w), gram(Q, w)
        H, h = Kq.T @ Kq / len(Q), Kp.mean(0)
        Xde, Xnu = gram(Qn, w).T, gram(Pn, w).T       # (b, n): the LOO points
        nq, n_p = len(Q), len(P)    # Kanamori et al.'s n_de and n_nu
        for lam in lambdas:
            Binv = np.linalg.inv(H + lam * (nq - 1) / nq * np.eye(len(C)))
            BinvX = Binv @ Xde
            denom = nq - (Xde * BinvX).sum(0)
            B0 = Binv @ h[:, None] @ np.ones((1, n)) + BinvX * (h @ BinvX / denom)
            B1 = Binv @ Xnu + BinvX * ((Xnu * BinvX).sum(0) / denom)
            B2 = np.maximum(0, (nq - 1) * (n_p * B0 - B1) / (nq * (n_p - 1)))
            rde, rnu = (Xde * B2).sum(0), (Xnu * B2).sum(0)
            score = (rde @ rde) / (2 * n) - rnu.mean()
            if score < best[0]:
                best = (score, (w, lam))
    w, lam = best[1]
    Kp, Kq = gram(P, w), gram(Q, w)
    a = np.maximum(0, np.linalg.solve(Kq.T @ Kq / len(Q) + lam * np.eye(len(C)), Kp.mean(0)))

    def f(T):
        return np.log(np.maximum(gram(scaler.transform(T), w) @ a, 1e-3))
    return f, 0, time.process_time() - t


def logistic(Xp, Xq, seed):
    """``StandardScaler`` + ``LogisticRegression`` (linear, scikit-learn's defaults) separating
    the two samples; ``log(p / q) = decision + log(n_q / n_p)``."""
    t = time.process_time()
    X = np.concatenate([Xp, Xq])
    scaler = StandardScaler().fit(X)
    clf = LogisticRegression(max_iter=2000).fit(scaler.transform(X),
                                                np.r_[np.ones(len(Xp)), np.zeros(len(Xq))])

    def f(T):
        return clf.decision_function(scaler.transform(T)) + np.log(len(Xq) / len(Xp))
    return f, 0, time.process_time() - t


def shifted(seeds, names, beta=1.5):
    """Covariate shift with the ratio known: the rows split 50/50 (by the seed); ``X_q`` is
    the training half, ``X_p`` its rows kept with probability ``s(x) = sigmoid(beta z(x))``,
    so ``p / q = s(x) / E_q[s]`` (``E_q`` the mean over the whole set)."""
    print("| data, selected by | n_q x d | method | log-ratio RMSE | ratio RMSE | held-out KL "
          "bound (true) | epochs | CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        (X, _), z_of = SHIFTS[name][0](), SHIFTS[name][1]
        z = z_of(X)
        s = 1 / (1 + np.exp(-beta * (z - z.mean()) / z.std()))
        log_r = np.log(s / s.mean())
        rows = {}
        for seed in seeds:
            rng = np.random.default_rng(seed)
            order = rng.permutation(len(X))
            tr, te = order[: len(X) // 2], order[len(X) // 2:]
            Xq = X[tr]
            Xp = Xq[rng.random(len(tr)) < s[tr]]
            cpu = time.process_time
            runs = {"DSGDensityRatio defaults": dsg(Xp, Xq, seed, cpu, chunk_size=10_000),
                    "DSGDensityRatio tol=1e-3": dsg(Xp, Xq, seed, cpu, chunk_size=10_000,
                                                    tol=1e-3),
                    "Nystroem + LogisticRegression": peer(Xp, Xq, seed, cpu),
                    "LogisticRegression (linear)": logistic(Xp, Xq, seed),
                    "uLSIF (NumPy, LOO-CV)": ulsif(Xp, Xq, seed)}
            Tq, lt = X[te], log_r[te]
            w = np.exp(lt)   # held-out p: the held-out q rows weighted by the true ratio
            for k, (f, it, sec) in runs.items():
                fq = f(Tq)
                rows.setdefault(k, []).append((
                    np.sqrt(np.mean((fq - lt) ** 2)), np.sqrt(np.mean((np.exp(fq) - w) ** 2)),
                    np.mean(w * fq) - np.mean(np.exp(fq)) + 1, np.mean(w * lt), it, sec))
        for k, vals in rows.items():
            m = np.median(np.asarray(vals), axis=0)
            epochs = "-" if not k.startswith("DSG") else f"{m[4]:.0f}"
            print(f"| {name} | {len(tr)} x {X.shape[1]} | {k} | {m[0]:.3f} | {m[1]:.3f} | "
                  f"{m[2]:.3f} ({m[3]:.3f}) | {epochs} | {m[5]:.2f} |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--shifts", nargs="*", default=[], choices=list(SHIFTS),
                    help="covariate-shift sets to run (alone: the other tables are skipped)")
    ap.add_argument("--gaussians", nargs="+",
                    default=["shift1:5:2000", "all:5:2000", "shift1:5:8000", "shift1:20:2000",
                             "all:20:2000", "all:20:8000"],
                    help="KIND:D:N cases (KIND shift1 or all)")
    args = ap.parse_args()
    if args.shifts:
        shifted(args.seeds, args.shifts)
        return
    real(args.seeds)
    print()
    gaussians(args.seeds, args.gaussians)


if __name__ == "__main__":
    main()
