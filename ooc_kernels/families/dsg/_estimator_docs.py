"""The parameter and attribute sections of the DSG classifier's and regressor's docstrings.

:mod:`ooc_kernels.families.dsg.estimators` assembles the two classes' docstrings from
these; the Gaussian process regressor (:mod:`ooc_kernels.families.dsg.gaussian_process`)
reuses them without ``alpha``.
"""

from ooc_kernels.estimators._hyperparams import BASE_PARAMS_DOC, STOPPING_PARAMS_DOC
from ooc_kernels.estimators._stopping import LOSS_SCALED_TOL_DOC, TOL_DOC
from ooc_kernels.families.dsg._common import KERNEL_PARAMS_DOC

_PARAMS_DOC = """
""" + KERNEL_PARAMS_DOC + """    bandwidth : float, array of shape (n_features_in,), "auto", "ard" or "median", default="auto"
        Kernel bandwidth sigma (in the units the model sees: standardized with
        ``standardize``); an array gives every input its own width ``s_i``, the kernel
        ``exp(-sum_i (x_i - x'_i)^2 / (2 s_i^2))`` (positive and finite, one per input).
        ``"auto"``: short validation runs on up to 3000 sampled rows pick among 0.125,
        0.25, 0.5, 1 and 2 times the median pairwise distance; on data sets of at most 1000 rows, generalized cross-validation of kernel ridge
        regression on every row picks one width instead (see
        :mod:`ooc_kernels.families.dsg._bandwidth`; the scores are in
        ``bandwidth_scores_``).  With the Gaussian kernel, 2 inputs or more and at least 200
        sampled rows, ``"auto"`` first compares one width with the per-input widths of a
        quick ARD search by the leave-one-out accuracy (``R^2`` for regression) of exact
        kernel ridge regression on up to 500 rows, and fits with ``"ard"``'s widths when
        they score more than 0.015 higher
        (:func:`~ooc_kernels.families.dsg._ard.auto_ard`).  ``"ard"``: per-input widths chosen by automatic relevance
        determination (ARD: gradient steps on a held-out ridge error,
        :mod:`ooc_kernels.features.ard`), ARD's relative widths times the overall width ``"auto"``'s rule picks for them.  ``"median"``:
        ``median_multiplier`` times the median pairwise distance of up to 2000 rows drawn
        from up to 8 random chunks.  ``docs/defaults.md`` says what each costs.
    median_multiplier : float, default=1.0
        Used by ``bandwidth="median"``.
    standardize : bool, default=True
        The model sees every feature centred and scaled to unit variance (means and
        standard deviations of the sampled rows, folded into the random features: no extra
        pass, no copy), and a regressor learns standardized targets and predicts in the
        original units.  The Gaussian kernel then weighs the features alike whatever their
        units.
    dtype : {"auto", "float32", "float64"}, default="auto"
        Precision of the random features and their products (the coefficients are float64
        either way, see ``docs/algorithms/dsg_kernels.md``).  float32 is the fast path
        (a vectorised cosine, about 5 times the float64 speed); inputs of another dtype are
        converted chunk by chunk.  ``"auto"``: float64 when the whole data set is one batch
        (one chunk of at most ``batch_size`` rows: speed does not matter there, and the
        result then depends on the rows and weights only, not on their order, to 1e-12),
        or when an input of the set-up's sample lies more than 1e6 of its standard
        deviations from 0 (float32 would round its rows together; ``docs/defaults.md``,
        "Precision"), float32 otherwise.
    alpha : float or "auto", default="auto"
        Regularization strength (the paper's nu): every step multiplies the existing
        coefficients by ``1 - gamma_t * alpha``.  ``"auto"``: ``1 / n_samples``, or
        ``0.1 / n_samples`` when the set-up's scores (``bandwidth="auto"``) rate it more
        than 0.005 higher (``setup_scores_``).
    n_features : int or "auto", default=4096
        How many random features the model may hold (a multiple of ``block_size``).  Each
        step adds a block of ``block_size`` new features (Algorithm 1) until the model holds
        ``n_features``; from then on each step estimates the kernel with all the blocks and
        updates every coefficient, so the prediction cost stops growing.  ``"auto"``: 4096
        up to 50,000 training rows (with ``partial_fit``, the first call's),
        ``4096 sqrt(n / 50,000)`` above (whole blocks, at most 16,384; ``n_features_``); with ``bandwidth="auto"`` on more than 50,000 rows it
        also narrows the trials' width and prefers ``alpha / 10``
        (:mod:`~ooc_kernels.families.dsg._large_data`, ``docs/defaults.md``, "Many rows").
    block_size : int, default=256
        Random features per block (one block per mini-batch step).
    batch_size : int, default=256
        Samples per step.  The huber, epsilon-insensitive and quantile losses on 64 to
        ``batch_size`` rows take ``ceil(n / 8)`` rows (at least 16), so that an epoch is
        eight steps rather than one
        (:func:`~ooc_kernels.families.dsg._schedule.robust_batch_size`).
    learning_rate : {"optimal", "inverse", "constant"}, default="optimal"
        ``"optimal"``: ``gamma_t = theta / (t + t0)`` with ``theta = 1 / alpha`` (``theta
        nu = 1``: the range of the paper's Theorems 4-5 and Corollary 13) and ``t0`` such
        that the first step is ``eta0``.  ``"inverse"``: ``gamma_t = eta0 / (t + t0)``.
        ``"constant"``: ``gamma_t = eta0``.  ``t`` counts steps; ``gamma_t`` multiplies the
        gradient averaged over the batch.  See :mod:`ooc_kernels.families.dsg._schedule`.
    eta0 : float or "auto", default="auto"
        ``"optimal"``/``"constant"``: the first (constant) step, ``"auto"`` the largest
        stable one for the loss and the data (``1 / (L lambda_max)``, ``lambda_max`` the
        largest eigenvalue of the operator a growth step applies to its batch, measured on
        the fit's first feature blocks and sampled batches); with ``"optimal"``, 16 times
        that for the logistic and softmax losses on data of more than one batch and at most
        5,000 rows (:func:`~ooc_kernels.families.dsg._schedule.small_data_step_factor`).
        ``"inverse"``: ``theta`` (a number; a :class:`~ooc_kernels.exceptions.StepSizeWarning`
        says when ``eta0 * alpha`` is outside the theorems' range).
    t0 : float or "auto", default="auto"
        Offset of ``"inverse"`` (``"auto"``: the first step is the stable one); with
        ``"optimal"`` it follows from ``eta0``.
    average : bool, int or "auto", default="auto"
        Predict with the averaged iterate (Polyak-Ruppert; with ``theta nu = 1`` the paper's
        Corollary 13): the mean of the models after every step (``True``), or (an int)
        from the step whose batch holds sample ``average + 1`` on (step
        ``average // batch_size + 1``; after ``average`` samples when it is a multiple of
        ``batch_size``).  ``"auto"``: for the huber, epsilon-insensitive and quantile
        losses (a derivative that is not Lipschitz, or does not shrink on outliers: their
        last iterate stays noisy) the mean from one epoch after the first epoch the
        stopping rule counts as no gain, decided by the fit and saved with it (with
        ``tol=None`` or in ``partial_fit``, from the call's first step); with
        ``n_features="auto"`` on more than 50,000 rows, the mean of the iterates after 8
        epochs for the logistic and softmax losses; ``False`` otherwise (measured in
        ``docs/machines/regression.md`` and ``docs/defaults.md``, "Many rows").
""" + STOPPING_PARAMS_DOC + BASE_PARAMS_DOC

#: The classifier's and the regressor's ``standardize`` (``"auto"``).
_BOOL_DOC = """    standardize : bool, default=True
        The model sees every feature centred and scaled to unit variance (means and
        standard deviations of the sampled rows, folded into the random features: no extra
        pass, no copy), and a regressor learns standardized targets and predicts in the
        original units.  The Gaussian kernel then weighs the features alike whatever their
        units.
"""
_STANDARDIZE_AUTO_DOC = _PARAMS_DOC.replace(_BOOL_DOC, """    standardize : bool or "auto", default="auto"
        ``True``: the model sees every feature centred and scaled to unit variance (means
        and standard deviations of the sampled rows, folded into the random features: no
        extra pass, no copy), and a regressor learns standardized targets and predicts in
        the original units.  The Gaussian kernel then weighs the features alike whatever
        their units.  ``"auto"``: the same, except that when the bandwidth trials run
        (``bandwidth="auto"`` on more than 1,000 rows) and the features' standard
        deviations differ by more than a factor 2, the trials also try one common scale
        for every feature (the root mean square of the standard deviations: features in
        one unit, such as pixels, keep their relative spread) and keep it when it scores
        more than 0.005 higher (``setup_scores_``); with a kernel of non-negative inputs
        (``chi2``, ``hellinger``, ``intersection``, ``js``), the raw features (centering
        would make some negative).  ``False``: the raw features.
""")

#: The classifier's parameters: ``n_features="auto"`` by default.
_CLASSIFIER_DOC = _STANDARDIZE_AUTO_DOC.replace(
    '    n_features : int or "auto", default=4096\n',
    '    n_features : int or "auto", default="auto"\n').replace(TOL_DOC, LOSS_SCALED_TOL_DOC)

_ATTRIBUTES_DOC = """
    n_features_ : int
        The random features the model holds (``n_features`` resolved).
    coef_ : ndarray of shape (n_blocks_used, block_size, n_outputs)
        The coefficients that predict (the averaged iterate with ``average``).
    bandwidth_ : float or ndarray of shape (n_features_in,)
        The width used: one number, or one per input (an array ``bandwidth``, ``"ard"``,
        or ``"auto"`` when it takes per-input widths), in standardized units.
    bandwidth_scores_ : dict or None
        With ``bandwidth="auto"`` or ``"ard"``: ``{multiple of the median distance:
        score}``, the validation score of each trial, or for data sets of at most 1000 rows the
        generalized cross-validation R^2 of kernel ridge regression on every row.
    setup_scores_ : dict or None
        When the set-up also tried a common scale (``standardize="auto"``) or ``alpha /
        10`` (``alpha="auto"``): ``{(scaling, alpha factor): validation or leave-one-out
        score}``, ``scaling`` ``"per-input"`` or ``"common"``, at the chosen multiple of the
        median distance; None otherwise.
    dtype_ : str
        The precision used (``dtype`` resolved).
    feature_seed_ : int
        Seed from which every random-feature block is regenerated.
    alpha_, eta0_, t0_ : float
        The schedule used: ``gamma_t = eta0_ / (t + t0_)`` (or ``eta0_``), regularization
        ``alpha_``.
    n_iter_ : int
        Epochs run.
    t_ : int
        Steps taken so far (the schedule's ``t``).
    history_ : list of dict
        Per epoch: ``loss`` (progressive-validation loss), ``validation_score`` (with
        ``early_stopping``), ``seconds``, ``step_size``.
    stop_reason_ : str
        Why the last ``fit`` stopped.
    n_blocks_seen_ : int
    n_samples_seen_ : int
        Row visits: every epoch adds the rows it trained on (``max_iter`` epochs over
        ``n`` rows make ``max_iter * n``).
    n_samples_skipped_ : int
        Rows left out by ``on_invalid="skip"``, each counted once: the invalid rows of one
        pass over the data (of the last epoch of ``fit``, of the data of the last
        ``partial_fit`` call).
    n_features_in_ : int
    feature_coords_ : ndarray of shape (n_features_in,)
        The labels of the feature coordinate of an xarray ``fit`` input (a DataArray's
        second dimension, a Dataset's ``X`` variable's), when it has them; a later input
        with labels must have these in this order (``X.sel({dim: model.feature_coords_})``
        selects them), one without labels is read by position.  Not set otherwise.
    shuffle_chunks_ : int
        Chunks whose rows one task mixed (the resolved ``shuffle_chunks``).
"""
