"""The parameter and attribute sections shared by the docstrings of the DSPDC estimators
(:mod:`ooc_kernels.families.dspdc.estimators`)."""

_PARAMS_DOC = """alpha : float, default=1e-4
        Regularization strength (``lambda`` of the paper for ``l1_ratio=0``); must be > 0
        with ``l1_ratio < 1`` (the theorems need a strongly convex regularizer).
    l1_ratio : float in [0, 1), default=0.0
        Elastic-net mixing: ``g(x) = alpha * (l1_ratio |x| + (1 - l1_ratio) / 2 x^2)``.
    fit_intercept : bool, default=True
        Add a constant column ``intercept_scaling`` to the data (regularized like the other
        coefficients, as liblinear does).  The squared loss is fit to the targets less
        their weighted mean (from the set-up's read), which the intercept gets back: with
        ``standardize=True`` the intercept is then free of the penalty, as in
        ``make_pipeline(StandardScaler(), Ridge())``, and a shift of ``y`` shifts the
        predictions and nothing else (with ``standardize=False`` too).
    intercept_scaling : float, default=1.0
        The value ``c`` of the constant column.  The classifiers' intercept is penalized
        through it (a larger ``c`` penalizes it less); with the squared loss and
        ``standardize=True`` the fit does not depend on it (up to rounding).
    standardize : bool, default=True
        Solve the problem on standardized columns ``(a_j - mean_j) / std_j`` (centred only
        with ``fit_intercept``; the moments, weighted as the fit weighs the rows, from one
        streaming pass), so the regularizer applies to the coefficients of the standardized
        columns, as in ``make_pipeline(StandardScaler(), model)``; ``coef_`` and
        ``intercept_`` are reported on the raw columns, and the duality gap certifies the
        standardized problem.  Columns in very different units (1e-3 next to 1e3) otherwise
        make the problem ill-conditioned and the solver slow.  ``False``: the regularizer
        applies to the raw coefficients (scikit-learn's convention).
    m : int, default=1
        Dual coordinates (rows) sampled per iteration.
    q : int or "auto", default="auto"
        Primal coordinates sampled per iteration; ``"auto"``: all of them (the SPDC-type
        setting, the fewest passes; ``docs/specs/dspdc.md`` §2.4).  ``q = 1`` with factorized data
        is the paper's Table 1 setting (cheaper iterations, more of them).
    local_passes : float or "auto", default="auto"
        Passes over a task's duals per read of its rows: a task runs ``local_passes * rows
        / m`` iterations.  ``"auto"``: 3 when the input is read from a store or a lazy
        collection (not held in memory), where an epoch's cost is mostly the read, and one
        group holds all the chunks or a task's group holds several chunks drawn anew every
        epoch (``shuffle=True``, more than one group, ``shuffle_chunks_ > 1``); else 1 (in
        memory, or a task that keeps the same part of the rows every epoch, where more
        passes do not pay or slow the fit down).  Where ``"auto"`` takes 3 and the loss is
        ``"squared"``, a task goes on passing over the rows it holds, up to 10 passes, while a
        pass still raises its subproblem's dual value by more than 2 % of the rise since the
        task started.  Where one task holds all the rows, ``"auto"`` takes at least
        ``ceil(128 * m / n_samples)`` passes, so that an epoch runs at least 128 iterations
        (a problem of a few rows).  The
        values used are ``local_passes_`` and ``max_local_passes_`` (``docs/dspdc.md``).
    Lambda : float or {"exact", "upper_bound", "heuristic"}, default="upper_bound"
        ``Lambda_{q,m}`` of the step sizes (``docs/specs/dspdc.md`` §2.3), from one streaming
        pass: exact where cheap, a safe upper bound, the paper's heuristic ``m q R^2 / p``
        (not guaranteed), or a given value.
    mode : {"gap", "distance"}, default="gap"
        ``theta`` of Theorem 2 (gap) or Theorem 1 (distance to the saddle point).
    steps : {"adaptive", "theorem"}, default="adaptive"
        ``"theorem"``: the step parameters of the theorems, safe for any data.
        ``"adaptive"``: those of a problem 100 (squared loss) or 30 (logistic, smoothed
        hinge) times more strongly convex (larger primal-dual coupling steps, as the strong
        convexity that the data add to ``alpha`` allows: Wang and Xiao 2017), with the mean
        squared norm of a standardized row in place of ``Lambda`` (the largest), brought
        one step towards the theorems' whenever the duality gap stops falling or, where one
        task holds all the rows, falls slower than the theorems promise for them; the gap
        certifies the result either way (``docs/dspdc.md``).
    sampling : {"auto", "uniform", "permutation"}, default="auto"
        How a task with ``m = 1`` picks its rows: ``"uniform"``, independently at random
        (the theorems' sampling); ``"permutation"``, every pass over the task's rows in a
        new random order (random reshuffling; ``m = 1`` only; with the pass rule of
        ``local_passes="auto"``, one permutation per pass), which reaches a given gap in
        fewer passes on the benchmarks, in memory and out of core (``docs/dspdc.md``);
        ``"auto"``: ``"permutation"`` when ``m = 1``, else ``"uniform"``.  A checkpoint
        resumes with the sampling its fit ran.  The gap certifies the result either way.
        The value used is ``sampling_``.
    theta, tau, sigma : float or None, default=None
        Manual overrides of the step parameters of every local problem.
    tol : float or None, default=1e-6
        Stop when the relative duality gap ``(P - D) / |P|`` is at most ``tol``.  A fit
        resumed from the checkpoint of a fit that stopped on ``tol`` goes on when its own
        ``tol`` is below the certified gap.
    max_iter : int, default=100
        Most epochs (passes over the duals).
    max_time : float or None, default=None
        Stop after this many seconds of this call (checked at every gap evaluation); a fit
        resumed from the checkpoint of a fit that stopped there goes on.
    gap_every : int, default=1
        Epochs between gap evaluations.  The gap of an epoch's end costs no pass of its
        own: the next epoch's tasks sum the losses of the rows they read at that iterate,
        and a fit that stops on it returns that iterate.  Only the last epoch (``max_iter``,
        ``max_time``) gets a streaming pass over the data for its own gap.
    work_dir : str, bytes, os.PathLike or None, default=None
        Folder in which every fit creates its own work store of the duals (one array per
        chunk, versioned), locked while the fit runs; None: ``PATH.work`` beside the
        checkpoint when there is one, else the system's temporary folder.  A store is
        removed when its fit ends, unless a checkpoint needs it.  Must be reachable from
        every worker.  Like ``scheduler``, it belongs to whoever runs the fit: never saved
        with the model (a loaded model has None; ``docs/security.md``).
"""


_ATTRIBUTES_DOC = """
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    n_iter_ : int
        Epochs run.  A fit that stops on ``tol`` returns the iterate of epoch
        ``n_iter_ - 1`` (the one its last gap certifies), whose gap the last epoch's tasks
        computed.
    stop_reason_ : str
        ``"tol"``, ``"max_iter"`` or ``"max_time"``, with the values.
    gap_history_ : list of dict
        One entry per gap evaluation: ``iterations``, ``passes``, ``seconds``, ``primal``,
        ``dual``, ``gap``, ``relative_gap``, ``step_boost`` (the strong convexity factor of
        the steps the epoch ran with), ``mean_lambda`` (whether they used the mean squared
        norm of a standardized row in place of ``Lambda``; ``step_boost`` 1 without it: the
        theorems' steps) and ``rate`` (the e-folds of the gap per pass that Theorem 2
        promises for those steps where one task holds all the rows, else None).
    duality_gap_ : float
        The last evaluated gap ``P(coef_) - D(y)`` (of the returned model).
    Lambda_ : float
        The scale constant ``Lambda`` of the step sizes.
    local_passes_ : float
        The ``local_passes`` the tasks ran with (``"auto"`` resolved): the passes per read
        every task runs.
    max_local_passes_ : float
        The most passes per read a task may run: ``local_passes_`` when the passes are
        fixed; with ``"auto"`` resolved to 3 (out of core) and the squared loss, 10, a task
        going on pass by pass while its passes still raise its subproblem's dual value
        (``docs/dspdc.md``).
    sampling_ : str
        The ``sampling`` the tasks ran with (``"auto"`` resolved).
    theta_, tau_, sigma_ : ndarray of shape (n_local_problems,)
        The step parameters the tasks ran with, one entry per kind of local problem the fit
        solved: a task's local problem depends on its rows ``local_rows_[i]`` and on the
        number of tasks ``local_tasks_[i]`` of its round (its strong convexity is
        ``alpha * (1 - l1_ratio) * n_samples / (local_rows_[i] * local_tasks_[i])``).
        One entry when every task has the same rows (one group of chunks, ``K = 1``).
    local_rows_, local_tasks_ : ndarray of int of shape (n_local_problems,)
        Sorted by rows, then tasks.
    n_features_in_ : int
    feature_coords_ : ndarray of shape (n_features_in,)
        The labels of the feature coordinate of an xarray ``fit`` input (a DataArray's
        second dimension, a Dataset's ``X`` variable's, the second dimension of a
        factorized input's DataArray ``V``), when it has them; a later input with labels
        must have these in this order (``X.sel({dim: model.feature_coords_})`` selects
        them), one without labels is read by position.  Not set otherwise.
"""


_BASE_DOC = """    chunks_per_round : int or "auto", default=1
        ``K``: chunks solved in parallel per round; their dual steps are added and their
        primal iterates averaged (``docs/algorithms/dspdc_rounds.md``).  ``K = 1`` is the
        sequential algorithm.  Results depend on ``K`` but not on the scheduler.
        ``"auto"``: one task per worker of a ``distributed.Client`` (the workers there
        when the fit starts), 1 on the local schedulers; the value used is
        ``chunks_per_round_``.  The default stays 1: a round's local solver runs on one
        thread, and every task past the first slows each pass's progress
        (``docs/scale_out.md``).
    chunk_size : int, default=10000
        Rows per chunk for in-memory inputs (Dask/Zarr inputs keep their chunks).
    shuffle : bool, default=True
        Visit the chunks in a new random order every epoch.
    shuffle_chunks : int or "auto", default="auto"
        Chunks one task solves together: their rows are one local problem, sampled as one.
        Larger groups converge faster (with all the rows in one group, a round is
        Algorithm 1 on the whole problem; ``docs/algorithms/dspdc_rounds.md`` has the
        measurements); ``"auto"``: one group of all the chunks when the rows are held in
        memory (NumPy or pandas, dense, ``chunks_per_round=1``, ``shuffle=True``, no
        ``checkpoint``), else the
        largest groups within 8 MiB of data per task that keep ``chunks_per_round`` tasks
        per round.
    random_state : int, RandomState instance or None, default=None
        Seeds the chunk order and every task's sampling of coordinates.
    scheduler : None, "sync", "threads", "processes", "tcp://..." or distributed.Client
        Where the chunk tasks run; ``None`` uses Dask's default (an active Client if any).
        Never saved with the model.
    progress : bool or None, default=None
        Show a progress bar (``None``: on a terminal or in a notebook).
"""
