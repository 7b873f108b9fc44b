"""The hyperparameters every family shares: their constraints and their numpydoc.

A family's ``_parameter_constraints`` starts from :data:`BASE_CONSTRAINTS` (a family that
runs in the ``"sequential"`` execution mode starts from :data:`SEQUENTIAL_CONSTRAINTS`,
which has no ``chunks_per_round``, ``shuffle`` or ``shuffle_chunks``) and adds
:data:`STOPPING_CONSTRAINTS` when it stops like scikit-learn's SGD.

Examples
--------
>>> from ooc_kernels.estimators._hyperparams import BASE_CONSTRAINTS, SEQUENTIAL_CONSTRAINTS
>>> sorted(set(BASE_CONSTRAINTS) - set(SEQUENTIAL_CONSTRAINTS))
['chunks_per_round', 'shuffle', 'shuffle_chunks']
"""

from __future__ import annotations

from numbers import Integral, Real

from ooc_kernels.estimators._constraints import (RANDOM_STATE, Interval, SchedulerSpec,
                                                 StrOptions)

__all__ = ["BASE_CONSTRAINTS", "BASE_PARAMS_DOC", "ORDER_PARAMS", "SEQUENTIAL_CONSTRAINTS",
           "SHUFFLE_BYTES", "STOPPING_CONSTRAINTS", "STOPPING_PARAMS_DOC", "TOL_CONSTRAINT"]

#: numpydoc of the stopping hyperparameters (families that declare them append it).
STOPPING_PARAMS_DOC = """    max_iter : int, default=1000
        Most passes over the data (epochs) in :meth:`fit`.
    tol : float or None, default=1e-3
        Stop when an epoch's loss (progressive-validation loss, or minus the validation
        score with ``early_stopping``) improves by less than ``tol`` on the best so far, for
        ``n_iter_no_change`` epochs in a row.  None: always run ``max_iter`` epochs.  A fit
        with a ``tol`` that reaches ``max_iter`` emits scikit-learn's ``ConvergenceWarning``.
    n_iter_no_change : int, default=5
    early_stopping : bool, default=False
        Hold out whole chunks (``validation_fraction`` of them, at least one) and stop on
        their score instead of the training loss.  In-memory inputs are cut into at least
        ``1 / validation_fraction`` chunks for it.
    validation_fraction : float, default=0.1
    warm_start : bool, default=False
        A new :meth:`fit` continues from the current model for ``max_iter`` more epochs
        (same data shape, classes and random features) instead of starting over.  The
        model's hyperparameters must be those it was fitted with: only how long, where
        and how the fit runs may change (``max_iter``, ``tol``, ``n_jobs``,
        ``scheduler``, ``chunk_size`` ..., and DSG's ``update``, which switches mode); another
        changed one raises ``ValidationError`` (so does ``partial_fit``, and ``save``).
    verbose : int, default=0
        Print each epoch's loss, validation score and time.
"""

#: ``shuffle_chunks="auto"``: the X bytes one task may gather to mix rows across chunks.
SHUFFLE_BYTES = 8 * 2**20

#: Constraints of the hyperparameters every family shares.
BASE_CONSTRAINTS: dict = {
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "chunks_per_round": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "chunk_size": [Interval(Integral, 1, None, closed="left")],
    "shuffle": ["boolean"],
    "shuffle_chunks": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
    "on_invalid": [StrOptions({"error", "skip"})],
    "random_state": RANDOM_STATE,
    "scheduler": [None, SchedulerSpec()],
    "progress": ["boolean", None],
}

#: Constraint of ``tol`` (a non-negative float, or None to run ``max_iter`` passes): the
#: SGD stopping rule's, DSG density ratio's and DSPDC's duality-gap ``tol`` alike.
TOL_CONSTRAINT: list = [Interval(Real, 0, None, closed="left"), None]

#: Constraints of the stopping rule, warm start and verbosity (scikit-learn's SGD names).
STOPPING_CONSTRAINTS: dict = {
    "tol": TOL_CONSTRAINT,
    "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
    "early_stopping": ["boolean"],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
    "warm_start": ["boolean"],
    "verbose": ["verbose"],
}


#: numpydoc of the shared hyperparameters, appended to every family's parameter list.
BASE_PARAMS_DOC = """    chunks_per_round : int or "auto", default="auto"
        ``K``: tasks (groups of chunks) processed in parallel per round; their local models
        are combined, weighted by the rows each trained on.  ``K = 1`` is the sequential
        algorithm.  Results depend on ``K`` but not on the scheduler.  ``"auto"``: one task
        per worker of a ``distributed.Client`` (the workers there when the fit starts),
        1 on the local schedulers (sync, threads, processes).  The value used is
        ``chunks_per_round_``; checkpoints record it, so a resumed fit keeps it.
    chunk_size : int, default=10000
        Rows per chunk for in-memory inputs (Dask/Zarr inputs keep their chunks).
    shuffle : bool, default=True
        Visit the rows in a new random order every epoch: the chunks are permuted and cut
        into groups of ``shuffle_chunks`` chunks; a task reads one group and visits its rows
        in one random order, so rows of different chunks are mixed (a store sorted by label,
        time or source is not seen in that order).  ``False``: the rows in storage order.
    shuffle_chunks : int or "auto", default="auto"
        Chunks whose rows one task mixes (memory: ``chunks_per_round * shuffle_chunks``
        chunks, twice that while a group is gathered).  Groups hold at most that many
        chunks and are balanced so that every round has ``chunks_per_round`` tasks.
        ``"auto"``: the largest groups that fit in 8 MiB of ``X`` per task while every round
        keeps its ``K`` tasks (fewest rounds); 1 without ``shuffle``.  The value used is
        ``shuffle_chunks_``.
    on_invalid : {"error", "skip"}, default="error"
        Rows with NaN or inf in ``X`` (or in ``y`` for regression): ``"error"`` stops the fit
        with the chunk and row; ``"skip"`` leaves them out, for NumPy and Dask inputs
        alike, and counts them in ``n_samples_skipped_``: the invalid rows of one pass over
        the data, each counted once however many epochs visit it.
    random_state : int, RandomState instance or None, default=None
        Seeds the model's random numbers, the chunk order and the row order.
    scheduler : None, "sync", "threads", "processes", "tcp://..." or distributed.Client
        Where the chunk tasks run; ``None`` uses Dask's default (an active Client if any).
        An address is connected for the duration of each ``fit``/``score`` and closed
        after.  Never saved with the model.
    progress : bool or None, default=None
        Show a progress bar (``None``: on a terminal or in a notebook).
"""


#: The hyperparameters that set the chunk order and the rounds (execution mode "rounds").
ORDER_PARAMS = ("chunks_per_round", "shuffle", "shuffle_chunks")

#: Constraints of the shared hyperparameters of a family in the "sequential" execution mode
#: (chunks once per epoch in storage order, one task a round): no order parameters.
SEQUENTIAL_CONSTRAINTS: dict = {k: v for k, v in BASE_CONSTRAINTS.items()
                                if k not in ORDER_PARAMS}
