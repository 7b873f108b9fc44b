"""Losses: one table of rows (value, derivative, conjugate, prox, curvature, link, target).

See :mod:`ooc_kernels.losses.registry` for the table and its conventions (targets are
always ``(n, C)``), :mod:`ooc_kernels.losses.reference` for the NumPy twins of the numba
dispatch by ``loss_id``.

Examples
--------
>>> from ooc_kernels.losses import get_loss, available_losses, losses_for
>>> "softmax" in available_losses()
True
>>> get_loss("softmax").multiclass, losses_for("dsg", target="binary")
('joint', ('hinge', 'logistic', 'squared_hinge'))
"""

from ooc_kernels.losses.registry import (
    FAMILIES,
    LOSS_EPSILON_INSENSITIVE,
    LOSS_HINGE,
    LOSS_HUBER,
    LOSS_LOGISTIC,
    LOSS_QUANTILE,
    LOSS_SMOOTHED_HINGE,
    LOSS_SOFTMAX,
    LOSS_SQUARED,
    LOSS_SQUARED_HINGE,
    Loss,
    LossParam,
    available_losses,
    get_loss,
    loss_by_id,
    losses_for,
    register_loss,
)

__all__ = [
    "FAMILIES",
    "LOSS_EPSILON_INSENSITIVE",
    "LOSS_HINGE",
    "LOSS_HUBER",
    "LOSS_LOGISTIC",
    "LOSS_QUANTILE",
    "LOSS_SMOOTHED_HINGE",
    "LOSS_SOFTMAX",
    "LOSS_SQUARED",
    "LOSS_SQUARED_HINGE",
    "Loss",
    "LossParam",
    "available_losses",
    "get_loss",
    "loss_by_id",
    "losses_for",
    "register_loss",
]
