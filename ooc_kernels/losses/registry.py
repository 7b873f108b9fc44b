"""Registry of losses used by the functional-gradient solvers.

Every loss is a small frozen :class:`Loss` object.  Its numpy methods are the reference
implementation; the hot path uses :func:`ooc_kernels._jit.losses.loss_gradient`, which
dispatches on the integer :attr:`Loss.loss_id`.  Tests compare the two.

Targets are always 2-D, shape ``(n, C)``:

============  ============================================  ==============================
loss          targets ``Y``                                 ``l'(u, y)`` (per column)
============  ============================================  ==============================
squared       regression: ``C`` columns of real ``y``       ``u - y``
hinge         ``C`` columns of ``+-1`` (binary: ``C = 1``;  ``-y`` if ``y u < 1`` else ``0``
              one-vs-rest: one column per class)
logistic      same as hinge                                 ``-y sigmoid(-y u)``
softmax       one-hot, ``C`` classes                        ``softmax(u) - Y`` (row-wise)
============  ============================================  ==============================

Adding a loss (e.g. Huber, epsilon-insensitive, quantile, squared hinge) takes one
:func:`register_loss` entry here with a new ``loss_id`` and one branch in
``ooc_kernels/_jit/losses.py``; a scalar hyper-parameter (epsilon, tau, Huber threshold) is
carried by :attr:`Loss.param` and passed to the numba kernels as ``loss_param``.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.losses import get_loss
>>> loss = get_loss("logistic")
>>> loss.loss_id, loss.task
(2, 'classification')
>>> F = np.array([[0.0], [2.0]]); Y = np.array([[1.0], [-1.0]])
>>> np.round(loss.gradient(F, Y), 4).ravel().tolist()
[-0.5, 0.8808]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ooc_kernels.exceptions import ValidationError

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

#: Integer ids understood by :func:`ooc_kernels._jit.losses.loss_gradient`.
LOSS_SQUARED = 0
LOSS_HINGE = 1
LOSS_LOGISTIC = 2
LOSS_SOFTMAX = 3


# ---------------------------------------------------------------------------------------
# stable elementwise helpers (numpy)
# ---------------------------------------------------------------------------------------
def _sigmoid(z: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-z))`` without overflow."""
    z = np.asarray(z, dtype=np.float64)
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    ez = np.exp(z[~pos])
    out[~pos] = ez / (1.0 + ez)
    return out


def _softmax(F: np.ndarray) -> np.ndarray:
    F = np.asarray(F, dtype=np.float64)
    e = np.exp(F - F.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _logsumexp(F: np.ndarray) -> np.ndarray:
    F = np.asarray(F, dtype=np.float64)
    mx = F.max(axis=1)
    return mx + np.log(np.exp(F - mx[:, None]).sum(axis=1))


# ---------------------------------------------------------------------------------------
# the four losses: value (per sample, shape (n,)) and gradient (shape (n, C)), float64
# ---------------------------------------------------------------------------------------
def _squared_value(F, Y, param):
    return 0.5 * ((F - Y) ** 2).sum(axis=1)


def _squared_grad(F, Y, param):
    return F - Y


def _hinge_value(F, Y, param):
    return np.maximum(0.0, 1.0 - Y * F).sum(axis=1)


def _hinge_grad(F, Y, param):
    # sub-gradient at the kink y u = 1 is 0 (the paper's choice)
    return np.where(Y * F < 1.0, -Y, 0.0)


def _logistic_value(F, Y, param):
    return np.logaddexp(0.0, -Y * F).sum(axis=1)


def _logistic_grad(F, Y, param):
    return -Y * _sigmoid(-Y * F)


def _softmax_value(F, Y, param):
    return _logsumexp(F) - (Y * F).sum(axis=1)


def _softmax_grad(F, Y, param):
    return _softmax(F) - Y


def _identity(F):
    return np.asarray(F, dtype=np.float64)


def _proba_logistic(F):
    P = _sigmoid(F)
    if P.shape[1] == 1:  # binary: columns are P(y = -1), P(y = +1)
        return np.hstack([1.0 - P, P])
    s = P.sum(axis=1, keepdims=True)  # one-vs-rest: normalise like scikit-learn
    s[s == 0] = 1.0
    return P / s


# ---------------------------------------------------------------------------------------
# the Loss object
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Loss:
    """A loss ``l(u, y)`` acting on decision values ``F`` and encoded targets ``Y`` (both ``(n, C)``).

    Parameters
    ----------
    name : str
        Registry name.
    loss_id : int
        Integer dispatched on by the numba kernels.
    task : {"classification", "regression"}
    multiclass : {"ovr", "joint", "none"}
        How more than one output column is handled: ``"ovr"`` one independent binary problem
        per column (targets ``+-1``), ``"joint"`` one coupled multi-class loss (softmax,
        one-hot targets), ``"none"`` independent regression outputs.
    param : float
        Scalar hyper-parameter passed to the numba kernels as ``loss_param`` (unused by the
        four current losses).
    description : str
        One line: the formula.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.losses import get_loss
    >>> sq = get_loss("squared")
    >>> sq.value(np.array([[3.0]]), np.array([[1.0]])).tolist()
    [2.0]
    >>> sq.has_proba
    False
    """

    name: str
    loss_id: int
    task: str
    multiclass: str
    description: str = ""
    param: float = 0.0
    _value: Callable = field(default=None, repr=False, compare=False)
    _gradient: Callable = field(default=None, repr=False, compare=False)
    _link: Callable | None = field(default=None, repr=False, compare=False)
    _proba: Callable | None = field(default=None, repr=False, compare=False)

    # -- validation ---------------------------------------------------------------------
    def _check(self, F, Y):
        F = np.asarray(F, dtype=np.float64)
        Y = np.asarray(Y, dtype=np.float64)
        if F.ndim != 2 or Y.ndim != 2:
            raise ValidationError(
                f"loss {self.name!r} needs 2-D decision values and targets (n, C); got shapes "
                f"{F.shape} and {Y.shape}. Reshape a vector y with y[:, None]"
            )
        if F.shape != Y.shape:
            raise ValidationError(
                f"loss {self.name!r}: decision values have shape {F.shape} but targets {Y.shape}; "
                "they must match"
            )
        return F, Y

    # -- reference numerics -------------------------------------------------------------
    def value(self, F, Y) -> np.ndarray:
        """Per-sample loss, shape ``(n,)`` (summed over the ``C`` columns), float64."""
        F, Y = self._check(F, Y)
        return self._value(F, Y, self.param)

    def gradient(self, F, Y) -> np.ndarray:
        """Derivative ``l'(F, Y)`` with respect to ``F``, shape ``(n, C)``, float64."""
        F, Y = self._check(F, Y)
        return self._gradient(F, Y, self.param)

    @property
    def has_proba(self) -> bool:
        """Whether :meth:`predict_proba` is defined for this loss."""
        return self._proba is not None

    def link(self, F) -> np.ndarray:
        """Inverse link: decision values to the predicted mean / probabilities.

        ``squared``: identity; ``logistic``: elementwise sigmoid; ``softmax``: row softmax;
        ``hinge``: identity (no probabilistic link; the sign is the prediction).
        """
        F = np.asarray(F, dtype=np.float64)
        return (self._link or _identity)(F)

    def predict_proba(self, F) -> np.ndarray:
        """Class probabilities, shape ``(n, n_classes)``.

        Binary logistic (``C = 1``) returns ``[P(y=-1), P(y=+1)]``; one-vs-rest logistic
        normalises the per-class sigmoids; softmax returns the row softmax.

        Raises
        ------
        ValidationError
            For losses without a probabilistic model (``squared``, ``hinge``).
        """
        if self._proba is None:
            raise ValidationError(
                f"loss {self.name!r} does not model probabilities; use loss='logistic' or "
                "'softmax' to get predict_proba"
            )
        F = np.asarray(F, dtype=np.float64)
        if F.ndim != 2:
            raise ValidationError(f"decision values must be 2-D (n, C); got shape {F.shape}")
        return self._proba(F)


_REGISTRY: dict[str, Loss] = {}


def register_loss(loss: Loss) -> Loss:
    """Add ``loss`` to the registry (names and ids must be unique).

    Examples
    --------
    >>> from ooc_kernels.losses.registry import register_loss, Loss
    >>> try:
    ...     register_loss(Loss("squared", 99, "regression", "none"))
    ... except ValueError as e:
    ...     print("refused")
    refused
    """
    if not isinstance(loss, Loss):
        raise ValidationError(f"register_loss expects a Loss; got {type(loss).__name__}")
    if loss.name in _REGISTRY:
        raise ValidationError(f"a loss named {loss.name!r} is already registered")
    registered = _REGISTRY.values()  # small: the loss registry dict
    if any(other.loss_id == loss.loss_id for other in registered):
        raise ValidationError(f"loss_id {loss.loss_id} is already used")
    if loss.task not in ("classification", "regression"):
        raise ValidationError(f"task must be 'classification' or 'regression'; got {loss.task!r}")
    if loss.multiclass not in ("ovr", "joint", "none"):
        raise ValidationError(f"multiclass must be 'ovr', 'joint' or 'none'; got {loss.multiclass!r}")
    if loss._value is None or loss._gradient is None:
        raise ValidationError(f"loss {loss.name!r} needs value and gradient functions")
    _REGISTRY[loss.name] = loss
    return loss


def available_losses() -> tuple[str, ...]:
    """Names of the registered losses, sorted by ``loss_id``.

    Examples
    --------
    >>> from ooc_kernels.losses import available_losses
    >>> available_losses()
    ('squared', 'hinge', 'logistic', 'softmax')
    """
    return tuple(sorted(_REGISTRY, key=lambda k: _REGISTRY[k].loss_id))


def get_loss(name) -> Loss:
    """Look a loss up by name (a :class:`Loss` is returned unchanged).

    Raises
    ------
    ValidationError
        Unknown name; the message lists the valid names.

    Examples
    --------
    >>> from ooc_kernels.losses import get_loss
    >>> get_loss("hinge").loss_id
    1
    >>> try:
    ...     get_loss("cosh")
    ... except ValueError as e:
    ...     print(e)
    unknown loss 'cosh'; valid names are: 'squared', 'hinge', 'logistic', 'softmax'
    """
    if isinstance(name, Loss):
        return name
    loss = _REGISTRY.get(name) if isinstance(name, str) else None
    if loss is None:
        valid = ", ".join(repr(n) for n in available_losses())
        raise ValidationError(f"unknown loss {name!r}; valid names are: {valid}")
    return loss


register_loss(
    Loss(
        "squared", LOSS_SQUARED, "regression", "none", "l(u, y) = (u - y)^2 / 2",
        _value=_squared_value, _gradient=_squared_grad, _link=_identity,
    )
)
register_loss(
    Loss(
        "hinge", LOSS_HINGE, "classification", "ovr", "l(u, y) = max(0, 1 - y u), y in {-1, +1}",
        _value=_hinge_value, _gradient=_hinge_grad,
    )
)
register_loss(
    Loss(
        "logistic", LOSS_LOGISTIC, "classification", "ovr", "l(u, y) = log(1 + exp(-y u)), y in {-1, +1}",
        _value=_logistic_value, _gradient=_logistic_grad, _link=_sigmoid, _proba=_proba_logistic,
    )
)
register_loss(
    Loss(
        "softmax", LOSS_SOFTMAX, "classification", "joint",
        "l(u, Y) = logsumexp(u) - <Y, u>, Y one-hot",
        _value=_softmax_value, _gradient=_softmax_grad, _link=_softmax, _proba=_softmax,
    )
)
