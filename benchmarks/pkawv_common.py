"""Shared pieces of the PKAWV benchmarks (run from ``benchmarks/``): the stand-in datasets,
FOGD, the equal-time peers and the online-curve recorder.

The paper's datasets (UCI casp, ijcnn1, cod-rna, SUSY) are not available offline, so each
is replaced by a synthetic stand-in with the same number of rows, features and task
(:data:`STAND_INS`), generated chunk by chunk from a seed:

* inputs ``x = tanh(z)``, ``z`` Gaussian with a random correlation (every feature in
  ``(-1, 1)``, as the paper scales its inputs to ``[-1, 1]``);
* a target function ``f(x) = sum_k c_k exp(-||x - m_k||^2 / (2 * 0.8^2)) + b . x +
  0.3 (x_0 x_1 - x_2^2)`` with 20 random bumps;
* regression: ``y = f(x) + noise``, scaled to ``[-1, 1]`` by fixed constants; classification:
  ``y = sign(f(x) - q + logistic noise)`` in ``{-1, 1}``, ``q`` the quantile of ``f`` that
  gives the dataset's share of positive labels.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numba
import numpy as np


@dataclass(frozen=True)
class StandIn:
    name: str
    n: int
    d: int
    task: str            # "regression" or "classification"
    positive: float      # share of label +1 (classification)
    bandwidth: float     # the paper's sigma for this dataset


#: The stand-ins: the paper's n, d, task and sigma.
STAND_INS = {
    "casp": StandIn("casp", 45_730, 9, "regression", 0.0, 1.0),
    "ijcnn1": StandIn("ijcnn1", 150_000, 22, "classification", 0.10, 1.0),
    "cod-rna": StandIn("cod-rna", 270_000, 8, "classification", 0.33, 1.0),
    "susy": StandIn("susy", 1_000_000, 18, "classification", 0.46, 4.0),
}


class Target:
    """The stand-in's random function and its input correlation (from ``seed``)."""

    def __init__(self, d: int, seed: int = 2019):
        rng = np.random.default_rng(seed)
        a = rng.normal(size=(d, d)) / math.sqrt(d)
        self.mix = np.linalg.cholesky(0.5 * np.eye(d) + 0.5 * a @ a.T / np.mean(
            np.diag(a @ a.T)))
        self.centres = np.tanh(rng.normal(size=(20, d)))
        self.heights = rng.normal(size=20)
        self.slope = rng.normal(size=d) / math.sqrt(d)

    def inputs(self, rng, n: int) -> np.ndarray:
        return np.tanh(rng.normal(size=(n, len(self.slope))) @ self.mix.T)

    def __call__(self, X) -> np.ndarray:
        sq = ((X[:, None, :] - self.centres[None]) ** 2).sum(axis=2)
        bumps = np.exp(-sq / (2 * 0.8 ** 2)) @ self.heights
        return bumps + X @ self.slope + 0.3 * (X[:, 0] * X[:, 1] - X[:, 2] ** 2)


def chunks(spec: StandIn, chunk: int = 50_000, seed: int = 7):
    """``(X, y)`` chunks of the stand-in, in order (float64; deterministic per chunk)."""
    target = Target(spec.d)
    pilot = target(target.inputs(np.random.default_rng(99), 20_000))
    if spec.task == "classification":
        q = np.quantile(pilot, 1 - spec.positive)
    else:
        lo, hi = np.quantile(pilot, [0.001, 0.999])
    for i, start in enumerate(range(0, spec.n, chunk)):
        rng = np.random.default_rng([seed, i])
        X = target.inputs(rng, min(chunk, spec.n - start))
        f = target(X)
        if spec.task == "classification":
            y = np.where(f - q + 0.15 * rng.logistic(size=len(f)) > 0, 1.0, -1.0)
        else:
            y = np.clip(2 * (f + 0.1 * rng.normal(size=len(f)) - lo) / (hi - lo) - 1, -1, 1)
        yield X, y


def load(spec: StandIn, n: int | None = None, chunk: int = 50_000):
    """The first ``n`` rows of the stand-in in memory (benchmark sizes only)."""
    Xs, ys, total = [], [], 0
    for X, y in chunks(spec, chunk):
        Xs.append(X)
        ys.append(y)
        total += len(X)
        if n is not None and total >= n:
            break
    X, y = np.concatenate(Xs), np.concatenate(ys)
    return (X, y) if n is None else (X[:n], y[:n])


def write_store(path, spec: StandIn, chunk: int = 50_000):
    """The stand-in as a Zarr store written chunk by chunk (float32, the schema's dtype)."""
    from ooc_kernels.data.declarations import make_attrs
    from ooc_kernels.data.zarr_io import write_chunks

    parts = ({"X": X.astype(np.float32), "y": y.astype(np.float32)}
             for X, y in chunks(spec, chunk))
    write_chunks(path, parts, n_samples=spec.n, chunk_size=chunk,
                 attrs=make_attrs("regression", generator=f"pkawv {spec.name} stand-in"),
                 sizes={"feature": spec.d}, progress=False, overwrite=True)
    return path


def loss(spec: StandIn, pred, y) -> np.ndarray:
    """Square loss (regression) or classification error of ``sign(pred)``."""
    if spec.task == "classification":
        return (np.where(pred > 0, 1.0, -1.0) != y).astype(np.float64)
    return (pred - y) ** 2


# ----------------------------------------------------------------------------- FOGD
@numba.njit(cache=False, nogil=True)
def _fogd_pass(Z, y, w, eta, pred):
    """One online pass: predict ``w . z_t``, then ``w -= eta (y_hat - y) z_t``."""
    for t in range(Z.shape[0]):
        p = 0.0
        for j in range(Z.shape[1]):
            p += w[j] * Z[t, j]
        pred[t] = p
        g = eta * (p - y[t])
        for j in range(Z.shape[1]):
            w[j] -= g * Z[t, j]


class FOGD:
    """Fourier online gradient descent (Lu et al. 2016): ``D`` random Fourier features of
    the Gaussian kernel of bandwidth ``sigma``, online gradient descent on the square loss
    ``(y - w . z)^2 / 2`` with the constant step ``eta = 1 / sqrt(n)``."""

    def __init__(self, d: int, sigma: float, n: int, n_features: int = 1000, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.W = rng.normal(size=(d, n_features)) / sigma
        self.b = rng.uniform(0, 2 * np.pi, size=n_features)
        self.w = np.zeros(n_features)
        self.eta = 1.0 / math.sqrt(n)

    def features(self, X):
        return math.sqrt(2.0 / len(self.b)) * np.cos(X @ self.W + self.b)

    def partial_fit(self, X, y) -> np.ndarray:
        """The online predictions of the rows of ``X`` (each before its update)."""
        pred = np.empty(len(X))
        _fogd_pass(self.features(X), np.asarray(y, dtype=np.float64), self.w, self.eta,
                   pred)
        return pred


# ----------------------------------------------------------------------------- curves
def online_curve(spec: StandIn, step, X, y, *, chunk: int, budget: float):
    """Feed ``(X, y)`` chunk by chunk to ``step(X_chunk, y_chunk) -> online predictions``
    until the rows end or ``budget`` seconds pass: ``[(rows, seconds, average loss)]``."""
    out, total, start = [], 0.0, time.perf_counter()
    for lo in range(0, len(X), chunk):
        pred = step(X[lo:lo + chunk], y[lo:lo + chunk])
        total += loss(spec, pred, y[lo:lo + chunk]).sum()
        rows = min(lo + chunk, len(X))
        elapsed = time.perf_counter() - start
        out.append((rows, elapsed, total / rows))
        if elapsed > budget:
            break
    return out


def okr_step(model):
    """An :class:`ooc_kernels.OnlineKernelRidge` as a ``step`` of :func:`online_curve`."""
    def step(X, y):
        model.partial_fit(X, y)
        return model.online_predictions_
    return step


def sgd_step(sigma: float, d: int, n_features: int = 1000, seed: int = 0):
    """scikit-learn's ``SGDRegressor`` on ``RBFSampler`` features, progressive validation
    (each chunk predicted before ``partial_fit`` on it)."""
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import SGDRegressor

    rff = RBFSampler(gamma=1 / (2 * sigma ** 2), n_components=n_features,
                     random_state=seed).fit(np.zeros((1, d)))
    sgd = SGDRegressor(alpha=1e-6, random_state=seed)
    state = {"fitted": False}

    def step(X, y):
        Z = rff.transform(X)
        pred = sgd.predict(Z) if state["fitted"] else np.zeros(len(X))
        sgd.partial_fit(Z, y)
        state["fitted"] = True
        return pred
    return step


def river_step(sigma: float, d: int, n_features: int = 1000, seed: int = 0):
    """River's online ``LinearRegression`` on ``RBFSampler`` features, one row at a time
    (``predict_one`` then ``learn_one``)."""
    from river import linear_model
    from sklearn.kernel_approximation import RBFSampler

    rff = RBFSampler(gamma=1 / (2 * sigma ** 2), n_components=n_features,
                     random_state=seed).fit(np.zeros((1, d)))
    model = linear_model.LinearRegression()

    def step(X, y):
        Z = rff.transform(X)
        pred = np.empty(len(X))
        for t in range(len(X)):
            row = dict(enumerate(Z[t]))
            pred[t] = model.predict_one(row)
            model.learn_one(row, float(y[t]))
        return pred
    return step
