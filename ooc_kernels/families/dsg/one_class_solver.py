"""DSG novelty detection (the one-class machine of Dai et al. 2014, section 4) as a chunk
algorithm.

The machine minimizes ``E_x[max(0, tau - f(x))] + nu/2 ||f||^2 - nu tau`` over ``f`` in the
RKHS and the offset ``tau``.  The model is the DSG model
(:class:`~ooc_kernels.families.dsg.solver.DSGState`: coefficient blocks regenerated from
seeds) plus ``tau``; a chunk task runs the steps of
:func:`~ooc_kernels.families.dsg.kernels_one_class.one_class_update` (growth phase, then
full phase, as DSG does) and the rounds reuse DSG's combination:

* ``K = 1``: the task's local model and offset are the next state (the sequential
  algorithm exactly);
* ``K > 1``: each task runs from the round's model and offset with its own range of global
  steps and block ids, and returns its run as an affine map of the round's state.  ``tau``
  is not decayed, so its map is ``tau -> tau + dtau``; composing the tasks in order adds
  their ``dtau``, and the next state is ``x + w (S - x)`` for the coefficients and
  ``tau + w sum_k dtau_k`` for the offset, with the round's mixing weight ``w``
  (:meth:`~ooc_kernels.families.dsg.solver.DSGAlgorithm.mixing_weight`, between ``1 / K``
  and 1).  With ``combination="average"`` the offsets are averaged like the models,
  weighted by the rows each task trained on.

A configuration is a :class:`~ooc_kernels.families.dsg.solver.DSGConfig` with
``target="novelty"``, one output and ``alpha = nu``, read in both of nu's roles: the RKHS
regularizer and the weight of ``-nu tau``.

No Dask here.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._checks import check_finite
from ooc_kernels._jit.rows import permute_rows_inplace
from ooc_kernels._seeds import task_rng
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dsg._targets import _drop_invalid_rows
from ooc_kernels.families.dsg.kernels_one_class import (one_class_fixed_update,
                                                        one_class_update)
from ooc_kernels.families.dsg.solver import (DSGAlgorithm, DSGConfig, DSGDelta, DSGState,
                                             _affine, feature_map)
from ooc_kernels.features.blocks import stacked_block_params
from ooc_kernels.features.cache import default_cache
from ooc_kernels.features.nystroem import gaussian_cross_kernel

__all__ = ["OneClassState", "OneClassDelta", "OneClassAlgorithm", "fixed_features", "fixed_scores", "init_one_class_state", "landmark_kernel",
           "stacked_feature_bytes"]


@dataclass(frozen=True)
class OneClassState(DSGState):
    """The DSG model (:class:`~ooc_kernels.families.dsg.solver.DSGState`), the offset
    ``tau`` of the paper's update, and the offset the fitted model decides with.

    Attributes
    ----------
    tau : float
        The paper's offset, updated by every step (``f(x) < tau``: the step counts ``x`` as
        novel).
    offset : float or None
        The decision offset set after the last round (``DSGOneClassSVM(offset="quantile")``:
        the ``nu``-quantile of the training scores); None: ``tau``.  The steps never read
        it, and every round resets it to None.
    """

    tau: float = 0.0
    offset: float | None = None


@dataclass(frozen=True)
class OneClassDelta(DSGDelta):
    """A DSG delta (:class:`~ooc_kernels.families.dsg.solver.DSGDelta`) and the offset.

    Attributes
    ----------
    tau_weighted : float
        The tasks' final offsets times the rows each trained on, summed (a ``K = 1`` round,
        or ``combination="average"``: the next offset is this over ``weight``).
    tau_shift : float
        Summed form: the tasks' offset changes, summed (the next offset is the round's
        plus ``mix`` times this).
    """

    tau_weighted: float = 0.0
    tau_shift: float = 0.0


def _as_one_class(delta: DSGDelta, **tau) -> OneClassDelta:
    """A combined :class:`DSGDelta` with the offset fields ``tau``."""
    values = {f.name: getattr(delta, f.name) for f in fields(DSGDelta)}
    return OneClassDelta(**values, **tau)


def init_one_class_state(config: DSGConfig) -> OneClassState:
    """The zero model and ``tau = 0`` (the paper leaves ``tau_0`` open)."""
    shape = (config.n_blocks, config.block_size, config.n_outputs)
    return OneClassState(coef=np.zeros(shape), tau=0.0)


def stacked_feature_bytes(config: DSGConfig) -> int:
    """Bytes of the parameters of every feature block stacked in one array (what a task
    of the one-class machine holds, on top of the block cache)."""
    itemsize = np.dtype(config.dtype).itemsize
    return int(config.n_blocks * (config.n_features_in + 1) * config.block_size * itemsize)


#: Rows whose kernel values against the landmarks one task holds at once (a multiple of
#: every batch size up to it is used): memory ``_FIXED_TILE_ROWS * m`` float64 values.
_FIXED_TILE_ROWS = 4096


def landmark_kernel(basis, config: DSGConfig, X) -> np.ndarray:
    """``k(x, L)`` of rows ``X`` (n, d) against the landmarks of a fixed basis (a
    :class:`~ooc_kernels.features.nystroem.FixedNystromBasis` built in the units the model
    sees): the rows standardized by ``config``, then compared; shape (n, m), float64."""
    X = np.asarray(X, dtype=np.float64)  # one tile of a chunk
    affine = _affine(config)
    if affine is not None:
        X = (X - affine[0]) / affine[1]
    return gaussian_cross_kernel(X, basis.dictionary, basis.bandwidth)


def fixed_features(basis, config: DSGConfig, X) -> np.ndarray:
    """The Nystrom features ``z(x) = C^T k(x, L)`` (``C = basis.components``) of rows
    ``X``: shape (n, ``basis.n_components``), float64.  The fit and the scores never form
    them (they apply ``C`` to the coefficients); the tests compare with them."""
    return landmark_kernel(basis, config, X) @ basis.components


def fixed_scores(basis, config: DSGConfig, state: DSGState, X) -> np.ndarray:
    """``f(x) = z(x) @ coef = k(x, L) @ (C coef)`` of rows ``X`` on a fixed basis, shape
    (n, 1), float64 (``coef``: the model's first ``basis.n_components`` coefficients; the
    blocks' padding is zero), by tiles of :data:`_FIXED_TILE_ROWS` rows."""
    beta = basis.components @ state.coef.reshape(-1)[: basis.n_components]
    out = np.empty((len(X), 1))
    for lo in range(0, len(X), _FIXED_TILE_ROWS):
        tile = landmark_kernel(basis, config, X[lo:lo + _FIXED_TILE_ROWS])
        out[lo:lo + len(tile), 0] = tile @ beta
    return out


def _fixed_steps(basis, C, cfg: DSGConfig, X, w, beta, tau, gammas):
    """The steps of :func:`one_class_fixed_update` over rows ``X`` in visiting order, a
    tile of rows (a whole number of batches) at a time."""
    b = int(cfg.batch_size)
    tile = max(1, _FIXED_TILE_ROWS // b) * b
    loss_sum = loss_weight = 0.0
    params = (float(cfg.alpha), b, float(cfg.alpha))  # nu in both roles
    for lo in range(0, len(X), tile):
        K = landmark_kernel(basis, cfg, X[lo:lo + tile])
        beta, tau, ls, lw = one_class_fixed_update(
            K, np.ascontiguousarray(w[lo:lo + tile], np.float64), beta, tau,
            np.ascontiguousarray(gammas[lo // b:lo // b + -(-len(K) // b)]), params, C)
        loss_sum += ls
        loss_weight += lw
    return beta, tau, loss_sum, loss_weight


class OneClassAlgorithm(DSGAlgorithm):
    """The one-class DSG chunk algorithm for :func:`ooc_kernels.parallel.engine.run_rounds`
    (see the module docstring).

    ``basis``: None, the random features regenerated from seeds (blocks opened one per
    step, then the full phase); or a fixed basis (a
    :class:`~ooc_kernels.features.nystroem.FixedNystromBasis` in the units the model sees)
    whose ``n_components`` features are the first coefficients of the model (the rest of
    the last block is zero), every one of them in the model from the first step
    (:func:`~ooc_kernels.families.dsg.kernels_one_class.one_class_fixed_update`).
    """

    def __init__(self, config: DSGConfig, combination: str = "adaptive", basis=None):
        if config.target != "novelty" or config.n_outputs != 1:
            raise ValidationError(
                f"OneClassAlgorithm needs a config with target='novelty' and one output, got "
                f"target={config.target!r} with {config.n_outputs} outputs.")
        p = 0 if basis is None else basis.n_components
        if not p <= config.n_blocks * config.block_size:
            raise ValidationError(
                f"a fixed basis of {p} features does not fit the model's "
                f"{config.n_blocks} blocks of {config.block_size}; give the config "
                f"n_blocks >= {-(-p // config.block_size)}.")
        super().__init__(config, combination)
        self.basis = basis
        self.whitening = None if basis is None else np.ascontiguousarray(basis.components)

    def _local_step(self, state: OneClassState, X, y, sw, task) -> OneClassDelta:
        cfg = self.config
        dtype = np.dtype(cfg.dtype)
        X = np.asarray(X)  # one chunk, or one group of chunks
        origin = task.origin
        if X.ndim != 2 or X.shape[1] != cfg.n_features_in:
            raise ValidationError(
                f"{origin.describe()} has shape {X.shape}; expected (n, "
                f"{cfg.n_features_in})."
            )
        X = np.ascontiguousarray(X, dtype=dtype)
        sw = None if sw is None else np.asarray(sw, dtype=np.float64).reshape(-1)
        n_skipped = 0
        if cfg.on_invalid == "skip" and X.shape[0]:
            X, _, sw, n_skipped, origin = _drop_invalid_rows(cfg, X, None, sw, origin)
        n = X.shape[0]
        r = cfg.block_size
        empty = np.zeros((0, r, 1))
        if n == 0:  # no work: the identity of the combination
            return OneClassDelta(decay=1.0, weight=0.0, count=1,
                                 block_ids=np.zeros(0, np.int64), coefs=empty, dense=None,
                                 max_steps=0, n_samples=0, block_end=0, n_skipped=n_skipped)
        check_finite(X, "X", origin)
        if feature_map(cfg).rows is not None:  # hierarchical features: the rows become psi(X)
            X = feature_map(cfg).map_rows(X, _affine(cfg), dtype)
        w = self._weights(sw, np.empty((n, 0)), None, origin)
        if cfg.shuffle:
            order = task_rng(task.seed, task.epoch, task.round, task.chunk).permutation(n)
            if len(task.chunks) > 1 and X.flags.owndata and X.flags.writeable:
                permute_rows_inplace(X, order)  # the task's own copy of its group
            else:  # a single chunk may be a view of the caller's data: never modify it
                X = X[order]
            w = w[order]
        m = self.n_steps(n)
        gammas, _ = self._steps(task.t_start, m)
        if self.basis is not None:
            p = self.basis.n_components
            coef, tau, loss_sum, loss_weight = _fixed_steps(
                self.basis, self.whitening, cfg, X, w,
                np.ascontiguousarray(state.coef.reshape(-1)[:p]), float(state.tau), gammas)
            local = np.zeros(cfg.n_blocks * r)
            local[:p] = coef
            return OneClassDelta(decay=0.0, weight=float(n), count=1,
                                 block_ids=np.zeros(0, np.int64), coefs=empty,
                                 dense=local.reshape(cfg.n_blocks, r, 1), max_steps=m,
                                 n_samples=n, block_end=cfg.n_blocks, n_skipped=n_skipped,
                                 loss_sum=float(loss_sum), loss_weight=float(loss_weight),
                                 tau_weighted=float(n) * tau,
                                 tau_shift=tau - float(state.tau))
        fmap = feature_map(cfg)
        n_touched = min(cfg.n_blocks, task.block_start + m)
        W, phase = stacked_block_params(cfg.feature_seed, np.arange(n_touched),
                                        cfg.n_features_in, r, cfg.bandwidth, dtype,
                                        cache=default_cache(), affine=_affine(cfg),
                                        kernel=fmap)
        params = (float(cfg.alpha), int(cfg.batch_size), float(cfg.alpha),  # nu, twice
                  fmap.feature_scale(r))
        local, tau, block_end, loss_sum, loss_weight = one_class_update(
            X, np.ascontiguousarray(w), W, phase, state.coef, state.n_blocks_used,
            task.block_start, float(state.tau), gammas, params, kind=fmap.nonlinearity)
        return OneClassDelta(decay=0.0, weight=float(n), count=1,
                             block_ids=np.zeros(0, np.int64), coefs=empty, dense=local,
                             max_steps=m, n_samples=n, block_end=int(block_end),
                             n_skipped=n_skipped, loss_sum=float(loss_sum),
                             loss_weight=float(loss_weight), tau_weighted=float(n) * tau,
                             tau_shift=tau - float(state.tau))

    def chunk_step(self, state: OneClassState, batch: dict, task) -> OneClassDelta:
        """The local steps over one task's rows: ``batch["X"]`` and, when given,
        ``batch["sample_weight"]`` (no targets)."""
        with single_threaded_blas():
            return self._chunk_step(state, batch["X"], None, batch.get("sample_weight"),
                                    task)

    def combine(self, a: OneClassDelta, b: OneClassDelta) -> OneClassDelta:
        """DSG's combination of the models (:meth:`DSGAlgorithm.combine`) and of the
        offsets: their changes added (summed form), or their row-weighted sums added."""
        both = super().combine(a, b)
        return _as_one_class(both, tau_weighted=a.tau_weighted + b.tau_weighted,
                             tau_shift=a.tau_shift + b.tau_shift)

    def apply(self, state: OneClassState, delta: OneClassDelta, info=None) -> OneClassState:
        """DSG's next model, and the next offset: ``tau + mix * tau_shift`` (summed form),
        ``tau_weighted / weight`` otherwise (the round's offset when no task trained); the
        decision offset set after a fit is dropped (the model changed)."""
        nxt = super().apply(state, delta, info)
        if delta.summed:
            tau = float(state.tau) + delta.mix * delta.tau_shift
        elif delta.weight > 0:
            tau = delta.tau_weighted / delta.weight
        else:
            tau = float(state.tau)
        return replace(nxt, tau=tau, offset=None)


# ---------------------------------------------------------------------------------------
# registration: the contract suite's problem and the sequential reference
# ---------------------------------------------------------------------------------------
def state_arrays(state: OneClassState) -> dict:
    """The arrays that make a one-class state: the model, the offset and the counters (as
    0-d arrays)."""
    return {"coef": state.coef, "tau": np.asarray(state.tau),
            "n_iter": np.asarray(state.n_iter),
            "n_blocks_seen": np.asarray(state.n_blocks_seen),
            "n_samples_seen": np.asarray(state.n_samples_seen),
            "loss_sum": np.asarray(state.loss_sum),
            "loss_weight": np.asarray(state.loss_weight)}


def make_case(seed: int = 0, *, shuffle: bool = False):
    """A small weighted novelty problem: 5 chunks of 20 rows (the last 13) of a two-blob
    mixture, batches of 4, 8 blocks of 8 features, so one pass crosses from the growth into
    the full phase, with rows on both sides of ``tau`` in most steps."""
    from ooc_kernels.families._spec import AlgorithmCase

    rng = np.random.default_rng(seed)
    sizes = (20, 20, 20, 20, 13)
    centers = np.array([[-1.5, 0.0, 0.5], [1.5, 1.0, -0.5]])
    X = centers[rng.integers(0, 2, sum(sizes))] + 0.7 * rng.normal(size=(sum(sizes), 3))
    config = DSGConfig(loss_id=-1, target="novelty", n_outputs=1, n_features_in=3,
                       block_size=8, n_blocks=8, bandwidth=1.2, feature_seed=seed + 17,
                       alpha=0.3, batch_size=4, learning_rate="inverse", eta0=2.0, t0=4.0,
                       dtype="float64", shuffle=shuffle, x_shift=(0.1, -0.2, 0.3),
                       x_scale=(1.5, 0.8, 1.1), weight_scale=0.9)
    w = rng.uniform(0.5, 1.5, size=len(X))
    bounds = np.cumsum((0,) + sizes)
    chunks = [{"X": X[a:b], "sample_weight": w[a:b]} for a, b in zip(bounds[:-1], bounds[1:])]
    return AlgorithmCase(algorithm=OneClassAlgorithm(config),
                         state=init_one_class_state(config), chunks=chunks,
                         dims={"X": ("sample", "feature"), "sample_weight": ("sample",)},
                         seed=seed + 3)


def _reference(case):
    from ooc_kernels.families.dsg.reference_one_class import sequential_one_class

    return sequential_one_class(case.algorithm.config, case.state, case.chunks)


def _register():
    from ooc_kernels.families._spec import SolverSpec, register_solver

    register_solver(SolverSpec(
        name="dsg_one_class", algorithm=OneClassAlgorithm, state_arrays=state_arrays,
        make_case=make_case, reference=_reference,
        description="one-class novelty detection by doubly stochastic functional gradients "
                    "(Dai et al. 2014, section 4)"))


_register()
