"""The ``"auto"`` settings of :class:`~ooc_kernels.families.dsg.one_class.DSGOneClassSVM`,
resolved from the kernel and the number of training rows.

* ``basis="auto"``: ``"nystroem"`` for the Gaussian kernel (``kernel="rbf"`` without
  ``kernel_params``), ``"random"`` for every other kernel (the Nystrom basis whitens the
  Gaussian kernel's Gram matrix only).
* ``n_features="auto"``: :data:`AUTO_LANDMARKS` landmarks on the Nystrom basis,
  :data:`AUTO_RANDOM_FEATURES` random features (rounded down to whole blocks) on the random
  one.
* ``batch_size="auto"``: :data:`MAX_AUTO_BATCH` (the whole data set in one batch) up to
  that many rows, else ``n_rows // MIN_STEPS_BEFORE_TOL`` clipped to
  [:data:`MIN_AUTO_BATCH`, :data:`MAX_AUTO_BATCH`].  A fit takes at least
  :data:`MIN_STEPS_BEFORE_TOL` steps before ``tol`` may end it; with batches of 64 a data set
  of fewer than 12,800 rows spends those steps in several passes, so the batch shrinks until
  one pass is about that many steps (4 rows from 65 to 999 rows, 64 from 12,800 rows on).
  A data set of at most 64 rows stays one batch: its steps are full gradient steps, which
  cost little at that size, are float64 under ``dtype="auto"``, and make a fit with
  integer ``sample_weight`` the fit on the repeated rows.

The evidence (ROC AUC and CPU seconds against scikit-learn's ``Nystroem(256)`` +
``SGDOneClassSVM``, the commands) is in docs/defaults.md, *One-class SVM*.

Examples
--------
>>> resolve_basis("auto", "rbf", None), resolve_basis("auto", "laplacian", None)
('nystroem', 'random')
>>> resolve_n_features("auto", "nystroem", 256), resolve_n_features("auto", "random", 96)
(256, 4032)
>>> [auto_batch_size(n) for n in (30, 64, 65, 1_000, 2_000, 12_800, 140_000)]
[64, 64, 4, 5, 10, 64, 64]
"""

from __future__ import annotations

from ooc_kernels.features.maps import kernel_spec

__all__ = ["AUTO_LANDMARKS", "AUTO_RANDOM_FEATURES", "MAX_AUTO_BATCH", "MIN_AUTO_BATCH",
           "MIN_STEPS_BEFORE_TOL", "auto_batch_size", "resolve_basis", "resolve_batch_size",
           "resolve_n_features"]

#: Steps a fit takes before ``tol`` may end it.  The model after ``T`` steps is the mean of
#: their gradients, the first ones (``tau`` still far from the ``nu``-quantile) included, so
#: the ranking needs a few hundred steps whatever the number of rows: on 90 rows of digits
#: (two batches of 64 an epoch) the rule ended fits after 6 steps at ROC AUC 0.937, where
#: 200 steps reach 0.972 (docs/machines/one_class.md, *A small data set*).  On 140,000 rows
#: an epoch has 2,188 steps, so the rule is unchanged there.
MIN_STEPS_BEFORE_TOL = 200
#: ``n_features="auto"`` on the Nystrom basis: landmarks.
AUTO_LANDMARKS = 256
#: ``n_features="auto"`` on the random basis: random features.
AUTO_RANDOM_FEATURES = 4096
#: The bounds of ``batch_size="auto"``.
MIN_AUTO_BATCH, MAX_AUTO_BATCH = 4, 64


def resolve_basis(basis: str, kernel, kernel_params) -> str:
    """``basis`` resolved: ``"auto"`` is ``"nystroem"`` for the plain Gaussian kernel,
    ``"random"`` otherwise; other values are returned as they are."""
    if basis != "auto":
        return basis
    return "nystroem" if kernel_spec(kernel, kernel_params) == "rbf" else "random"


def resolve_n_features(n_features, basis: str, block_size: int) -> int:
    """``n_features`` resolved for the resolved ``basis``: ``"auto"`` is
    :data:`AUTO_LANDMARKS` landmarks (``"nystroem"``) or :data:`AUTO_RANDOM_FEATURES`
    random features rounded down to a multiple of ``block_size`` (at least one block)."""
    if n_features != "auto":
        return int(n_features)
    if basis == "nystroem":
        return AUTO_LANDMARKS
    block = int(block_size)
    return max(block, AUTO_RANDOM_FEATURES // block * block)


def auto_batch_size(n_rows: int) -> int:
    """``batch_size="auto"`` for ``n_rows`` training rows: ``MAX_AUTO_BATCH`` up to that
    many rows (one batch), else ``n_rows // MIN_STEPS_BEFORE_TOL`` clipped to
    ``[MIN_AUTO_BATCH, MAX_AUTO_BATCH]``."""
    if int(n_rows) <= MAX_AUTO_BATCH:
        return MAX_AUTO_BATCH
    return min(MAX_AUTO_BATCH, max(MIN_AUTO_BATCH, int(n_rows) // MIN_STEPS_BEFORE_TOL))


def resolve_batch_size(batch_size, n_rows: int) -> int:
    """``batch_size`` resolved for ``n_rows`` training rows (``"auto"``:
    :func:`auto_batch_size`)."""
    return auto_batch_size(n_rows) if batch_size == "auto" else int(batch_size)
