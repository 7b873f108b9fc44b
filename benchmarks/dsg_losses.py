"""DSG's losses against the peers a user would pick, at equal wall-clock time, out of core.

Stores (float32, written chunk by chunk, larger than the 8 MiB of ``X`` one task may
gather, ``SHUFFLE_BYTES``):

* regression: ``x ~ U(-3, 3)^d``, ``y = sin(x_1) + cos(2 x_2) / 2 + (0.2 + 0.3 |x_1|) e``,
  and a fraction ``--outliers`` of the targets replaced by ``6 + 3 N(0, 1)``;
* classification: three classes, ``y = argmax`` of three smooth functions of ``x``.

Models:

* DSG: ``DSGRegressor(loss=...)`` / ``DSGClassifier(loss="softmax")`` with their defaults,
  ``average=True`` for epsilon-insensitive and quantile (the default ``"auto"``'s choice)
  and the last iterate for huber (``average=False``, as the table of docs/benchmarks.md was
  measured),
  ``--epochs`` passes over the store (``tol=None``); the time is the whole ``fit``.
* Peers on ``Nystroem(gamma=1 / (2 sigma^2), --components)`` features (sigma: DSG's
  bandwidth, the rows standardized with the first chunk's moments): ``SGDRegressor(loss=
  "huber" | "epsilon_insensitive", epsilon)`` (epsilon in the units of the standardized
  targets, as DSG's) and one-vs-rest ``SGDClassifier(loss="log_loss")``, fed chunk by chunk
  with ``partial_fit`` for as many passes as fit in DSG's time (at least one): equal
  wall-clock time.  Quantile: scikit-learn's SGD has no pinball loss; the exact reference
  is ``QuantileRegressor(alpha=0)`` (highs) on the Nystroem features of a ``--subsample``.

Scores on 20,000 fresh rows: regression, the mean squared error against the clean function
(huber, epsilon-insensitive); quantile, the coverage (fraction of targets below the
prediction) and the pinball loss; classification, the error rate.  Medians of
``--repeats`` runs; written to ``benchmarks/results/dsg_losses.json``.  Run from the
repository root::

    python benchmarks/dsg_losses.py --n 600000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import QuantileRegressor, SGDClassifier, SGDRegressor

import ooc_kernels as ok
from ooc_kernels.data import make_attrs, open_zarr_dataset, write_chunks
from ooc_kernels.estimators._hyperparams import SHUFFLE_BYTES


def regression(n, d, rng, outliers):
    X = rng.uniform(-3, 3, size=(n, d))
    f = np.sin(X[:, 0]) + 0.5 * np.cos(2 * X[:, 1])
    y = f + (0.2 + 0.3 * np.abs(X[:, 0])) * rng.normal(size=n)
    y = np.where(rng.random(n) < outliers, 6.0 + 3.0 * rng.normal(size=n), y)
    return X.astype(np.float32), y.astype(np.float32), f


def classification(n, d, rng):
    X = rng.uniform(-3, 3, size=(n, d))
    scores = np.column_stack([np.sin(X[:, 0]) + X[:, 1] / 3, np.cos(X[:, 1]) - 0.2,
                              np.sin(X[:, 0] + X[:, 1]) / 2])
    return X.astype(np.float32), np.argmax(scores, axis=1).astype(np.int32)


def write_store(path, make, n, d, chunk, task):
    rng = np.random.default_rng(0)
    sizes = [min(chunk, n - a) for a in range(0, n, chunk)]
    write_chunks(path, (make(k, d, rng)[:2] for k in sizes), n_samples=n, n_features=d,
                 chunk_size=chunk, attrs=make_attrs(task, generator="benchmark"),
                 progress=False, **({"dtypes": {"y": np.int32}} if task == "classification"
                                    else {}))
    return open_zarr_dataset(path)


def pinball(pred, y, tau):
    r = y - pred
    return float(np.mean(np.maximum(tau * r, (tau - 1) * r)))


def _features(ds, sigma, components, seed):
    first = np.asarray(ds.X.data.blocks[0].compute(), dtype=np.float64)
    # DSG's kernel on the same standardization: one width, or one per input (the inputs
    # divided by their widths, then a unit width)
    mean, sd = first.mean(0), first.std(0) * np.asarray(sigma, dtype=np.float64)
    nys = Nystroem(gamma=0.5, n_components=components, random_state=seed)
    nys.fit((first[:5000] - mean) / sd)
    return lambda X: nys.transform((np.asarray(X, dtype=np.float64) - mean) / sd)


def _peer_passes(ds, model, feats, budget, seed, y_map=None, classes=None):
    """``partial_fit`` chunk by chunk until ``budget`` seconds (at least one pass)."""
    X, Y = ds.X.data, ds.y.data
    rng = np.random.default_rng(seed)
    t = time.perf_counter()
    passes = 0
    while passes == 0 or time.perf_counter() - t < budget:
        for b in rng.permutation(X.numblocks[0]):
            y = np.asarray(Y.blocks[int(b)].compute())
            y = y if y_map is None else y_map(y)
            kw = {} if classes is None else {"classes": classes}
            model.partial_fit(feats(X.blocks[int(b)].compute()), y, **kw)
        passes += 1
    return time.perf_counter() - t, passes


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=600_000)
    p.add_argument("--d", type=int, default=4)
    p.add_argument("--chunk-size", type=int, default=50_000)
    p.add_argument("--outliers", type=float, default=0.05)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--components", type=int, default=300)
    p.add_argument("--subsample", type=int, default=3000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default="benchmarks/results/dsg_losses.json")
    args = p.parse_args(argv)
    rng = np.random.default_rng(99)
    Xt, yt, ft = regression(20_000, args.d, rng, args.outliers)
    Xc, yc = classification(20_000, args.d, rng)
    out = {"setup": {k: v for k, v in vars(args).items() if k != "json"}}
    common = dict(max_iter=args.epochs, tol=None, progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        reg = write_store(Path(tmp) / "reg.zarr",
                          lambda k, d, r: regression(k, d, r, args.outliers),
                          args.n, args.d, args.chunk_size, "regression")
        clf = write_store(Path(tmp) / "clf.zarr", classification, args.n, args.d,
                          args.chunk_size, "classification")
        print(f"stores: {args.n} x {args.d} float32 = {args.n * args.d * 4 / 2**20:.1f} MiB "
              f"of X each (task budget {SHUFFLE_BYTES / 2**20:.0f} MiB)", flush=True)
        y_mean = float(reg.y.data.mean().compute())
        y_sd = float(reg.y.data.std().compute())
        for name, kw in (("huber", {"average": False}),
                         ("epsilon_insensitive", {"average": True}),
                         ("quantile_0.1", {"quantile": 0.1, "average": True}),
                         ("quantile_0.9", {"quantile": 0.9, "average": True}),
                         ("softmax", {})):
            runs = []
            for seed in range(args.repeats):
                loss = name.split("_0")[0]
                t = time.perf_counter()
                if loss == "softmax":
                    est = ok.DSGClassifier(loss="softmax", random_state=seed, **common,
                                           **kw).fit(clf)
                else:
                    est = ok.DSGRegressor(loss=loss, random_state=seed, **common,
                                          **kw).fit(reg)
                seconds = time.perf_counter() - t
                row = {"dsg_seconds": seconds}
                feats = _features(clf if loss == "softmax" else reg, est.bandwidth_,
                                  args.components, seed)
                if loss == "softmax":
                    row["dsg_error"] = float(np.mean(est.predict(Xc) != yc))
                    peer = SGDClassifier(loss="log_loss", random_state=seed)
                    row["peer_seconds"], row["peer_passes"] = _peer_passes(
                        clf, peer, feats, seconds, seed, classes=np.arange(3))
                    row["peer_error"] = float(np.mean(peer.predict(feats(Xc)) != yc))
                elif loss == "quantile":
                    tau = kw["quantile"]
                    pred = est.predict(Xt)
                    row.update(dsg_coverage=float(np.mean(yt <= pred)),
                               dsg_pinball=pinball(pred, yt, tau))
                    sub = np.random.default_rng(seed).choice(args.n, args.subsample,
                                                             replace=False)
                    Xs = np.asarray(reg.X.data[np.sort(sub)].compute())
                    ys = np.asarray(reg.y.data[np.sort(sub)].compute())
                    t = time.perf_counter()
                    exact = QuantileRegressor(quantile=tau, alpha=0.0, solver="highs")
                    exact.fit(feats(Xs), ys)
                    row["exact_seconds"] = time.perf_counter() - t
                    pred = exact.predict(feats(Xt))
                    row.update(exact_coverage=float(np.mean(yt <= pred)),
                               exact_pinball=pinball(pred, yt, tau))
                else:
                    row["dsg_mse"] = float(np.mean((est.predict(Xt) - ft) ** 2))
                    eps = est._config.loss_param
                    peer = SGDRegressor(loss=loss, epsilon=eps, random_state=seed)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        row["peer_seconds"], row["peer_passes"] = _peer_passes(
                            reg, peer, feats, seconds, seed,
                            y_map=lambda y: (y - y_mean) / y_sd)
                    pred = peer.predict(feats(Xt)) * y_sd + y_mean
                    row["peer_mse"] = float(np.mean((pred - ft) ** 2))
                runs.append(row)
            med = {k: float(np.median([r[k] for r in runs])) for k in runs[0]}
            out[name] = {"median": med, "runs": runs}
            print(name, {k: round(v, 4) for k, v in med.items()}, flush=True)
    Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
