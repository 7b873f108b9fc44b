"""Multi-task large-margin nearest neighbours (MT-LMNN), fitted by DSPDC (Algorithm 3).

:class:`MultiTaskLMNN` learns one Mahalanobis metric per task, ``X_j + X_0`` with ``X_0``
shared by all tasks (Parameswaran & Weinberger; the DSPDC formulation of Yu, Lin, Yang,
section 5.3, ``docs/specs/dspdc.md`` §4.3), and classifies a row of task ``j`` by a majority vote
of its ``n_neighbors`` nearest training rows of task ``j`` under that metric.  The solver is
:func:`ooc_kernels.families.dspdc.in_memory.mtlmnn.mtlmnn_dspdc`: it updates only ``q`` of the ``p + 1``
metrics (one eigendecomposition each) per iteration.

This is an **in-memory** estimator: it is not in the chunked-estimator registry
(:mod:`ooc_kernels.estimators._registry`), does not read Zarr stores and is not saved by
:func:`ooc_kernels.load`; pickle it.

Examples
--------
>>> from ooc_kernels.data.matrix_data import multitask_classes
>>> from ooc_kernels.families.dspdc.mtlmnn import MultiTaskLMNN
>>> X, y, task = multitask_classes(2, 40, 5, 2, seed=0)
>>> est = MultiTaskLMNN(random_state=0).fit(X, y, task=task)
>>> est.metrics_.shape, est.gap_history_[-1]["relative_gap"] <= est.tol
((2, 5, 5), True)
>>> est.predict(X[:3], task=task[:3]).shape
(3,)
>>> est.transform(X[:3], task=task[:3]).shape
(3, 5)

Without ``task`` every row belongs to one task (single-task LMNN, metric ``X_1 + X_0``):

>>> MultiTaskLMNN(random_state=0).fit(X, y).components_.shape
(1, 5, 5)
"""

from __future__ import annotations

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import (BaseEstimator, ClassifierMixin, ClassNamePrefixFeaturesOutMixin,
                          TransformerMixin)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, check_random_state, validate_data

from ooc_kernels._moments import weighted_moments
from ooc_kernels.estimators._constraints import (RANDOM_STATE, Interval, StrOptions,
                                                 validate_params)
from ooc_kernels.estimators._feature_coords import (check_feature_coords,
                                                    record_feature_coords)
from ooc_kernels.estimators.base import sklearn_validated
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dspdc.in_memory.mtlmnn import build_triplets, mtlmnn_dspdc

__all__ = ["MultiTaskLMNN"]


class MultiTaskLMNN(ClassNamePrefixFeaturesOutMixin, ClassifierMixin, TransformerMixin,
                    BaseEstimator):
    """Multi-task LMNN: metrics ``X_j + X_0`` per task, k-NN classification under them.

    The fit solves (35) of Yu, Lin, Yang with DSPDC (Algorithm 3): triplets ``(u, v, w)``
    per task (``v`` among the ``n_neighbors`` nearest same-label points of ``u``, ``w`` the
    nearest point with another label, Euclidean in the standardized input space), the
    smoothed hinge on ``d^2(u, w) - d^2(u, v)``, the target distances as a linear term and
    Frobenius regularizers ``lambda0/2 ||X_0 - I||^2`` and ``lambda_task/2 ||X_j||^2``.

    The estimator follows scikit-learn's conventions (and metric-learn's for the learned
    metric): ``fit(X, y)``, ``predict(X)``, ``score(X, y)``, ``transform(X)`` into the space
    where the metric is Euclidean, ``components_`` and ``metrics_`` as fitted attributes.
    The task of every row is the keyword ``task=`` of each method (not a column of ``X``,
    not ``groups=``: it is needed to predict, and ``groups`` means cross-validation groups
    to scikit-learn).  Task values are integers or strings; ``predict``, ``transform``
    and ``score`` accept only tasks seen in ``fit``.  Without ``task``, ``fit`` puts every
    row in one task (single-task LMNN with the metric ``X_1 + X_0``), and the other methods
    may omit it only when the model has a single task.

    In-memory: not in the chunked-estimator registry (see the module docstring).

    The defaults were measured against Euclidean 3-NN on scikit-learn's iris, wine, breast
    cancer and digits data and on a two-task set, three stratified splits each
    (``benchmarks/mtlmnn_defaults.py``; the table is in ``docs/dspdc_blocks.md``).  The
    per-column scaling carries the wine data (column means from 0.4 to 750) from 0.76
    held-out accuracy with one divisor for all columns to 0.98, and the breast cancer
    data from 0.92 to 0.945 (3-NN: 0.93 on the raw columns, 0.957 after
    ``StandardScaler``); on the digits 3-NN stays ahead (0.983).  ``tol=1e-3`` scored as
    well as ``1e-4`` and ``1e-5`` on the iris, wine and two-task sets.

    Parameters
    ----------
    n_neighbors : int, default=3
        ``l``: targets per point, and the neighbours that vote in ``predict``.
    lambda0 : float, default=0.01
        Weight of the shared metric's regularizer ``||X_0 - I||_F^2 / 2``.
    lambda_task : float, default=0.1
        Weight of each task metric's regularizer ``||X_j||_F^2 / 2``.
    m : int or None, default=None
        Triplets (dual variables) per iteration; ``None``: ``ceil(n_triplets / 10)``
        (capped at the number of triplets).
    q : int or None, default=None
        Metrics (of ``n_tasks + 1``) updated per iteration; ``None``:
        ``ceil((n_tasks + 1) / 5)``.
    tol : float, default=1e-3
        Stop when the relative duality gap ``(P - D) / |P|`` of (35) is at most ``tol``
        (the definition of the DSPDC family's other estimators): a bound on the primal
        value's relative distance to the optimum, whatever the units of ``X`` and the
        number of triplets.
    max_iter : int, default=100_000
        Iterations at most.
    Lambda : {"upper_bound", "heuristic"} or float, default="upper_bound"
        The block scale constant (:func:`ooc_kernels.families.dspdc.in_memory.mtlmnn.mtlmnn_lambda`).
    standardize : bool or "scalar", default=True
        ``True``: divide every column of ``X`` by its standard deviation on the training
        rows (a constant column by 1), as ``StandardScaler`` does (distances do not depend
        on the shift), before building the triplets: the triplets and the starting metric
        ``X_0 = I`` then weigh every feature alike, and ``lambda0`` and ``lambda_task``
        do not depend on the units of ``X``.  ``"scalar"``: divide all columns by one
        number, the root mean column variance, for columns that share their units (pixel
        intensities: the digits data converge faster this way, see ``docs/dspdc_blocks.md``).
        ``False``: the columns as they are.  ``metrics_`` are reported for the input's
        units, so ``predict`` and ``transform`` apply the scaling.
    max_time : float or None, default=None
        Seconds at most for the solver.
    random_state : int, RandomState instance or None, default=None
        Seeds the sampling of the solver.

    Attributes
    ----------
    metrics_ : ndarray (n_tasks, d, d)
        ``X_j + X_0`` per task (in the order of ``tasks_``), for the input's units:
        ``d^2(a, b) = (a - b)^T metrics_[j] (a - b)``.
    components_ : ndarray (n_tasks, d, d)
        ``L_j`` with ``L_j^T L_j = metrics_[j]``: ``transform`` maps a row ``x`` of task
        ``j`` to ``L_j x`` (metric-learn's convention), where the Euclidean distance is the
        learned one.
    shared_metric_ : ndarray (d, d)
        ``X_0`` (input units).
    task_metrics_ : ndarray (n_tasks, d, d)
        ``X_j`` without ``X_0`` (input units).
    gap_history_ : list of dict
        Per gap check: ``iteration``, ``passes``, ``time``, ``primal``, ``dual``, ``gap``,
        ``relative_gap`` (``gap / |primal|``, what ``tol`` bounds), of the standardized
        problem.
    tasks_ : ndarray
        The task values seen in ``fit``.
    classes_ : ndarray
        All labels seen in ``fit``.
    n_triplets_ : int
    n_iter_ : int
    converged_ : bool
    scale_ : ndarray (n_features,)
        The divisor of each column of ``X`` (as ``standardize`` says; 1 for a constant
        column, and for every column with ``standardize=False``).
    n_features_in_ : int
    feature_coords_ : ndarray (n_features_in,)
        The labels of the feature coordinate of an xarray ``X`` given to ``fit`` (its
        second dimension's), when it has them; not set otherwise.  ``transform``,
        ``predict`` and ``predict_proba`` refuse an ``X`` whose labels differ or come in
        another order (``ValidationError``; select them as in fit with
        ``X.sel({dim: model.feature_coords_})``) and read an ``X`` without labels by
        position.
    """

    _parameter_constraints: dict = {
        "n_neighbors": [Interval(Integral, 1, None, closed="left")],
        "lambda0": [Interval(Real, 0, None, closed="neither")],
        "lambda_task": [Interval(Real, 0, None, closed="neither")],
        "m": [Interval(Integral, 1, None, closed="left"), None],
        "q": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "Lambda": [StrOptions({"upper_bound", "heuristic"}),
                   Interval(Real, 0, None, closed="neither")],
        "standardize": ["boolean", StrOptions({"scalar"})],
        "max_time": [Interval(Real, 0, None, closed="neither"), None],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, n_neighbors=3, lambda0=0.01, lambda_task=0.1, m=None, q=None, tol=1e-3,
                 max_iter=100_000, Lambda="upper_bound", standardize=True, max_time=None,
                 random_state=None):
        self.n_neighbors = n_neighbors
        self.lambda0 = lambda0
        self.lambda_task = lambda_task
        self.m = m
        self.q = q
        self.tol = tol
        self.max_iter = max_iter
        self.Lambda = Lambda
        self.standardize = standardize
        self.max_time = max_time
        self.random_state = random_state

    def _task_codes(self, task, n_rows, *, fitting):
        """Integer codes (into ``tasks_``) of the task of every row."""
        if task is None:
            if fitting:
                self.tasks_ = np.zeros(1, dtype=np.int64)
                return np.zeros(n_rows, dtype=np.int64)
            if self.tasks_.size > 1:
                raise ValidationError(
                    f"task is required: the model was fitted on {self.tasks_.size} tasks "
                    f"({self.tasks_[:10].tolist()}); pass task= with the task of every row")
            return np.zeros(n_rows, dtype=np.int64)
        task = np.asarray(task)
        if task.ndim > 1 and task.size != max(task.shape):
            raise ValidationError(f"task must be 1-d (one value per row); got shape "
                                  f"{task.shape}")
        task = task.ravel()
        if task.size != n_rows:
            raise ValidationError(f"task needs one value per row of X ({n_rows}); got "
                                  f"{task.size}")
        if task.dtype == object or task.dtype.kind not in "biuUS":
            raise ValidationError(f"task values must be integers or strings; got dtype "
                                  f"{task.dtype}")
        if fitting:
            self.tasks_, codes = np.unique(task, return_inverse=True)
            return codes.astype(np.int64)
        if task.dtype.kind != self.tasks_.dtype.kind and not (
                task.dtype.kind in "biu" and self.tasks_.dtype.kind in "biu"):
            first = task[:1].tolist()[0]
            raise ValidationError(f"task {first!r} was not seen in fit (tasks: "
                                  f"{self.tasks_[:10].tolist()}); predict only tasks the "
                                  "model was fitted on")
        codes = np.searchsorted(self.tasks_, task)
        codes = np.minimum(codes, self.tasks_.size - 1)
        unseen = self.tasks_[codes] != task
        if unseen.any():
            first = task[unseen][:1].tolist()[0]
            raise ValidationError(f"task {first!r} was not seen in fit (tasks: "
                                  f"{self.tasks_[:10].tolist()}); predict only tasks the "
                                  "model was fitted on")
        return codes.astype(np.int64)

    @property
    def _n_features_out(self):
        """Columns of ``transform``'s output (``get_feature_names_out``: ``multitasklmnn0``,
        ``multitasklmnn1``, ..., as scikit-learn names a projection's columns)."""
        return self.components_.shape[1]

    def _validated(self, X):
        """``X`` of a fitted model's method: finite, 2-d, ``n_features_in_`` columns."""
        check_is_fitted(self, "metrics_")
        checked = sklearn_validated(validate_data, self, X, dtype=np.float64, reset=False)
        check_feature_coords(self, X)
        return checked

    def fit(self, X, y, *, task=None):
        """Build the triplets of every task and solve (35) by DSPDC.

        Parameters
        ----------
        X : array_like (n_samples, n_features)
            Finite values, at least two rows.
        y : array_like (n_samples,)
            Class labels; every task needs at least two classes.
        task : array_like (n_samples,), optional
            The task of each row (integers or strings); ``None``: one task.

        Returns
        -------
        self : MultiTaskLMNN

        Raises
        ------
        InvalidParameterError
            A hyperparameter outside its constraints.
        ValidationError
            ``X`` or ``y`` empty, non-finite or of the wrong shape, ``y`` not class labels
            or with one class, ``task`` of the wrong length, a task with one class.
        """
        validate_params(self)
        record_feature_coords(self, X)
        X, y = sklearn_validated(validate_data, self, X, y, dtype=np.float64, reset=True)
        sklearn_validated(check_classification_targets, y)
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValidationError(
                f"y has one class ({self.classes_[0]!r}): LMNN needs at least two classes "
                "(and two in every task); fit on data with at least two labels")
        codes = self._task_codes(task, X.shape[0], fitting=True)
        self.scale_ = np.ones(X.shape[1])
        if self.standardize:   # finite for every finite column (weighted_moments)
            sd = weighted_moments(X)[1]
            if self.standardize == "scalar":   # the root mean variance, for all columns
                sd = np.full(X.shape[1], np.sqrt(np.mean(sd ** 2)))
            self.scale_ = np.where(sd > 0, sd, 1.0)   # constant columns: left as they are
        Xs = X / self.scale_
        tr = build_triplets(Xs, y, codes, self.n_neighbors)
        n_blocks = tr.n_tasks + 1
        m = min(self.m, tr.n) if self.m is not None else None
        if self.q is not None and self.q > n_blocks:
            raise ValidationError(f"q={self.q} exceeds the number of metrics n_tasks + 1 = "
                                  f"{n_blocks}; use q <= {n_blocks} or None")
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        res = mtlmnn_dspdc(tr, self.lambda0, self.lambda_task, m=m, q=self.q,
                           Lambda=self.Lambda, tol=self.tol, max_iter=self.max_iter,
                           max_time=self.max_time, seed=seed)
        unscale = np.outer(1.0 / self.scale_, 1.0 / self.scale_)   # back to input units
        self.shared_metric_ = res.shared * unscale
        self.task_metrics_ = res.task_metrics * unscale
        self.metrics_ = self.task_metrics_ + self.shared_metric_
        self.components_ = np.stack([_factor(M) for M in self.metrics_])
        self.gap_history_ = res.history
        self.n_triplets_ = tr.n
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self._train = (X, y, codes)
        if not res.converged:
            warnings.warn(
                f"MultiTaskLMNN stopped ({res.stop_reason}: {res.n_iter} iterations) before "
                f"converging: the relative duality gap (P - D) / |P| is "
                f"{res.relative_gap:.3g} (primal {res.primal:.6g}), above tol={self.tol}; "
                "the metrics may be far from the solution. Raise max_iter (or max_time), or "
                "loosen tol.", ConvergenceWarning, stacklevel=2)
        return self

    def transform(self, X, *, task=None):
        """Map rows to the space where their task's metric is Euclidean.

        Parameters
        ----------
        X : array_like (n_samples, n_features)
        task : array_like (n_samples,), optional
            The task of each row; may be omitted when the model has one task.

        Returns
        -------
        ndarray (n_samples, n_features)
            Row ``x`` of task ``j`` becomes ``components_[j] @ x``, so that Euclidean
            distances there are ``d^2(a, b) = (a - b)^T metrics_[j] (a - b)``.
        """
        X = self._validated(X)
        codes = self._task_codes(task, X.shape[0], fitting=False)
        out = np.empty_like(X)
        for j in np.unique(codes):
            rows = codes == j
            out[rows] = X[rows] @ self.components_[j].T
        return out

    def fit_transform(self, X, y, *, task=None):
        """``fit(X, y, task=task)``, then ``transform(X, task=task)``.

        Parameters
        ----------
        X : array_like (n_samples, n_features)
        y : array_like (n_samples,)
        task : array_like (n_samples,), optional

        Returns
        -------
        ndarray (n_samples, n_features)
        """
        return self.fit(X, y, task=task).transform(X, task=task)

    def predict(self, X, *, task=None):
        """Majority vote of the ``n_neighbors`` nearest training rows of the row's task.

        Parameters
        ----------
        X : array_like (n_samples, n_features)
        task : array_like (n_samples,), optional
            The task of each row; may be omitted when the model has one task.

        Returns
        -------
        ndarray (n_samples,)
        """
        n_rows, parts = self._task_neighbours(X, task)
        out = np.empty(n_rows, dtype=self._train[1].dtype)
        for rows, knn, Z in parts:
            out[rows] = knn.predict(Z)
        return out

    def predict_proba(self, X, *, task=None):
        """Share of each class among the ``n_neighbors`` nearest training rows of the row's
        task (scikit-learn's ``KNeighborsClassifier`` under the task's metric).

        Parameters
        ----------
        X : array_like (n_samples, n_features)
        task : array_like (n_samples,), optional
            The task of each row; may be omitted when the model has one task.

        Returns
        -------
        ndarray (n_samples, n_classes)
            Columns in the order of ``classes_``; a class without training rows in a task
            has probability 0 for that task's rows.
        """
        n_rows, parts = self._task_neighbours(X, task)
        out = np.zeros((n_rows, self.classes_.size))
        for rows, knn, Z in parts:
            out[np.ix_(rows, np.searchsorted(self.classes_, knn.classes_))] = (
                knn.predict_proba(Z))
        return out

    def _task_neighbours(self, X, task):
        """The rows of ``X`` (validated once) and, per task of its rows, ``(rows, knn,
        Z)``: their indices, a k-NN classifier on the task's training rows and the rows,
        both mapped by ``components_[j]``."""
        from sklearn.neighbors import KNeighborsClassifier

        X = self._validated(X)
        codes = self._task_codes(task, X.shape[0], fitting=False)
        Xtr, ytr, ctr = self._train
        parts = []
        for j in np.unique(codes):
            rows, train = np.flatnonzero(codes == j), ctr == j
            L = self.components_[j].T
            knn = KNeighborsClassifier(n_neighbors=min(self.n_neighbors, int(train.sum())))
            parts.append((rows, knn.fit(Xtr[train] @ L, ytr[train]), X[rows] @ L))
        return X.shape[0], parts

    def score(self, X, y, sample_weight=None, *, task=None):
        """Mean accuracy of ``predict(X, task=task)``.

        Parameters
        ----------
        X : array_like (n_samples, n_features)
        y : array_like (n_samples,)
        sample_weight : array_like (n_samples,), optional
        task : array_like (n_samples,), optional

        Returns
        -------
        float
        """
        from sklearn.metrics import accuracy_score

        return float(accuracy_score(y, self.predict(X, task=task),
                                    sample_weight=sample_weight))


def _factor(M):
    """``L`` with ``L^T L = M`` for a symmetric PSD ``M`` (negative rounding clipped)."""
    w, Q = np.linalg.eigh(M)
    return (Q * np.sqrt(np.maximum(w, 0.0))).T
