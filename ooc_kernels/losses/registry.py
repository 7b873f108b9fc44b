"""The loss table: every loss of the library, one row each, addressed by name or id.

A row is a frozen :class:`Loss`.  It carries the loss's integer id (one id space for the
whole library: the numba dispatch of :mod:`ooc_kernels._jit.losses` branches on it), its
NumPy twins (value and derivative, and for the scalar losses the convex conjugate and its
prox, the dual step of DSPDC), its curvature bound (step sizes of DSG, ``gamma`` of DSPDC),
its link (decision values to predictions or probabilities), the target kind it accepts and
the estimator families that offer it.  ``tests/test_loss_table.py`` checks every row
against the numba dispatch and against the definitions (finite differences,
Fenchel-Young, the prox's optimality condition).

Targets are always 2-D, shape ``(n, C)``:

===================  ==  =======  ==========================================  ========
loss                 id  target   ``l(u, y)`` (per column), ``r = u - y``     families
===================  ==  =======  ==========================================  ========
squared              0   real     ``r^2 / 2``                                 dsg, dspdc
hinge                1   binary   ``max(0, 1 - y u)``                         dsg
logistic             2   binary   ``log(1 + exp(-y u))``                      dsg, dspdc
softmax              3   classes  ``logsumexp(u) - <Y, u>`` (row)             dsg
smoothed_hinge       4   binary   ``0`` (s >= 1), ``1/2 - s`` (s <= 0),       dspdc
                                  ``(1 - s)^2 / 2``, ``s = y u``
squared_hinge        5   binary   ``max(0, 1 - y u)^2 / 2``                   dsg
huber                6   real     ``r^2 / 2`` (``|r| <= epsilon``),           dsg
                                  ``epsilon (|r| - epsilon / 2)``
epsilon_insensitive  7   real     ``max(0, |r| - epsilon)``                   dsg
quantile             8   real     ``max(-tau r, (1 - tau) r)``                dsg
===================  ==  =======  ==========================================  ========

``binary`` targets are ``+-1`` (one column per class for one-vs-rest), ``classes`` one-hot
rows, ``real`` any real values.  A loss with a scalar hyper-parameter (``epsilon``, the
quantile level ``tau``) declares it (:class:`LossParam`: name, range, default);
:attr:`Loss.param` holds its value, which the numba kernels receive as ``loss_param``, and
:meth:`Loss.with_param` gives the row with another value.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.losses import get_loss
>>> loss = get_loss("logistic")
>>> loss.loss_id, loss.task, loss.target, loss.gamma
(2, 'classification', 'binary', 4.0)
>>> F = np.array([[0.0], [2.0]]); Y = np.array([[1.0], [-1.0]])
>>> np.round(loss.gradient(F, Y), 4).ravel().tolist()
[-0.5, 0.8808]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from ooc_kernels.exceptions import ValidationError
from ooc_kernels.losses import _twins as tw

__all__ = [
    "LOSS_EPSILON_INSENSITIVE",
    "LOSS_HINGE",
    "LOSS_HUBER",
    "LOSS_LOGISTIC",
    "LOSS_QUANTILE",
    "LOSS_SMOOTHED_HINGE",
    "LOSS_SOFTMAX",
    "LOSS_SQUARED",
    "LOSS_SQUARED_HINGE",
    "FAMILIES",
    "Loss",
    "LossParam",
    "available_losses",
    "get_loss",
    "loss_by_id",
    "losses_for",
    "register_loss",
]

#: Integer ids understood by the numba dispatch of :mod:`ooc_kernels._jit.losses`.
LOSS_SQUARED = 0
LOSS_HINGE = 1
LOSS_LOGISTIC = 2
LOSS_SOFTMAX = 3
LOSS_SMOOTHED_HINGE = 4
LOSS_SQUARED_HINGE = 5
LOSS_HUBER = 6
LOSS_EPSILON_INSENSITIVE = 7
LOSS_QUANTILE = 8

#: The estimator families that take their losses from the table.
FAMILIES = ("dsg", "dspdc")


@dataclass(frozen=True)
class LossParam:
    """The scalar hyper-parameter a loss declares: its name, its range and its default.

    Parameters
    ----------
    name : str
        The name of the estimators' parameter that sets it (``"epsilon"``,
        ``"quantile"``).
    low, high : float
        The range's ends (``inf`` for none).
    closed : {"neither", "left", "right", "both"}
        Which ends belong to the range.
    default : float
        The row's value (:attr:`Loss.param`).

    Examples
    --------
    >>> from ooc_kernels.losses import LossParam
    >>> level = LossParam("quantile", 0.0, 1.0, "neither", 0.5)
    >>> level.check(0.9, "quantile")
    0.9
    >>> try:
    ...     level.check(1.0, "quantile")
    ... except ValueError as e:
    ...     print(e)
    loss 'quantile': quantile=1.0 is outside (0.0, 1.0); pick quantile in (0.0, 1.0)
    """

    name: str
    low: float
    high: float
    closed: str
    default: float

    @property
    def interval(self) -> str:
        """The range as text, e.g. ``"(0.0, 1.0)"`` or ``"[0.0, inf)"``."""
        left = "[" if self.closed in ("left", "both") else "("
        right = "]" if self.closed in ("right", "both") else ")"
        return f"{left}{self.low!r}, {self.high!r}{right}"

    def contains(self, value) -> bool:
        """Whether ``value`` is a finite real number in the range."""
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer,
                                                             np.floating)):
            return False
        v = float(value)
        if not np.isfinite(v):
            return False
        above = v >= self.low if self.closed in ("left", "both") else v > self.low
        below = v <= self.high if self.closed in ("right", "both") else v < self.high
        return bool(above and below)

    def check(self, value, loss_name: str) -> float:
        """``value`` as a float, or :class:`ValidationError` naming the range."""
        if not self.contains(value):
            raise ValidationError(
                f"loss {loss_name!r}: {self.name}={value!r} is outside {self.interval}; "
                f"pick {self.name} in {self.interval}"
            )
        return float(value)


@dataclass(frozen=True)
class Loss:
    """A loss ``l(u, y)`` acting on decision values ``F`` and encoded targets ``Y`` (both ``(n, C)``).

    Parameters
    ----------
    name : str
        Table name.
    loss_id : int
        Integer dispatched on by the numba kernels (unique in the table).
    task : {"classification", "regression"}
    multiclass : {"ovr", "joint", "none"}
        How more than one output column is handled: ``"ovr"`` one independent binary problem
        per column (targets ``+-1``), ``"joint"`` one coupled multi-class loss (softmax,
        one-hot targets), ``"none"`` independent regression outputs.
    description : str
        One line: the formula.
    param : float
        The value of the loss's hyper-parameter, passed to the numba kernels as
        ``loss_param`` (0 for the losses without one).
    families : tuple of str
        The estimator families (:data:`FAMILIES`) whose estimators offer this loss.
    curvature : float
        Upper bound of ``l''`` in the decision value (a loss that is not smooth takes 1,
        the bound the step-size rules of DSG use for the hinge).
    smooth : bool
        Whether ``l'`` is ``curvature``-Lipschitz; then the conjugate is
        ``1/curvature``-strongly convex (:attr:`gamma`).
    parameter : LossParam or None
        The hyper-parameter the loss declares (None: it has none).

    Notes
    -----
    The NumPy twins are keyword fields: ``_value`` and ``_gradient`` on rows
    (``(F, Y, param)``); for scalar losses (one decision value per target)
    ``_pointwise = (value, derivative, conjugate, dual_prox)``, elementwise in ``(z, b)``
    and, for a loss with a parameter, its value as a last argument
    (:mod:`ooc_kernels.losses._twins`); ``_link`` and ``_proba`` on rows.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.losses import get_loss
    >>> sq = get_loss("squared")
    >>> sq.value(np.array([[3.0]]), np.array([[1.0]])).tolist()
    [2.0]
    >>> sq.has_proba, sq.target, sq.families
    (False, 'real', ('dsg', 'dspdc'))
    """

    name: str
    loss_id: int
    task: str
    multiclass: str
    description: str = ""
    param: float = 0.0
    families: tuple = ()
    curvature: float = 1.0
    smooth: bool = True
    parameter: LossParam | None = None
    _value: Callable = field(default=None, repr=False, compare=False)
    _gradient: Callable = field(default=None, repr=False, compare=False)
    _pointwise: tuple | None = field(default=None, repr=False, compare=False)
    _link: Callable | None = field(default=None, repr=False, compare=False)
    _proba: Callable | None = field(default=None, repr=False, compare=False)

    # -- derived properties -------------------------------------------------------------
    @property
    def target(self) -> str:
        """The targets the loss accepts: ``"real"``, ``"binary"`` (``+-1`` per column) or
        ``"classes"`` (one-hot rows)."""
        if self.task == "regression":
            return "real"
        return "classes" if self.multiclass == "joint" else "binary"

    @property
    def scalar(self) -> bool:
        """Whether the loss is one function of one decision value and one target (it has
        the scalar numba branches and a convex conjugate)."""
        return self._pointwise is not None

    @property
    def gamma(self) -> float:
        """``1 / curvature``: the strong convexity of the conjugate (DSPDC's ``gamma``).

        Raises
        ------
        ValidationError
            For a loss that is not smooth (its conjugate is not strongly convex).
        """
        if not self.smooth:
            raise ValidationError(
                f"loss {self.name!r} is not smooth: its conjugate is not strongly convex, "
                "so it has no gamma; use a smooth loss such as 'smoothed_hinge'"
            )
        return 1.0 / self.curvature

    @property
    def has_proba(self) -> bool:
        """Whether :meth:`predict_proba` is defined for this loss."""
        return self._proba is not None

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

    def _scalar_twin(self, index: int, what: str) -> Callable:
        if self._pointwise is None:
            raise ValidationError(
                f"loss {self.name!r} couples the outputs of a sample and has no scalar "
                f"{what}; use value/gradient on rows (n, C)"
            )
        fn = self._pointwise[index]
        if self.parameter is None:
            return fn
        return lambda *args: fn(*args, self.param)

    def with_param(self, value) -> "Loss":
        """The row with its hyper-parameter set to ``value`` (validated against its range).

        A loss without a parameter accepts only its own :attr:`param` (0) and returns
        itself.

        Raises
        ------
        ValidationError
            ``value`` is outside the declared range, or the loss has no parameter and
            ``value`` is not 0.

        Examples
        --------
        >>> from ooc_kernels.losses import get_loss
        >>> get_loss("quantile").with_param(0.9).param
        0.9
        >>> get_loss("squared").with_param(0.0) is get_loss("squared")
        True
        """
        if self.parameter is None:
            if isinstance(value, bool) or not isinstance(
                    value, (int, float, np.integer, np.floating)) or float(value) != self.param:
                raise ValidationError(
                    f"loss {self.name!r} has no hyper-parameter; got loss_param={value!r}. "
                    f"Pass {self.param!r}"
                )
            return self
        return replace(self, param=self.parameter.check(value, self.name))

    # -- reference numerics on rows -----------------------------------------------------
    def value(self, F, Y) -> np.ndarray:
        """Per-sample loss, shape ``(n,)`` (summed over the ``C`` columns), float64."""
        F, Y = self._check(F, Y)
        return self._value(F, Y, self.param)

    def gradient(self, F, Y) -> np.ndarray:
        """Derivative ``l'(F, Y)`` with respect to ``F``, shape ``(n, C)``, float64."""
        F, Y = self._check(F, Y)
        return self._gradient(F, Y, self.param)

    # -- reference numerics of a scalar loss, elementwise -------------------------------
    def pointwise(self, z, b) -> np.ndarray:
        """``phi(z)`` for targets ``b``, elementwise (scalar losses)."""
        return self._scalar_twin(0, "value")(z, b)

    def derivative(self, z, b) -> np.ndarray:
        """``phi'(z)`` for targets ``b``, elementwise (scalar losses)."""
        return self._scalar_twin(1, "derivative")(z, b)

    def conjugate(self, beta, b) -> np.ndarray:
        """``phi*(beta) = sup_z beta z - phi(z)``, elementwise, ``+inf`` off its domain."""
        return self._scalar_twin(2, "conjugate")(beta, b)

    def dual_prox(self, c, y, b, sigma, n) -> np.ndarray:
        """``argmax_beta (c beta - phi*(beta)) / n - (beta - y)^2 / (2 sigma)``, elementwise
        (the dual step of DSPDC, :func:`ooc_kernels._jit.losses.dual_prox`)."""
        return self._scalar_twin(3, "conjugate prox")(c, y, b, sigma, n)

    # -- links ---------------------------------------------------------------------------
    def link(self, F) -> np.ndarray:
        """Inverse link: decision values to the predicted mean / probabilities.

        ``squared``: identity; ``logistic``: elementwise sigmoid; ``softmax``: row softmax;
        ``hinge`` and ``smoothed_hinge``: identity (no probabilistic link; the sign is the
        prediction).
        """
        F = np.asarray(F, dtype=np.float64)
        return (self._link or tw.identity)(F)

    def predict_proba(self, F) -> np.ndarray:
        """Class probabilities, shape ``(n, n_classes)``.

        Binary logistic (``C = 1``) returns ``[P(y=-1), P(y=+1)]``; one-vs-rest logistic
        normalises the per-class sigmoids; softmax returns the row softmax.

        Raises
        ------
        ValidationError
            For losses without a probabilistic model (``squared``, ``hinge``,
            ``smoothed_hinge``).
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
    """Add ``loss`` to the table (names and ids must be unique).

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
    registered = _REGISTRY.values()  # small: the loss table
    if any(other.loss_id == loss.loss_id for other in registered):
        raise ValidationError(f"loss_id {loss.loss_id} is already used")
    if loss.task not in ("classification", "regression"):
        raise ValidationError(f"task must be 'classification' or 'regression'; got {loss.task!r}")
    if loss.multiclass not in ("ovr", "joint", "none"):
        raise ValidationError(f"multiclass must be 'ovr', 'joint' or 'none'; got {loss.multiclass!r}")
    if loss._value is None or loss._gradient is None:
        raise ValidationError(f"loss {loss.name!r} needs value and gradient functions")
    unknown = sorted(set(loss.families) - set(FAMILIES))
    if unknown:
        raise ValidationError(f"loss {loss.name!r} names unknown families {unknown}; the "
                              f"families are {list(FAMILIES)}")
    if not loss.curvature > 0:
        raise ValidationError(f"loss {loss.name!r}: curvature must be > 0; got {loss.curvature!r}")
    if loss.parameter is not None and loss.param != loss.parameter.check(
            loss.parameter.default, loss.name):
        raise ValidationError(f"loss {loss.name!r}: param must be its parameter's default "
                              f"{loss.parameter.default!r}; got {loss.param!r}")
    _REGISTRY[loss.name] = loss
    return loss


def available_losses() -> tuple[str, ...]:
    """Names of the losses of the table, sorted by ``loss_id``.

    Examples
    --------
    >>> from ooc_kernels.losses import available_losses
    >>> available_losses()  # doctest: +NORMALIZE_WHITESPACE
    ('squared', 'hinge', 'logistic', 'softmax', 'smoothed_hinge', 'squared_hinge', 'huber',
     'epsilon_insensitive', 'quantile')
    """
    return tuple(sorted(_REGISTRY, key=lambda k: _REGISTRY[k].loss_id))


def losses_for(family: str, *, target: str | None = None) -> tuple[str, ...]:
    """Names of the losses a family offers (optionally of one target kind), by ``loss_id``.

    Estimators build their ``loss`` constraint and documentation from this.

    Examples
    --------
    >>> from ooc_kernels.losses import losses_for
    >>> losses_for("dspdc"), losses_for("dsg", target="real")  # doctest: +NORMALIZE_WHITESPACE
    (('squared', 'logistic', 'smoothed_hinge'),
     ('squared', 'huber', 'epsilon_insensitive', 'quantile'))
    """
    if family not in FAMILIES:
        raise ValidationError(f"unknown family {family!r}; the families are {list(FAMILIES)}")
    return tuple(name for name in available_losses()
                 if family in _REGISTRY[name].families
                 and (target is None or _REGISTRY[name].target == target))


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
    ... # doctest: +NORMALIZE_WHITESPACE
    unknown loss 'cosh'; valid names are: 'squared', 'hinge', 'logistic', 'softmax',
    'smoothed_hinge', 'squared_hinge', 'huber', 'epsilon_insensitive', 'quantile'
    """
    if isinstance(name, Loss):
        return name
    loss = _REGISTRY.get(name) if isinstance(name, str) else None
    if loss is None:
        valid = ", ".join(repr(n) for n in available_losses())
        raise ValidationError(f"unknown loss {name!r}; valid names are: {valid}")
    return loss


def loss_by_id(loss_id) -> Loss:
    """The row of the table with this ``loss_id``.

    Raises
    ------
    ValidationError
        No row has this id; the message lists the ids.

    Examples
    --------
    >>> from ooc_kernels.losses import loss_by_id
    >>> loss_by_id(4).name
    'smoothed_hinge'
    """
    registered = _REGISTRY.values()  # small: the loss table
    for loss in registered:
        if isinstance(loss_id, (int, np.integer)) and not isinstance(loss_id, bool) \
                and loss.loss_id == int(loss_id):
            return loss
    valid = ", ".join(f"{_REGISTRY[n].loss_id} ({n})" for n in available_losses())
    raise ValidationError(f"unknown loss_id {loss_id!r}; valid ids are {valid}")


# ---------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------
def _columns(value, derivative, with_param):
    """Row functions ``(F, Y, param)`` of a scalar loss: values summed over the columns."""
    if with_param:
        return (lambda F, Y, param: value(F, Y, param).sum(axis=1),
                lambda F, Y, param: derivative(F, Y, param))
    return (lambda F, Y, param: value(F, Y).sum(axis=1),
            lambda F, Y, param: derivative(F, Y))


def _scalar(name, loss_id, task, multiclass, description, twins, **kw) -> Loss:
    parameter = kw.get("parameter")
    value, gradient = _columns(twins[0], twins[1], parameter is not None)
    if parameter is not None:
        kw["param"] = parameter.default
    return Loss(name, loss_id, task, multiclass, description, _value=value,
                _gradient=gradient, _pointwise=twins, **kw)


register_loss(_scalar(
    "squared", LOSS_SQUARED, "regression", "none", "l(u, y) = (u - y)^2 / 2",
    (tw.squared_value, tw.squared_derivative, tw.squared_conjugate, tw.squared_dual_prox),
    families=("dsg", "dspdc"), curvature=1.0, _link=tw.identity,
))
register_loss(_scalar(
    "hinge", LOSS_HINGE, "classification", "ovr", "l(u, y) = max(0, 1 - y u), y in {-1, +1}",
    (tw.hinge_value, tw.hinge_derivative, tw.hinge_conjugate, tw.hinge_dual_prox),
    families=("dsg",), curvature=1.0, smooth=False,
))
register_loss(_scalar(
    "logistic", LOSS_LOGISTIC, "classification", "ovr",
    "l(u, y) = log(1 + exp(-y u)), y in {-1, +1}",
    (tw.logistic_value, tw.logistic_derivative, tw.logistic_conjugate, tw.logistic_dual_prox),
    families=("dsg", "dspdc"), curvature=0.25, _link=tw.logistic_mean,
    _proba=tw.binary_or_ovr_proba,
))
register_loss(Loss(
    "softmax", LOSS_SOFTMAX, "classification", "joint",
    "l(u, Y) = logsumexp(u) - <Y, u>, Y one-hot", families=("dsg",), curvature=0.5,
    _value=lambda F, Y, param: tw.softmax_value(F, Y),
    _gradient=lambda F, Y, param: tw.softmax_gradient(F, Y),
    _link=tw.softmax, _proba=tw.softmax,
))
register_loss(_scalar(
    "smoothed_hinge", LOSS_SMOOTHED_HINGE, "classification", "ovr",
    "l(u, y) = 0 if s >= 1, 1/2 - s if s <= 0, (1 - s)^2 / 2 otherwise, s = y u",
    (tw.smoothed_hinge_value, tw.smoothed_hinge_derivative, tw.smoothed_hinge_conjugate,
     tw.smoothed_hinge_dual_prox),
    families=("dspdc",), curvature=1.0,
))
register_loss(_scalar(
    "squared_hinge", LOSS_SQUARED_HINGE, "classification", "ovr",
    "l(u, y) = max(0, 1 - y u)^2 / 2, y in {-1, +1}",
    (tw.squared_hinge_value, tw.squared_hinge_derivative, tw.squared_hinge_conjugate,
     tw.squared_hinge_dual_prox),
    families=("dsg",), curvature=1.0,
))
register_loss(_scalar(
    "huber", LOSS_HUBER, "regression", "none",
    "l(u, y) = r^2 / 2 if |r| <= epsilon, epsilon (|r| - epsilon / 2) otherwise, r = u - y",
    (tw.huber_value, tw.huber_derivative, tw.huber_conjugate, tw.huber_dual_prox),
    families=("dsg",), curvature=1.0, _link=tw.identity,
    parameter=LossParam("epsilon", 0.0, np.inf, "neither", 1.0),
))
register_loss(_scalar(
    "epsilon_insensitive", LOSS_EPSILON_INSENSITIVE, "regression", "none",
    "l(u, y) = max(0, |u - y| - epsilon)",
    (tw.epsilon_insensitive_value, tw.epsilon_insensitive_derivative,
     tw.epsilon_insensitive_conjugate, tw.epsilon_insensitive_dual_prox),
    families=("dsg",), curvature=1.0, smooth=False, _link=tw.identity,
    parameter=LossParam("epsilon", 0.0, np.inf, "left", 0.1),
))
register_loss(_scalar(
    "quantile", LOSS_QUANTILE, "regression", "none",
    "l(u, y) = max(tau (y - u), (1 - tau) (u - y)), tau in (0, 1)",
    (tw.quantile_value, tw.quantile_derivative, tw.quantile_conjugate,
     tw.quantile_dual_prox),
    families=("dsg",), curvature=1.0, smooth=False, _link=tw.identity,
    parameter=LossParam("quantile", 0.0, 1.0, "neither", 0.5),
))
