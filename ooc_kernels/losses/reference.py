"""NumPy twins of the numba dispatch of :mod:`ooc_kernels._jit.losses`, by ``loss_id``.

Each function looks the id up in the loss table (:func:`~ooc_kernels.losses.loss_by_id`)
and applies the row's twin at ``loss_param`` (:meth:`~ooc_kernels.losses.Loss.with_param`:
a value outside the row's declared range, or a value other than 0 for a loss without a
parameter, raises), so an id that is not in the table raises
:class:`~ooc_kernels.exceptions.ValidationError`.  The kernels' own twins (``*_ref`` in a
family's ``kernels*.py``) call these.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.losses.reference import loss_value_ref, loss_grad_value_ref
>>> loss_value_ref(4, np.array([0.5, 2.0]), 1.0).tolist()      # smoothed hinge
[0.125, 0.0]
>>> grad, value = loss_grad_value_ref(0, np.array([[0.0], [2.0]]), np.ones((2, 1)),
...                                   np.array([1.0, 2.0]))
>>> grad.ravel().tolist(), value
([-1.0, 2.0], 1.5)
"""

from __future__ import annotations

import numpy as np

from ooc_kernels.losses.registry import loss_by_id

__all__ = ["loss_value_ref", "loss_derivative_ref", "loss_conjugate_ref", "dual_prox_ref",
           "loss_gradient_ref", "loss_grad_value_ref"]


def _row(loss_id, loss_param):
    return loss_by_id(loss_id).with_param(loss_param)


def loss_value_ref(loss_id, z, b, loss_param=0.0):
    """Twin of :func:`ooc_kernels._jit.losses.loss_value`, elementwise."""
    return _row(loss_id, loss_param).pointwise(z, b)


def loss_derivative_ref(loss_id, z, b, loss_param=0.0):
    """Twin of :func:`ooc_kernels._jit.losses.loss_derivative`, elementwise."""
    return _row(loss_id, loss_param).derivative(z, b)


def loss_conjugate_ref(loss_id, beta, b, loss_param=0.0):
    """Twin of :func:`ooc_kernels._jit.losses.loss_conjugate`, elementwise."""
    return _row(loss_id, loss_param).conjugate(beta, b)


def dual_prox_ref(loss_id, c, y, b, sigma, n, loss_param=0.0):
    """Twin of :func:`ooc_kernels._jit.losses.dual_prox`, elementwise in ``c, y, b``."""
    return _row(loss_id, loss_param).dual_prox(c, y, b, sigma, n)


def loss_gradient_ref(loss_id, F, Y, loss_param=0.0):
    """Twin of :func:`ooc_kernels._jit.losses.loss_gradient`: a new float64 ``(n, C)``.

    ``loss_param`` is the value of the row's hyper-parameter
    (:meth:`~ooc_kernels.losses.Loss.with_param`); a loss without one accepts only 0.
    """
    return _row(loss_id, loss_param).gradient(F, Y)


def loss_grad_value_ref(loss_id, F, Y, sw, loss_param=0.0):
    """Twin of :func:`ooc_kernels._jit.losses.loss_grad_value`: returns ``(weighted
    gradient, weighted loss)``."""
    loss = _row(loss_id, loss_param)
    sw = np.asarray(sw, dtype=np.float64)
    grad = loss.gradient(F, Y) * sw[:, None]
    return grad, float((sw * loss.value(F, Y)).sum())
