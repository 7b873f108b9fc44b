"""DSPDC on data held in memory: the same rounds, without Dask and without the duals store.

When a fit's input is already in memory (a NumPy array or a pandas DataFrame) and runs on a
local scheduler with one task per round, the out-of-core machinery has nothing to save: the
rows need not be read chunk by chunk, and the duals need not go through the work store on
disk.  :func:`direct_runner` then runs the rounds in the calling thread:

* the solver's rows (float64, standardized, with the intercept's column) are built once per
  fit (:class:`MemoryRows`), not once per task and epoch;
* the duals live in one in-memory array per chunk (:class:`MemoryDuals`);
* every round is the out-of-core round itself: the same chunk plan
  (:func:`~ooc_kernels.parallel.plan.plan_epoch`), the same task
  (:meth:`DSPDCAlgorithm.chunk_step`, with the same uniforms) and the same ``apply``, so the
  iterates are those of the out-of-core path bit for bit;
* the primal value of a gap evaluation is one matrix-vector product with the rows held
  (:meth:`MemoryRows.primal_loss`) instead of a Dask pass over the raw chunks.

Checkpoints and resumed fits keep the out-of-core path (their duals must be in the work
store); ``max_time``, ``gap_every``, ``history_``, ``gap_history_``, the
``ConvergenceWarning`` and the adaptive steps behave as there (the same callbacks run
after every round and epoch).

Examples
--------
>>> import numpy as np
>>> import ooc_kernels as ok
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(300, 5)); y = X @ np.arange(5.0) + 0.1 * rng.normal(size=300)
>>> reg = ok.DSPDCRegressor(alpha=1e-3, tol=1e-6, progress=False).fit(X, y)  # in memory
>>> reg.stop_reason_[:4], reg.gap_history_[-1]["relative_gap"] <= 1e-6
('tol:', True)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ooc_kernels._blas import single_threaded_blas
from ooc_kernels._chunk_store import INITIAL
from ooc_kernels._progress import logs_instead, progress_bar
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dspdc._memory_task import MemoryTasks, fused_applies
from ooc_kernels.families.dspdc._scaling import model_rows
from ooc_kernels.families.dspdc.solver import DSPDCAlgorithm, DSPDCConfig, rows_loss
from ooc_kernels.parallel.engine import RunResult, _epoch_lines, end_round, make_round_info
from ooc_kernels.parallel.plan import plan_epoch

__all__ = ["DIRECT_BYTES", "MemoryDuals", "MemoryRows", "direct_applies", "direct_runner",
           "held_in_memory"]

#: The most memory the solver's float64 rows may take for the in-memory path (beyond it,
#: the rows are rebuilt per task as out of core).
DIRECT_BYTES = 1 << 30


def held_in_memory(*arrays) -> bool:
    """True when every given input (None: absent) is a NumPy array, a pandas object, a
    Python list or tuple, or another array-like (``__array__``) that is not a lazy
    collection (Dask, xarray), a reader (``read()``) or factorized data: data the process
    holds whole, which the estimators' validation converts to a NumPy array, not a lazy
    collection or a store read chunk by chunk.

    Examples
    --------
    >>> import dask.array as da
    >>> held_in_memory(np.zeros((3, 2)), np.zeros(3), None), held_in_memory(da.zeros(3))
    (True, False)
    """
    from ooc_kernels.data.factorized import Factorized
    from ooc_kernels.data.inputs import is_lazy_input

    def whole(a) -> bool:
        if a is None or isinstance(a, (np.ndarray, list, tuple)):
            return True
        if type(a).__module__.split(".")[0] == "pandas":
            return True
        return (hasattr(a, "__array__") and not isinstance(a, Factorized)
                and not is_lazy_input(a) and not callable(getattr(a, "read", None)))

    return all(whole(a) for a in arrays)


def direct_applies(config: DSPDCConfig, data, state, *, tasks_per_round: int, client,
                   writer, start: tuple[int, int]) -> bool:
    """Whether the rounds may run in memory: dense rows (not factorized), one task per round,
    no distributed Client, no checkpoint, a fresh start (every chunk's duals at their
    initial zeros) and rows of at most :data:`DIRECT_BYTES` as float64."""
    width = config.n_features
    return (not config.factorized and tasks_per_round == 1 and client is None
            and writer is None and tuple(start) == (0, 0)
            and all(tuple(state.versions[c]) == INITIAL for c in range(data.n_chunks))
            and data.n_samples * width * 8 <= DIRECT_BYTES)


class MemoryDuals:
    """The duals of every chunk in memory, with the interface of the work store
    (:class:`~ooc_kernels._chunk_store.ChunkStore`) that a task uses: ``read``, ``write``
    and ``prune``.  Only a chunk's latest version is held (a fit without checkpoints never
    reads an older one); reading another version is refused.

    Examples
    --------
    >>> duals = MemoryDuals()
    >>> duals.read("y", 0, INITIAL, n_rows=2).tolist()
    [0.0, 0.0]
    >>> duals.write("y", 0, (0, 0), np.array([1.0, 2.0]))
    >>> duals.read("y", 0, (0, 0), n_rows=2).tolist()
    [1.0, 2.0]
    """

    def __init__(self):
        self._held: dict[tuple[str, int], tuple[tuple[int, int], np.ndarray]] = {}

    def read(self, name: str, chunk: int, version, *, n_rows: int,
             dtype="float64") -> np.ndarray:
        if tuple(version) == INITIAL or int(n_rows) == 0:
            return np.zeros(int(n_rows), dtype=dtype)
        held = self._held.get((name, int(chunk)))
        if held is None or held[0] != tuple(version):
            raise ValidationError(
                f"the in-memory duals of chunk {chunk} are at version "
                f"{None if held is None else held[0]}, not {tuple(version)}: a round read "
                "duals that the previous rounds did not write; fit with a checkpoint (the "
                "out-of-core path) to read older versions."
            )
        return held[1]

    def write(self, name: str, chunk: int, version, array) -> None:
        self._held[(name, int(chunk))] = (tuple(version),
                                          np.array(array, dtype=np.float64, copy=True))

    def prune(self, name: str, keep, chunks=None) -> None:
        """Nothing to prune: only the latest version is held."""


@dataclass(frozen=True)
class _MemoryConfig(DSPDCConfig):
    """The configuration with its duals in memory (:attr:`store` is a
    :class:`MemoryDuals`)."""

    duals: Any = field(default=None, compare=False, repr=False)

    @property
    def store(self):
        return self.duals


class MemoryRows:
    """The solver's rows of the whole data, built once: float64, standardized, with the
    intercept's column (:func:`~ooc_kernels.families.dspdc._scaling.model_rows`), one array
    per chunk, with the chunks' other sample variables (``y``, ``sample_weight``).

    Parameters
    ----------
    config : DSPDCConfig
    data : ChunkedData
        In memory (:func:`held_in_memory`): its chunks are slices of the user's arrays.
    chunks : dict, optional
        ``data``'s chunks as NumPy arrays (:func:`~ooc_kernels.families.dspdc.
        _memory_inputs.memory_chunks`); None: read from ``data`` (a synchronous Dask
        compute of its slices).
    """

    def __init__(self, config: DSPDCConfig, data, chunks: dict | None = None):
        import dask

        self.width = int(config.n_features)
        self.blocks: list[np.ndarray] = []
        self.variables: dict[str, list[np.ndarray]] = {}
        bounds = np.concatenate([[0], np.cumsum(data.chunk_sizes)]).astype(np.int64)
        parts_of = data.delayed_chunks() if chunks is None else chunks
        for name, parts in parts_of.items():
            values = parts if chunks is not None else dask.compute(*parts, scheduler="sync")
            if name == "X":     # one array of every row; a chunk's rows are a view of it
                self.rows = np.empty((int(bounds[-1]), self.width))
                for lo, hi, block in zip(bounds[:-1], bounds[1:], values):
                    model_rows(config, block, out=self.rows[lo:hi])   # written in place
                self.blocks = [self.rows[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]
            else:
                self.variables[name] = [np.asarray(v) for v in values]
        self.whole = dict(data.delayed_whole())
        self._buffers: dict[int, np.ndarray] = {}
        #: The fused tasks (:mod:`~ooc_kernels.families.dspdc._memory_task`) when the
        #: configuration has one dual and every coordinate per iteration, else None.
        self.fused = None
        if fused_applies(config):
            self.fused = MemoryTasks(config, self.rows, data.chunk_sizes, self.variables)

    def batch(self, group: tuple[int, ...]) -> dict:
        """A task's input for ``group``: its rows (the chunks' blocks in the group's order,
        as the out-of-core task concatenates them) and its other sample variables.

        The rows of a group of several chunks are copied into a buffer kept for groups of
        that many rows (a task holds its rows only while it runs), so an epoch allocates
        nothing."""
        def joined(parts):
            return parts[0] if len(parts) == 1 else np.concatenate(parts)

        blocks = [self.blocks[c] for c in group]
        if len(blocks) == 1:
            out = {"X": blocks[0]}
        else:
            n_rows = sum(len(b) for b in blocks)
            buffer = self._buffers.get(n_rows)
            if buffer is None:
                buffer = self._buffers[n_rows] = np.empty((n_rows, self.width))
            out = {"X": np.concatenate(blocks, out=buffer)}
        for name, values in self.variables.items():
            out[name] = joined([values[c] for c in group])
        return {**out, **self.whole}

    def primal_loss(self, config: DSPDCConfig, x: np.ndarray) -> float:
        """``sum_i w_i phi_i(a_i^T x)`` over every row: a matrix-vector product with each
        chunk's rows held, summed chunk by chunk (as the out-of-core pass sums its chunks)."""
        from ooc_kernels.families.dspdc._local import encode_labels, row_weights

        if self.fused is not None:
            return self.fused.primal_loss(config, x)
        total = 0.0
        for k, rows in enumerate(self.blocks):   # a diverged x gives inf, checked by the caller
            b = encode_labels(config, self.variables["y"][k], (k,), (len(rows),))
            w = row_weights(config, _part(self.variables, "sample_weight", k), b,
                            (k,), (len(rows),))
            total += rows_loss(config, rows, None, x, b, w)
        return total


def _part(variables: dict, name: str, k: int):
    parts = variables.get(name)
    return None if parts is None else parts[k]


class _DirectAlgorithm(DSPDCAlgorithm):
    """The fit's algorithm with its duals in memory and its rows from :class:`MemoryRows`.

    Its configuration is the wrapped algorithm's, read at every use (the estimator shrinks
    the adaptive steps by replacing that configuration), with :class:`MemoryDuals` as the
    store."""

    def __init__(self, base: DSPDCAlgorithm, duals: MemoryDuals):
        self._base = base
        self._duals = duals
        self._wrapped: tuple = (None, None)
        self.V = base.V

    @property
    def config(self) -> DSPDCConfig:
        cfg = self._base.config
        if self._wrapped[0] is not cfg:
            fields = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
            self._wrapped = (cfg, _MemoryConfig(**fields, duals=self._duals))
        return self._wrapped[1]

    @config.setter
    def config(self, value: DSPDCConfig) -> None:
        self._base.config = value

    @property
    def stop_rule(self):
        """The wrapped algorithm's ``(tol, gap_every)``: a task certifies as its does."""
        return self._base.stop_rule

    def _rows(self, batch: dict):
        return batch["X"], None      # already the solver's rows (MemoryRows)


def direct_runner(rows: MemoryRows):
    """A drop-in for :func:`~ooc_kernels.parallel.engine.run_rounds` that runs the rounds
    in this thread on ``rows`` (one task per round, as :func:`direct_applies` requires)."""

    def run(algorithm, state, data, *, n_epochs: int, execution: str = "rounds",
            chunks_per_round: int = 1, seed: int = 0, shuffle: bool = True,
            shuffle_chunks: int = 1, start_epoch: int = 0, start_round: int = 0,
            scheduler=None, progress=None, desc: str = "fit", callback=None,
            epoch_callback=None) -> RunResult:
        if execution != "rounds" or chunks_per_round != 1:
            raise ValidationError(
                f"the in-memory DSPDC rounds run one task per round in the 'rounds' "
                f"execution; got execution={execution!r}, chunks_per_round="
                f"{chunks_per_round!r}: use the out-of-core path (run_rounds)."
            )
        from ooc_kernels.parallel.cluster import active_client

        if active_client(scheduler) is not None:
            raise ValidationError(
                "the in-memory DSPDC rounds run in this thread, not on a distributed "
                "Client: use the out-of-core path (run_rounds) with a Client."
            )
        direct = _DirectAlgorithm(algorithm, MemoryDuals())
        sizes = data.chunk_sizes
        with single_threaded_blas(), progress_bar(
                total=max(n_epochs - start_epoch, 0) * data.n_chunks, desc=desc,
                enabled=progress, unit="chunk") as bar:
            if logs_instead(progress, bar):
                callback = _epoch_lines(callback, desc, n_epochs, data.n_chunks, None)
            n_rounds = 0
            for epoch in range(start_epoch, n_epochs):
                plan = plan_epoch(data.n_chunks, chunks_per_round=1, seed=seed, epoch=epoch,
                                  shuffle=shuffle, shuffle_chunks=shuffle_chunks)
                for rnd in range(start_round if epoch == start_epoch else 0, len(plan)):
                    info = make_round_info(plan, epoch, rnd, sizes=sizes, seed=seed)
                    (task,) = direct.make_tasks(state, info)
                    if rows.fused is not None:     # m = 1, q = p: the fused task
                        delta = rows.fused.run(algorithm.config, state, task,
                                               certify=algorithm.certifies_start)
                    else:
                        delta = direct.chunk_step(state, rows.batch(info.groups[0]), task)
                    state = direct.apply(state, delta, info)
                    n_rounds += 1
                    bar.update(len(info.chunk_ids))
                    if end_round(state, info, last=rnd == len(plan) - 1,
                                 epoch_callback=epoch_callback, callback=callback):
                        return RunResult(state=state, epoch=epoch + 1, round=0,
                                         n_rounds=n_rounds, stopped=True)
            return RunResult(state=state, epoch=n_epochs, round=0,
                             n_rounds=n_rounds)

    return run
