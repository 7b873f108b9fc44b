"""The hyper-parameters of the DSG losses: ``epsilon`` (huber, epsilon-insensitive) and
``quantile`` (the quantile loss's level).

A loss of the table that has a hyper-parameter declares it (:class:`~ooc_kernels.losses.
LossParam`: its name, which is the estimator's parameter that sets it, its range and its
default).  :func:`loss_param` reads the estimator's parameter of that name, checks it
against the row's range and returns the value that :class:`~ooc_kernels.families.dsg.
solver.DSGConfig` carries as ``loss_param`` to the numba kernels (and that is saved with
the model).  A loss without a parameter gets 0, and the estimator's parameters that it does
not use are left alone, as scikit-learn's ``SGDRegressor`` does with ``epsilon``.

Examples
--------
>>> from ooc_kernels import DSGRegressor
>>> from ooc_kernels.families.dsg._loss_params import loss_param
>>> loss_param("quantile", DSGRegressor(loss="quantile", quantile=0.9))
0.9
>>> loss_param("squared", DSGRegressor(epsilon=3.0))         # squared has no parameter
0.0
>>> loss_param("huber", DSGRegressor(loss="huber"))            # epsilon=None: the row's
1.0
"""

from __future__ import annotations

from numbers import Real

from ooc_kernels.estimators._constraints import Interval
from ooc_kernels.losses import get_loss

__all__ = ["EPSILON", "QUANTILE", "LOSS_PARAM_CONSTRAINTS", "LOSS_PARAMS_DOC", "loss_param"]

#: Defaults of ``DSGRegressor(epsilon=..., quantile=...)``.  ``epsilon=None`` is the loss's
#: own default (the table's: 1 for huber, the paper's threshold; 0.1 for
#: epsilon-insensitive), in robust standard deviations of ``y`` (1.4826 times the median
#: absolute deviation) when the targets are standardized (docs/machines/regression.md
#: measures them).
EPSILON = None
QUANTILE = 0.5

#: The declarative constraints (the union of the ranges of the losses that use each
#: parameter; huber's ``epsilon > 0`` is checked against its row by :func:`loss_param`).
LOSS_PARAM_CONSTRAINTS = {
    "epsilon": [Interval(Real, 0, None, closed="left"), None],
    "quantile": [Interval(Real, 0, 1, closed="neither")],
}

LOSS_PARAMS_DOC = """
    epsilon : float or None, default=None
        Used only by ``loss="huber"`` (the threshold where the loss turns from quadratic to
        linear, > 0) and ``loss="epsilon_insensitive"`` (the half-width of the tube inside
        which errors cost nothing, >= 0; 0 is least absolute deviation); the other losses
        do not use it, as in scikit-learn's ``SGDRegressor``.  None: the loss's default, 1
        for huber (the threshold of Dai et al.) and 0.1 for epsilon_insensitive.  It is in
        the units the model fits: with ``standardize`` True or "auto" (the default) the
        targets of huber, epsilon_insensitive and quantile are centred on their median and
        divided by 1.4826 times their median absolute deviation (the standard deviation of
        normal targets, which outliers do not inflate), so ``epsilon`` counts such robust
        standard deviations of ``y`` and the defaults need no tuning to the targets' scale;
        with ``standardize=False`` it is in the units of ``y``.  Saved with the model.
    quantile : float, default=0.5
        Used only by ``loss="quantile"``: the level ``tau`` in (0, 1) of the conditional
        quantile the model predicts (0.5: the median); the other losses do not use it.
        Saved with the model.
"""


def loss_param(loss: str, estimator) -> float:
    """The value of ``loss``'s hyper-parameter that ``estimator`` sets (0 for a loss
    without one), checked against the loss's range.

    Raises
    ------
    ValidationError
        The value is outside the range of the loss (``loss="huber"`` with ``epsilon=0``).
    """
    row = get_loss(loss)
    value = None if row.parameter is None else getattr(estimator, row.parameter.name)
    return row.param if value is None else row.with_param(value).param
