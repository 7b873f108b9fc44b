"""Losses: value, derivative and link functions, addressed by name.

See :mod:`ooc_kernels.losses.registry` for the conventions (targets are always ``(n, C)``).

Examples
--------
>>> from ooc_kernels.losses import get_loss, available_losses
>>> "softmax" in available_losses()
True
>>> get_loss("softmax").multiclass
'joint'
"""

from ooc_kernels.losses.registry import (
    LOSS_HINGE,
    LOSS_LOGISTIC,
    LOSS_SOFTMAX,
    LOSS_SQUARED,
    Loss,
    available_losses,
    get_loss,
    register_loss,
)

__all__ = [
    "LOSS_HINGE",
    "LOSS_LOGISTIC",
    "LOSS_SOFTMAX",
    "LOSS_SQUARED",
    "Loss",
    "available_losses",
    "get_loss",
    "register_loss",
]
