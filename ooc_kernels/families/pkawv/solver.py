"""The online forecasters as a sequential chunk algorithm: one chunk a round, rows in order.

The state is what the learner needs to go on, and what a checkpoint holds: for a fixed
finite basis (Taylor, Nystrom chosen beforehand) the ``r x r`` inverse ``A^(-1)``, ``b =
Phi^T y`` and ``w = A^(-1) b``; for the exact learner the rows seen and the inverse of
``K + lambda I``; for the KORS Nystrom learner the rows seen, both dictionaries, the KORS
inverse, ``K_tI``, the Cholesky factor of ``H`` and ``K_tI^T y``.  Every state also has the
rows seen, the cumulative squared loss of the online predictions and, per chunk, the pair
(rows seen, cumulative loss).  ``chunk_step`` runs the numba kernel of the basis over the
chunk's rows and returns the next state with the chunk's online predictions; a sequential
family never combines.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.pkawv.solver import OnlineConfig, OnlineAlgorithm, initial_state
>>> cfg = OnlineConfig(basis="taylor", mode="awv", alpha=1.0, bandwidth=1.0, degree=3,
...                    n_features=2)
>>> algo = OnlineAlgorithm(cfg)
>>> state = initial_state(cfg, algo.n_components)
>>> X = np.array([[0.1, 0.2], [0.3, -0.1]]); y = np.array([1.0, 0.5])
>>> delta = algo.chunk_step(state, {"X": X, "y": y}, None)
>>> float(delta["last_pred"][0])                  # the first forecast is 0
0.0
>>> int(algo.apply(state, delta, None)["n_seen"])
2
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families import AlgorithmCase, SolverSpec, register_solver
from ooc_kernels._blas import single_threaded_blas
from ooc_kernels.families.pkawv.kernels_block import linear_online_blocked
from ooc_kernels.families.pkawv.kernels_online import (
    exact_online,
    linear_online,
    nystrom_online,
)
from ooc_kernels.families.pkawv.taylor import TaylorBasis

__all__ = ["BASES", "BLOCK_MIN_COMPONENTS", "BLOCK_ROWS", "EXACT_MAX_ROWS",
           "NYSTROM_MAX_ROWS", "OnlineAlgorithm", "OnlineConfig", "check_rows",
           "initial_state", "make_basis"]

#: The bases of the online learner.
BASES = ("taylor", "nystrom", "nystrom-fixed", "exact")
#: The exact learner keeps the ``t x t`` inverse of ``K + lambda I`` (128 MiB at 4096 rows)
#: and costs ``O(t^2)`` a row: it refuses longer streams.
EXACT_MAX_ROWS = 4096
#: The KORS Nystrom learner keeps every row seen and ``K_tI`` (``t x m``): it refuses
#: longer streams.
NYSTROM_MAX_ROWS = 200_000
#: A finite basis of at least ``BLOCK_MIN_COMPONENTS`` features has its rows processed in
#: blocks of ``BLOCK_ROWS`` rows, counted from the first row of each chunk, with matrix
#: products (:mod:`.kernels_block`; 32 was the fastest of 16 to 256 for ``r = 190``); a
#: smaller basis row by row (:func:`.kernels_online.linear_online`), which is faster there.
BLOCK_ROWS = 32
BLOCK_MIN_COMPONENTS = 48
#: Arrays of the running loss that every state has.
_COMMON = ("n_seen", "loss_sum", "loss_history")


@dataclasses.dataclass(frozen=True)
class OnlineConfig:
    """The learner's settings, fixed for the whole stream.

    ``degree`` is the Taylor basis's, ``dictionary`` the fixed Nystrom basis's rows,
    ``mu``, ``beta``, ``epsilon`` and ``seed`` KORS's (``seed``: the counter of the
    inclusion draws)."""

    basis: str
    mode: str
    alpha: float
    bandwidth: float
    n_features: int
    degree: int = 0
    dictionary: np.ndarray | None = dataclasses.field(default=None, compare=False)
    mu: float = 1.0
    beta: float = 1.0
    epsilon: float = 0.5
    seed: int = 0


def make_basis(cfg: OnlineConfig):
    """The feature map of a finite basis (``"taylor"``, ``"nystrom-fixed"``), else None."""
    if cfg.basis == "taylor":
        return TaylorBasis(cfg.n_features, cfg.degree, cfg.bandwidth)
    if cfg.basis == "nystrom-fixed":
        from ooc_kernels.families.pkawv.nystrom_fixed import FixedNystromBasis

        return FixedNystromBasis(cfg.dictionary, cfg.bandwidth)
    return None


def initial_state(cfg: OnlineConfig, n_components: int = 0) -> dict:
    """The state before the first row (``n_components``: ``r`` of a finite basis)."""
    state = {"n_seen": np.int64(0), "n_skipped": np.int64(0), "loss_sum": np.float64(0.0),
             "loss_history": np.zeros((0, 2))}
    d = cfg.n_features
    if cfg.basis in ("taylor", "nystrom-fixed"):
        r = n_components
        state.update(Ainv=np.eye(r) / cfg.alpha, b=np.zeros(r), w=np.zeros(r))
    elif cfg.basis == "exact":
        state.update(X_seen=np.zeros((0, d)), y_seen=np.zeros(0), G=np.zeros((0, 0)))
    else:
        state.update(X_seen=np.zeros((0, d)), y_seen=np.zeros(0),
                     kors_idx=np.zeros(0, dtype=np.int64), kors_w=np.zeros(0),
                     Minv=np.zeros((0, 0)), basis_idx=np.zeros(0, dtype=np.int64),
                     KtI=np.zeros((0, 0)), R=np.zeros((0, 0)), kty=np.zeros(0))
    return state


def _grown(a: np.ndarray, shape) -> np.ndarray:
    out = np.zeros(shape, dtype=a.dtype)
    out[tuple(slice(0, s) for s in a.shape)] = a
    return out


def check_rows(cfg: OnlineConfig, t: int, n: int) -> None:
    """Refuse a stream of ``t + n`` rows that the basis's growing state cannot hold."""
    limit = {"exact": EXACT_MAX_ROWS, "nystrom": NYSTROM_MAX_ROWS}.get(cfg.basis)
    if limit is not None and t + n > limit:
        raise ValidationError(
            f"basis={cfg.basis!r} keeps every row seen and its state grows with them: at "
            f"most {limit} rows, but this stream reaches {t + n}; use basis='taylor' or "
            "basis='nystrom-fixed', whose state does not grow."
        )


class OnlineAlgorithm:
    """Predict-then-update over the rows of each chunk, one chunk a round (sequential)."""

    def __init__(self, cfg: OnlineConfig):
        self.cfg = cfg
        self._basis = make_basis(cfg)

    @property
    def n_components(self) -> int:
        """``r`` of a finite basis (0 for ``"exact"`` and ``"nystrom"``)."""
        return 0 if self._basis is None else int(self._basis.n_components)

    def features(self, X) -> np.ndarray:
        """The finite basis's features of ``X``."""
        return self._basis.transform(X)

    def make_tasks(self, state, info):
        return [None] * len(info.groups)

    def chunk_step(self, state, batch, task):
        X = np.ascontiguousarray(batch["X"], dtype=np.float64)
        y = np.ascontiguousarray(batch["y"], dtype=np.float64)
        keep = np.isfinite(X).all(axis=1) & np.isfinite(y)
        if not keep.all():  # on_invalid="skip": the rows the checks let through
            X, y = np.ascontiguousarray(X[keep]), np.ascontiguousarray(y[keep])
        cfg = self.cfg
        awv = cfg.mode == "awv"
        t = int(state["n_seen"])
        check_rows(cfg, t, len(y))
        if cfg.basis in ("taylor", "nystrom-fixed"):
            new = {"Ainv": state["Ainv"].copy(), "b": state["b"].copy(),
                   "w": state["w"].copy()}
            Phi = np.ascontiguousarray(self.features(X), dtype=np.float64)
            if Phi.shape[1] < BLOCK_MIN_COMPONENTS:
                pred = linear_online(Phi, y, new["Ainv"], new["b"], new["w"], awv)
            else:
                with single_threaded_blas():
                    pred = linear_online_blocked(Phi, y, new["Ainv"], new["b"], new["w"],
                                                 awv, BLOCK_ROWS)
        elif cfg.basis == "exact":
            new, pred = self._exact(state, X, y, t, awv)
        else:
            new, pred = self._nystrom(state, X, y, t, awv)
        loss = float(state["loss_sum"]) + float(np.sum((y - pred) ** 2))
        n_seen = np.int64(t + len(y))
        skipped = np.int64(state.get("n_skipped", 0) + len(keep) - len(y))
        new.update(n_seen=n_seen, n_skipped=skipped, loss_sum=np.float64(loss), last_pred=pred,
                   loss_history=np.vstack([state["loss_history"], [[float(n_seen), loss]]]))
        return new

    def _exact(self, state, X, y, t, awv):
        n, d = X.shape
        Xs = _grown(state["X_seen"], (t + n, d))
        ys = _grown(state["y_seen"], (t + n,))
        G = _grown(state["G"], (t + n, t + n))
        inv2s2 = 0.5 / self.cfg.bandwidth ** 2
        pred = exact_online(X, y, Xs, ys, G, t, self.cfg.alpha, inv2s2, awv)
        return {"X_seen": Xs, "y_seen": ys, "G": G}, pred

    def _nystrom(self, state, X, y, t, awv):
        cfg = self.cfg
        n, d = X.shape
        mk, mb = len(state["kors_idx"]), len(state["basis_idx"])
        cap = max(16, 2 * max(mk, mb))
        Xs = _grown(state["X_seen"], (t + n, d))
        ys = _grown(state["y_seen"], (t + n,))

        def grow(cap, a=None):
            src = a if a is not None else state
            return {"kors_idx": _grown(src["kors_idx"], (cap,)),
                    "kors_w": _grown(src["kors_w"], (cap,)),
                    "Minv": _grown(src["Minv"], (cap, cap)),
                    "basis_idx": _grown(src["basis_idx"], (cap,)),
                    "KtI": _grown(src["KtI"], (t + n, cap)),
                    "R": _grown(src["R"], (cap, cap)),
                    "kty": _grown(src["kty"], (cap,))}

        arrs = grow(cap)
        counts = np.array([t, mk, mb, 0], dtype=np.int64)
        params = np.array([cfg.alpha, 0.5 / cfg.bandwidth ** 2, cfg.mu, cfg.beta,
                           cfg.epsilon])
        probs = np.zeros(n)
        pred = np.zeros(n)
        while True:
            start = int(counts[3])
            out = nystrom_online(X, y, Xs, ys, counts, arrs["kors_idx"], arrs["kors_w"],
                                 arrs["Minv"], arrs["basis_idx"], arrs["KtI"], arrs["R"],
                                 arrs["kty"], params, np.uint64(cfg.seed), awv, probs)
            pred[start:len(out)] = out[start:]
            if counts[3] == n:
                break
            cap *= 2
            arrs = grow(cap, arrs)
        mk, mb = int(counts[1]), int(counts[2])
        return {"X_seen": Xs, "y_seen": ys, "kors_idx": arrs["kors_idx"][:mk].copy(),
                "kors_w": arrs["kors_w"][:mk].copy(),
                "Minv": arrs["Minv"][:mk, :mk].copy(),
                "basis_idx": arrs["basis_idx"][:mb].copy(),
                "KtI": arrs["KtI"][:, :mb].copy(), "R": arrs["R"][:mb, :mb].copy(),
                "kty": arrs["kty"][:mb].copy()}, pred

    def combine(self, a, b):
        raise RuntimeError("the online learner runs one task per round in storage order: "
                           "there is nothing to combine")

    def apply(self, state, delta, info):
        new = dict(delta)
        if info is not None and info.round == 0:  # a pass over the data starts: its rows
            new["n_skipped"] = new["n_skipped"] - state.get("n_skipped", 0)  # count anew
        return new


def state_arrays(state) -> dict:
    """The arrays of a state (the contract suite compares them)."""
    return {k: np.asarray(v) for k, v in state.items() if k != "last_pred"}


def _make_case(seed: int, shuffle: bool = False) -> AlgorithmCase:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(30, 2))
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=30)
    cfg = OnlineConfig(basis="taylor", mode="awv", alpha=0.5, bandwidth=1.0, degree=6,
                       n_features=2)
    algo = OnlineAlgorithm(cfg)
    chunks = [{"X": X[i:i + 10], "y": y[i:i + 10]} for i in range(0, 30, 10)]
    return AlgorithmCase(algorithm=algo, state=initial_state(cfg, algo.n_components),
                         chunks=chunks, dims={"X": ("sample", "feature"), "y": ("sample",)},
                         seed=seed)


def _reference(case: AlgorithmCase) -> dict:
    """AWV on the Taylor features by direct solves (:mod:`.reference`), as a state."""
    from ooc_kernels.families.pkawv.reference import linear_awv

    X = np.concatenate([c["X"] for c in case.chunks])
    y = np.concatenate([c["y"] for c in case.chunks])
    cfg = case.algorithm.cfg
    Phi = TaylorBasis(cfg.n_features, cfg.degree, cfg.bandwidth).transform_ref(X)
    pred = linear_awv(Phi, y, cfg.alpha, cfg.mode)
    Ainv = np.linalg.inv(Phi.T @ Phi + cfg.alpha * np.eye(Phi.shape[1]))
    sizes = np.cumsum([len(c["y"]) for c in case.chunks])
    cum = np.cumsum((y - pred) ** 2)
    return {"n_seen": np.int64(len(y)), "n_skipped": np.int64(0),
            "loss_sum": np.float64(cum[-1]),
            "loss_history": np.column_stack([sizes.astype(float), cum[sizes - 1]]),
            "Ainv": Ainv, "b": Phi.T @ y, "w": Ainv @ (Phi.T @ y)}


register_solver(SolverSpec(
    name="pkawv-online", algorithm=OnlineAlgorithm, state_arrays=state_arrays,
    make_case=_make_case, reference=_reference, execution="sequential",
    description="online kernel ridge (Kernel-AWV / PKAWV) over the rows in storage order"))
