"""In-memory generators for the block-coordinate DSPDC problems.

The experiments of ``docs/specs/dspdc.md`` §6, rows 6.2 and 6.3:

``matrix_risk``
    The data of Experiment 6.2 (multiple-matrix risk minimization (30)): ``D_i^j`` iid
    ``N(0, 1)`` ``d x d`` matrices and labels ``b_i = sign(sum_j trace D_i^j)``, the sign of
    the linear prediction of the true model ``X_j = I`` (the paper's label rule has a free
    index ``j``; this is the reading of ``docs/specs/dspdc.md`` §6 (row 6.2): the logistic
    value exceeds 1/2 exactly when its argument is positive).
``multitask_classes``
    Multi-task classification data with class structure, a stand-in for ALOI (unavailable
    offline) in Experiment 6.3 (multi-task LMNN): in a random rotation of ``R^d``, a few
    *shared* directions carry class information in every task, a few *task-specific*
    directions carry it in one task only, and the remaining directions are large
    uninformative noise, so that Euclidean k-nearest neighbours are poor and a learned metric
    (shared part + task part) helps.

Both return NumPy arrays (no Zarr store): the problems they feed are solved in memory.

Examples
--------
>>> from ooc_kernels.data.matrix_data import matrix_risk, multitask_classes
>>> D, b = matrix_risk(10, 3, 4, seed=0)
>>> D.shape, sorted(set(b.tolist()))
((10, 3, 4, 4), [-1.0, 1.0])
>>> X, y, task = multitask_classes(3, 40, 8, 3, seed=0)
>>> X.shape, y.shape, sorted(set(task.tolist()))
((120, 8), (120,), [0, 1, 2])
"""

from __future__ import annotations

import numpy as np

from ..exceptions import ValidationError

__all__ = ["matrix_risk", "multitask_classes"]


def _int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValidationError(f"{name} must be an integer >= {low}; got {value!r}")
    return int(value)


def _positive(name, value):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValidationError(f"{name} must be a real number; got {value!r}") from None
    if not (np.isfinite(v) and v > 0.0):
        raise ValidationError(f"{name} must be finite and > 0; got {value!r}")
    return v


def matrix_risk(n, p, d, seed=0):
    """Experiment 6.2's data: ``D (n, p, d, d)`` iid ``N(0, 1)``, ``b = sign(sum_j tr D_i^j)``.

    Storage is ``n p d^2`` float64 values (the paper's ``n = p = d = 100`` is 0.8 GB).

    Parameters
    ----------
    n : int
        Samples.
    p : int
        Matrices per sample.
    d : int
        Matrix size.
    seed : int
        ``numpy.random.default_rng(seed)`` draws ``D`` in C order.

    Returns
    -------
    D : ndarray (n, p, d, d)
    b : ndarray (n,)
        ``+-1`` (a zero trace sum, of probability 0, gives ``+1``).

    Examples
    --------
    >>> D, b = matrix_risk(5, 2, 3, seed=1)
    >>> bool(np.all(b == np.where(np.trace(D, axis1=2, axis2=3).sum(1) >= 0, 1.0, -1.0)))
    True
    """
    n, p, d = _int("n", n, 1), _int("p", p, 1), _int("d", d, 1)
    rng = np.random.default_rng(seed)
    D = rng.standard_normal((n, p, d, d))
    b = np.where(np.trace(D, axis1=2, axis2=3).sum(axis=1) >= 0.0, 1.0, -1.0)
    return D, b


def multitask_classes(n_tasks, n_per_task, d, n_classes, seed=0, *, n_shared=2, n_specific=2,
                      separation=2.5, noise=3.0):
    """Multi-task classes: shared and task-specific informative directions in large noise.

    In latent coordinates, directions ``0 .. n_shared - 1`` are informative in every task,
    directions ``n_shared + k n_specific .. n_shared + (k + 1) n_specific - 1`` only in task
    ``k`` (cyclically when they run out), and every other direction is noise.  A point of
    class ``c`` of task ``k`` is its class mean (``N(0, separation^2)`` on the task's
    informative directions, 0 elsewhere) plus ``N(0, 1)`` on the informative directions and
    ``N(0, noise^2)`` on the others; the points are then rotated by one random orthogonal
    matrix.  Classes are balanced (``n_per_task`` points cycle through them) and labels are
    distinct across tasks (task ``k``'s labels are ``k n_classes .. (k + 1) n_classes - 1``),
    as with the label groups of ALOI in Experiment 6.3.

    Parameters
    ----------
    n_tasks : int
    n_per_task : int
        ``>= 2 n_classes``.
    d : int
        ``>= n_shared + n_specific``.
    n_classes : int
        ``>= 2`` per task.
    seed : int
    n_shared, n_specific : int
        Informative directions shared by all tasks and specific to each task.
    separation : float
        Spread of the class means on the informative directions.
    noise : float
        Standard deviation of the uninformative directions.

    Returns
    -------
    X : ndarray (n_tasks n_per_task, d)
    y : ndarray (n_tasks n_per_task,) int64
    task : ndarray (n_tasks n_per_task,) int64

    Examples
    --------
    >>> X, y, task = multitask_classes(2, 6, 5, 2, seed=0)
    >>> y.tolist(), task.tolist()
    ([0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3], [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1])
    """
    n_tasks = _int("n_tasks", n_tasks, 1)
    n_classes = _int("n_classes", n_classes, 2)
    n_per_task = _int("n_per_task", n_per_task, 2 * n_classes)
    n_shared = _int("n_shared", n_shared, 0)
    n_specific = _int("n_specific", n_specific, 0)
    if n_shared + n_specific == 0:
        raise ValidationError("n_shared + n_specific must be >= 1: without informative "
                              "directions the classes cannot be told apart")
    d = _int("d", d, n_shared + n_specific)
    separation = _positive("separation", separation)
    noise = _positive("noise", noise)
    rng = np.random.default_rng(seed)
    rotation, _ = np.linalg.qr(rng.standard_normal((d, d)))
    n_free = d - n_shared
    X = np.empty((n_tasks * n_per_task, d))
    y = np.empty(n_tasks * n_per_task, dtype=np.int64)
    task = np.repeat(np.arange(n_tasks, dtype=np.int64), n_per_task)
    for k in range(n_tasks):
        informative = np.zeros(d, dtype=bool)
        informative[:n_shared] = True
        informative[n_shared + (k * n_specific + np.arange(n_specific)) % n_free] = True
        means = np.where(informative, rng.normal(0.0, separation, (n_classes, d)), 0.0)
        labels = np.arange(n_per_task) % n_classes
        scale = np.where(informative, 1.0, noise)
        Z = means[labels] + rng.standard_normal((n_per_task, d)) * scale
        rows = slice(k * n_per_task, (k + 1) * n_per_task)
        X[rows] = Z @ rotation.T
        y[rows] = k * n_classes + labels
    return X, y, task
