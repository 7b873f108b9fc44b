"""Which part of DSGOneClassSVM's optimization decides its ROC AUC: the steps replayed in
NumPy on the fit's own random features.

The problem of ``benchmarks/dsg_one_class.py --problem wide`` (four blobs in ``--d``
dimensions, test outliers 1.25 times wider around the same centres), in memory.  A default
``DSGOneClassSVM(nu)`` fit for one pass gives the configuration (standardization, median
bandwidth, feature seed, step schedule ``gamma_t = (1 / nu) / (t + t0)``); every row's
features are computed once from it, and the one-class steps are replayed on them, chunk by
chunk in a random order with the rows of each chunk shuffled, for each variant (``--variants``):

* ``b<k>``: DSG's mini-batch steps (growth phase, then full phase) with batches of ``k``
  rows and DSG's schedule;
* ``b<k>-avg``, ``b<k>-avg-half``: the same with the Polyak-Ruppert average of the
  coefficients and ``tau`` over every step, or over the second half of the steps;
* ``b<k>-theta2``: ``gamma_t = (2 / nu) / (t + 2 t0)`` (``theta nu = 2``);
* ``per-sample``: scikit-learn's ``SGDOneClassSVM`` update and its ``"optimal"`` schedule
  (one row per step, ``eta_t = 1 / (nu (t0 + t - 1))``, ``t0 = 1 / (nu typw)``, ``typw =
  nu^(-1/4)``) on the same features scaled as DSG's full phase scales them;
* ``moments-all``, ``moments-first``: ``b<--batch>`` with the standardization's moments taken
  from every row, or from the first chunk (the peer's), instead of DSG's sample.

Each variant runs for ``--repeats`` row orders; the ROC AUCs are printed (and written to
``--json``).  Run from the repository root (the features of 140,000 rows take 2.3 GB)::

    python benchmarks/dsg_one_class_steps.py --n 140000 --repeats 3 \\
        --variants per-sample b256 b64 b256-avg b256-avg-half b256-theta2
    python benchmarks/dsg_one_class_steps.py --n 20000 --repeats 3 \\
        --variants b256 b64 b32 b256-avg b256-avg-half b256-theta2
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

import ooc_kernels as ok
from ooc_kernels.families.dsg.reference import block_features

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dsg_one_class import mixture, wide_outliers  # noqa: E402


def features(config, X):
    """Every row's features, ``(n, n_blocks * block_size)`` float32, DSG's blocks side by
    side."""
    z = block_features(config)
    Xs = (X.astype(np.float64) - np.asarray(config.x_shift)) / np.asarray(config.x_scale)
    return np.hstack([z(j, Xs).astype(np.float32) for j in range(config.n_blocks)])


def _order(n, chunk, rng):
    """Rows chunk by chunk in a random chunk order, each chunk's rows shuffled."""
    starts = rng.permutation(-(-n // chunk)) * chunk
    return np.concatenate([a + rng.permutation(min(chunk, n - a)) for a in starts])


def minibatch(Z, config, nu, order, *, batch, theta=1.0, average=None, chunk):
    """DSG's one-class steps (growth, then full phase) over ``order``, batches restarting at
    every chunk; ``average``: the step from which the iterates are averaged (None: the last
    iterate).  Returns ``(coef, tau)``."""
    r, m = config.block_size, config.n_blocks
    t0 = theta * config.t0
    coef, tau, t, seen = np.zeros(Z.shape[1]), 0.0, 0, 0
    mean_coef, mean_tau, n_avg = np.zeros_like(coef), 0.0, 0
    for a in range(0, len(order), chunk):
        rows = order[a:a + chunk]
        for lo in range(0, len(rows), batch):
            Zb = Z[rows[lo:lo + batch]]
            nb = len(Zb)
            t += 1
            gamma = theta / nu / (t + t0)
            f = Zb[:, :seen * r] @ coef[:seen * r] if seen < m else Zb @ coef
            o = (f < tau).astype(np.float32)
            if seen < m:
                coef[:seen * r] *= 1.0 - gamma * nu
                coef[seen * r:(seen + 1) * r] = gamma / nb * (o @ Zb[:, seen * r:(seen + 1) * r])
                seen += 1
            else:
                coef = coef * (1.0 - gamma * nu) + gamma / (nb * m) * (o @ Zb)
            tau -= gamma * (float(o.sum()) / nb - nu)
            if average is not None and t >= average:
                n_avg += 1
                mean_coef += (coef - mean_coef) / n_avg
                mean_tau += (tau - mean_tau) / n_avg
    return (mean_coef, mean_tau) if average is not None else (coef, tau)


def per_sample(Z, config, nu, order):
    """scikit-learn's SGDOneClassSVM steps and "optimal" schedule, one row per step, on the
    features scaled by ``1 / sqrt(n_blocks)`` (DSG's full-phase kernel estimate).  The
    coefficients are kept as ``s * v`` so that the decay costs nothing."""
    scale = np.float32(1.0 / np.sqrt(config.n_blocks))
    typw = np.sqrt(1.0 / np.sqrt(nu))
    t0 = 1.0 / (typw * nu)
    v, s, tau = np.zeros(Z.shape[1]), 1.0, 0.0
    for t, i in enumerate(order, start=1):
        z = Z[i] * scale
        f = s * float(z @ v)
        eta = 1.0 / (nu * (t0 + t - 1))
        s *= 1.0 - eta * nu
        if f < tau:
            v += (eta / s) * z
            tau -= eta * (1.0 - nu)
        else:
            tau += eta * nu
        if s < 1e-6:
            v *= s
            s = 1.0
    return v * (s * scale), tau  # the coefficients of the unscaled features


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--d", type=int, default=16)
    p.add_argument("--nu", type=float, default=0.1)
    p.add_argument("--chunk-size", type=int, default=10_000)
    p.add_argument("--batch", type=int, default=256,
                   help="batch of the moments-* variants")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--seed", type=int, default=0, help="the DSG fit's random_state")
    p.add_argument("--variants", nargs="+", default=["b256", "b64", "b256-avg"])
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    X = mixture(args.n, args.d, rng)
    rng = np.random.default_rng(99)
    test = np.vstack([mixture(5000, args.d, rng), wide_outliers(5000, args.d, 1.25, rng)])
    truth = np.r_[np.ones(5000), np.zeros(5000)]
    det = ok.DSGOneClassSVM(nu=args.nu, max_iter=1, tol=None, random_state=args.seed,
                            chunk_size=args.chunk_size, progress=False).fit(X)
    config = det._config
    print(f"DSGOneClassSVM, one pass: ROC AUC "
          f"{roc_auc_score(truth, det.decision_function(test)):.4f}", flush=True)
    bases = {"dsg": config}
    if any(v.startswith("moments") for v in args.variants):
        first = X[:args.chunk_size]
        bases["all"] = replace(config, x_shift=tuple(X.mean(0)), x_scale=tuple(X.std(0)))
        bases["first"] = replace(config, x_shift=tuple(first.mean(0)),
                                 x_scale=tuple(first.std(0)))
    results = {}
    for name, cfg in bases.items():
        variants = [v for v in args.variants if
                    (v == f"moments-{name}") or (name == "dsg" and not v.startswith("moments"))]
        if not variants:
            continue
        Z, Zt = features(cfg, X), features(cfg, test)
        for variant in variants:
            aucs = []
            for s in range(args.repeats):
                order = _order(len(X), args.chunk_size, np.random.default_rng(s))
                if variant == "per-sample":
                    coef, _ = per_sample(Z, cfg, args.nu, order)
                else:
                    spec = variant.split("-")
                    batch = args.batch if spec[0] == "moments" else int(spec[0][1:])
                    steps = -(-len(X) // batch)
                    average = {"avg": 1, "avg-half": steps // 2}.get("-".join(spec[1:]))
                    theta = 2.0 if "theta2" in spec else 1.0
                    coef, _ = minibatch(Z, cfg, args.nu, order, batch=batch, theta=theta,
                                        average=average, chunk=args.chunk_size)
                aucs.append(float(roc_auc_score(truth, Zt @ coef)))
            results[variant] = aucs
            print(f"{variant}: ROC AUC median {np.median(aucs):.4f} "
                  f"({' '.join(f'{a:.4f}' for a in aucs)})", flush=True)
        del Z, Zt
    if args.json:
        Path(args.json).write_text(json.dumps({"setup": vars(args), "auc": results},
                                              indent=1))
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
