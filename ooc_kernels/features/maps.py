"""Feature maps: the one place that says how a kernel becomes random features.

A :class:`FeatureMap` is everything the library needs to know about a kernel ``k``:

* its ``name`` (the estimators' ``kernel`` option, the first item of every block cache key);
* its frequency sampler (``writer``), addressed by ``(seed, block_id)``: block ``j`` of a
  model with feature seed ``s`` is a pure function of ``(s, j)`` and the parameters;
* its nonlinearity (``nonlinearity``, an id of :data:`ooc_kernels._jit.rff.NONLINEARITIES`
  that the numba kernels dispatch on) and the normalisation ``feature_scale(r)`` of a block
  of ``r`` features, so that ``z(x) = feature_scale(r) * f(x @ W + phase)``;
* its input scale: the parameter ``bandwidth`` becomes a per-input vector of shape
  ``(d,)`` (:meth:`FeatureMap.input_scale`; an isotropic bandwidth is the same value in
  every coordinate) by which row ``i`` of ``W`` is divided, next to the standardization's
  ``x_scale``;
* the exact kernel it approximates, ``exact(X, Y, bandwidth, dtype)``, used where the
  setup needs the kernel itself (the step size, the GCV bandwidth, the curvature) and by
  the tests that check the features by Monte Carlo.

The families' chunk kernels, the block cache (:mod:`ooc_kernels.features.blocks`), the setup
rules and the saved models all take the map from :func:`get_feature_map`.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features.maps import get_feature_map, available_kernels
>>> available_kernels()
['arccos', 'cauchy', 'chi2', 'hellinger', 'hierarchical', 'intersection', 'js', 'laplacian', 'matern', 'poly', 'rbf', 'rbf_orthogonal', 'sum']
>>> rbf = get_feature_map("rbf")
>>> rbf.input_scale(2.0, 3).tolist()
[2.0, 2.0, 2.0]
>>> W, phase = rbf.block(seed=1, block_id=0, n_features_in=3, block_size=4, bandwidth=2.0)
>>> W.shape, phase.shape
((3, 4), (4,))
>>> get_feature_map("matern(nu=2.5)").name
'matern(nu=2.5)'
>>> get_feature_map("laplace")
Traceback (most recent call last):
...
ooc_kernels.exceptions.ValidationError: unknown kernel 'laplace'; the registered kernels are ['arccos', 'cauchy', 'chi2', 'hellinger', 'hierarchical', 'intersection', 'js', 'laplacian', 'matern', 'poly', 'rbf', 'rbf_orthogonal', 'sum']
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ooc_kernels._jit.rff import COS_AFFINE, NONLINEARITIES
from ooc_kernels._jit.segments import LAYOUT_FIELDS
from ooc_kernels.exceptions import InvalidParameterError, ValidationError
from ooc_kernels.features import rbf

__all__ = ["FEATURE_MAPS", "GAUSSIAN", "FeatureMap", "KernelParam", "available_kernels",
           "check_layout",
           "get_feature_map", "kernel_function", "kernel_settings", "kernel_spec"]


@dataclass(frozen=True)
class KernelParam:
    """A parameter of a kernel of the table other than its bandwidth (``kernel_params``).

    Parameters
    ----------
    name : str
        The key in ``kernel_params``.
    values : tuple or None
        The values it may take (each with its own exact form and sampler); None: any
        number of at least ``low``.
    default
        Its value when ``kernel_params`` does not give one.
    low : float
        The smallest value of a parameter without ``values``.
    check : callable, optional
        For a parameter that is not a number: ``check(value)`` returns its canonical form or
        raises a :class:`~ooc_kernels.exceptions.ValidationError` saying what is wrong.
    examples : tuple
        For a parameter with a ``check``: the values :func:`kernel_settings` lists besides
        the default (the settings the tests and the Monte Carlo benchmark run).
    """

    name: str
    values: tuple | None
    default: object
    low: float = 0.0
    check: Callable | None = None
    examples: tuple = ()

    def allows(self, value) -> bool:
        """Whether ``value`` is a value of this parameter.

        Examples
        --------
        >>> from ooc_kernels.features.maps import KernelParam
        >>> p = KernelParam("coef0", None, 1.0)
        >>> p.allows(0.5), p.allows(-1.0), p.allows(True)
        (True, False, False)
        """
        if isinstance(value, (bool, np.bool_)):
            return False
        if self.check is not None:
            try:
                self.check(value)
            except ValidationError:
                return False
            return True
        if self.values is not None:  # the parameter's allowed values (a short tuple), not data
            return value in self.values
        return isinstance(value, (int, float, np.integer, np.floating)) and \
            np.isfinite(value) and value >= self.low

    def describe(self) -> str:
        """The allowed values, for messages."""
        if self.check is not None:
            return f"valid for {self.check.__module__}.{self.check.__name__}"
        if self.values is not None:  # a short tuple
            return f"one of {list(self.values)}"
        return f"a finite number >= {self.low}"


@dataclass(frozen=True)
class FeatureMap:
    """The spec of one kernel's random features.

    Parameters
    ----------
    name : str
        The kernel's name (``kernel=`` of the estimators, saved with a model).
    description : str
        The kernel's formula, for messages and docs.
    nonlinearity : int or tuple
        An id of :data:`ooc_kernels._jit.rff.NONLINEARITIES`, or for a block whose columns
        mix them, a layout (:mod:`ooc_kernels._jit.segments`).
    writer : callable
        ``writer(seed, n_features_in, block_size, input_scale, dtype, affine)`` returns an
        object with ``write(block_id, W_out, phase_out)`` (fills ``W`` (d, r) and ``phase``
        (r,) of block ``block_id`` in ``dtype``; ``input_scale`` is the ``(d,)`` vector of
        :meth:`input_scale`), ``block_nbytes`` and ``scratch_nbytes``, like
        :class:`ooc_kernels.features.rbf.BlockWriter`.
    exact : callable
        ``exact(X, Y, bandwidth, dtype)``: the exact Gram matrix ``k(x_i, y_j)`` of a few
        rows.
    feature_scale : callable
        ``feature_scale(block_size)``: the normalisation of a block.
    kernel_params : tuple of KernelParam
        The kernel's other parameters (``kernel_params=`` of the estimators); a map with
        some is a table row, and ``bind`` makes the map of one setting of them, named
        ``"<row>(<param>=<value>,...)"`` (the name saved with a model).
    bind : callable, optional
        ``bind(**values) -> FeatureMap`` for a row with ``kernel_params``.
    nonnegative_inputs : bool
        The kernel is defined on non-negative inputs (the additive kernels of histograms):
        its exact form refuses negative values and its blocks a centering ``affine``.
    rows : callable, optional
        A row transform applied to every chunk before the blocks (hierarchical features):
        ``rows(X, affine, dtype) -> ndarray (n, row_dim)``, the standardization ``affine``
        folded into it; the blocks are then ``(row_dim, r)``.  None: the blocks read ``X``.
    row_dim : int, optional
        The width of the transformed rows (with ``rows``).
    """

    name: str
    description: str
    nonlinearity: int
    writer: Callable
    exact: Callable
    feature_scale: Callable[[int], float]
    kernel_params: tuple[KernelParam, ...] = ()
    bind: Callable | None = None
    nonnegative_inputs: bool = False
    rows: Callable | None = None
    row_dim: int | None = None

    def __post_init__(self):
        if isinstance(self.nonlinearity, tuple):  # a layout of terms (a mixed sum)
            check_layout(self.name, self.nonlinearity)
        elif self.nonlinearity not in NONLINEARITIES.values():
            raise ValidationError(
                f"feature map {self.name!r} has nonlinearity id {self.nonlinearity!r}; the "
                f"numba kernels know {NONLINEARITIES} (add a branch in "
                "ooc_kernels/_jit/rff.py::features_inplace first)"
            )

    def block_rows(self, n_features_in: int) -> int:
        """The number of rows of this map's blocks on inputs of ``n_features_in`` columns.

        Examples
        --------
        >>> from ooc_kernels.features.maps import GAUSSIAN
        >>> GAUSSIAN.block_rows(3)
        3
        """
        return int(n_features_in) if self.rows is None else int(self.row_dim)

    def map_rows(self, X, affine, dtype) -> np.ndarray:
        """The rows the blocks read: ``X`` itself (C-contiguous, in ``dtype``), or its row
        transform (``rows``) with the standardization ``affine`` folded in.

        Examples
        --------
        >>> import numpy as np
        >>> from ooc_kernels.features.maps import GAUSSIAN
        >>> GAUSSIAN.map_rows(np.ones((2, 3)), None, np.float32).dtype
        dtype('float32')
        """
        if self.rows is None:
            return np.ascontiguousarray(X, dtype=dtype)
        return self.rows(X, affine, dtype)

    def input_scale(self, bandwidth, n_features_in: int) -> np.ndarray:
        """The per-input scale vector ``(d,)`` by which row ``i`` of ``W`` is divided.

        Examples
        --------
        >>> from ooc_kernels.features.maps import GAUSSIAN
        >>> GAUSSIAN.input_scale(0.5, 2).tolist()
        [0.5, 0.5]
        """
        return rbf._check_input_scale(bandwidth, int(n_features_in))

    def make_writer(self, seed, n_features_in, block_size, bandwidth, dtype=np.float64,
                    affine=None):
        """A writer of this map's blocks (see ``writer`` above).

        Examples
        --------
        >>> import numpy as np
        >>> from ooc_kernels.features.maps import GAUSSIAN
        >>> w = GAUSSIAN.make_writer(3, 2, 4, 1.0)
        >>> W, phase = np.empty((2, 4)), np.empty(4)
        >>> w.write(0, W, phase)
        >>> bool(np.array_equal(W, GAUSSIAN.block(3, 0, 2, 4, 1.0)[0]))
        True
        """
        d = int(n_features_in)
        return self.writer(seed, d, block_size, self.input_scale(bandwidth, d), dtype,
                           affine)

    def block(self, seed, block_id, n_features_in, block_size, bandwidth,
              dtype=np.float64):
        """``(W, phase)`` of block ``block_id`` of the model with seed ``seed``.

        Examples
        --------
        >>> from ooc_kernels.features.maps import GAUSSIAN
        >>> from ooc_kernels.features.rbf import block_params
        >>> import numpy as np
        >>> W, b = GAUSSIAN.block(5, 2, 3, 4, 1.5)
        >>> bool(np.array_equal(W, block_params(5, 2, 3, 4, 1.5)[0]))
        True
        """
        w = self.make_writer(seed, n_features_in, block_size, bandwidth, dtype)
        W = np.empty((w.d, w.r), dtype=w.dtype)
        phase = np.empty(w.r, dtype=w.dtype)
        w.write(rbf._check_uint64(block_id, "block_id"), W, phase)
        return W, phase

    def key(self, seed, block_id, n_features_in, block_size, bandwidth, dtype) -> tuple:
        """Cache key of a block: the map's name and everything that determines the block.

        Examples
        --------
        >>> import numpy as np
        >>> from ooc_kernels.features.maps import GAUSSIAN
        >>> GAUSSIAN.key(1, 2, 3, 4, 0.5, np.float32)
        ('rbf', 1, 2, 3, 4, 0.5, '<f4')
        """
        return (self.name, int(seed), int(block_id), int(n_features_in), int(block_size),
                float(bandwidth), np.dtype(dtype).str)

    def gram(self, X, Y, bandwidth, dtype=np.float64) -> np.ndarray:
        """The exact kernel matrix ``k(x_i, y_j)`` of a few rows.

        Examples
        --------
        >>> import numpy as np
        >>> from ooc_kernels.features.maps import GAUSSIAN
        >>> GAUSSIAN.gram(np.zeros((1, 2)), np.ones((1, 2)), 1.0).round(4).tolist()
        [[0.3679]]
        """
        return self.exact(X, Y, bandwidth, dtype)


def check_layout(name, layout) -> None:
    """Refuse a layout that is not ``(T, kind, end, weight, c, ...)`` with known ids,
    increasing ends up to 1 and positive weights.

    Examples
    --------
    >>> from ooc_kernels.features.maps import check_layout
    >>> check_layout("bad", (1.0, 42.0, 1.0, 1.0, 2.0))
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: feature map 'bad' has the layout (1.0, 42.0, 1.0, 1.0, 2.0); each term needs a nonlinearity id of ooc_kernels._jit.rff.NONLINEARITIES, increasing ends reaching 1.0, a positive weight and c in {1, 2} (see ooc_kernels._jit.segments)
    """
    ok = len(layout) >= 1 + LAYOUT_FIELDS and layout[0] >= 1 and \
        len(layout) == 1 + LAYOUT_FIELDS * int(layout[0])
    prev = 0.0
    for t in range(int(layout[0]) if ok else 0):
        kind, end, weight, c = layout[1 + LAYOUT_FIELDS * t:1 + LAYOUT_FIELDS * (t + 1)]
        ok = ok and kind in NONLINEARITIES.values() and prev < end <= 1.0 and weight > 0 \
            and c in (1.0, 2.0)
        prev = end
    if not ok or prev != 1.0:
        raise ValidationError(
            f"feature map {name!r} has the layout {layout!r}; each term needs a nonlinearity "
            "id of ooc_kernels._jit.rff.NONLINEARITIES, increasing ends reaching 1.0, a "
            "positive weight and c in {1, 2} (see ooc_kernels._jit.segments)")


def _gaussian_writer(seed, n_features_in, block_size, input_scale, dtype, affine):
    return rbf.BlockWriter(seed, n_features_in, block_size, input_scale, dtype, affine)


#: The Gaussian RBF kernel ``exp(-||x - x'||^2 / (2 bandwidth^2))``: frequencies
#: ``N(0, bandwidth^-2 I)`` and uniform phases (:mod:`ooc_kernels.features.rbf`), features
#: ``sqrt(2 / r) cos(x @ W + phase)``.
GAUSSIAN = FeatureMap(
    name="rbf",
    description="Gaussian RBF kernel exp(-||x - x'||^2 / (2 bandwidth^2))",
    nonlinearity=COS_AFFINE,
    writer=_gaussian_writer,
    exact=rbf.rbf_kernel,
    feature_scale=rbf.feature_scale,
)

def _spectral_map(name, description, nonlinearity, sampler, exact, sampler_params=None,
                  exact_params=None, feature_scale=rbf.feature_scale, nonnegative=False):
    """A map whose blocks come from a sampler of :mod:`ooc_kernels.features.spectral`
    (``sampler_params``, ``exact_params``: the values of its kernel parameters that the
    sampler and the exact kernel take)."""
    from ooc_kernels.features import spectral

    sample = functools.partial(sampler, **sampler_params) if sampler_params else sampler

    def writer(seed, n_features_in, block_size, input_scale, dtype, affine):
        if nonnegative and affine is not None and np.any(np.asarray(affine[0]) != 0):
            from ooc_kernels.features.structured import centered_input_message
            raise ValidationError(centered_input_message(name))
        return spectral.SpectralWriter(sample, seed, n_features_in, block_size, input_scale,
                                       dtype, affine)

    return FeatureMap(name=name, description=description, nonlinearity=nonlinearity,
                      writer=writer,
                      exact=functools.partial(exact, **exact_params) if exact_params else exact,
                      feature_scale=feature_scale, nonnegative_inputs=nonnegative)


def _unit_scale(block_size: int) -> float:
    """``sqrt(1 / r)``: the scale of maps whose nonlinearity carries no ``sqrt(2)``."""
    return math.sqrt(1.0 / rbf._check_positive_int(block_size, "block_size"))


def _table_rows() -> list[FeatureMap]:
    from ooc_kernels._jit.coupled import LOG_POLAR, POLY2, SQRT
    from ooc_kernels._jit.rff import COS_WIDE, RELU, RELU_SQUARED, STEP
    from ooc_kernels.features import spectral as sp
    from ooc_kernels.features import structured as st

    def matern(nu):
        return _spectral_map(
            f"matern(nu={nu!r})", f"Matern kernel, nu={nu}, length scale bandwidth",
            COS_WIDE if nu < 2 else COS_AFFINE, sp.matern_block, sp.matern_kernel,
            sampler_params={"nu": nu}, exact_params={"nu": nu})

    def arccos(order):
        return _spectral_map(
            f"arccos(order={order!r})", f"arc-cosine kernel of order {order} on x / bandwidth",
            (STEP, RELU, RELU_SQUARED)[order], sp.arccos_block, sp.arccos_kernel,
            exact_params={"order": order})

    def poly(degree, coef0):
        return _spectral_map(
            f"poly(degree={degree!r},coef0={coef0!r})",
            f"polynomial kernel (x.y / bandwidth^2 + {coef0})^{degree}",
            POLY2 + degree - 2, st.poly_block, st.poly_kernel,
            sampler_params={"degree": degree, "coef0": coef0},
            exact_params={"degree": degree, "coef0": coef0}, feature_scale=_unit_scale)

    laplacian = _spectral_map("laplacian", "Laplacian kernel exp(-||x - x'||_1 / bandwidth)",
                              COS_WIDE, sp.laplacian_block, sp.laplacian_kernel)
    cauchy = _spectral_map("cauchy", "Cauchy kernel prod_i 1 / (1 + (x_i - x'_i)^2 / "
                           "bandwidth^2)", COS_AFFINE, sp.cauchy_block, sp.cauchy_kernel)
    from ooc_kernels.features.orthogonal import orthogonal_gaussian_block
    orthogonal = _spectral_map(
        "rbf_orthogonal", "Gaussian RBF kernel exp(-||x - x'||^2 / (2 bandwidth^2)) with "
        "orthogonal random features", COS_AFFINE, orthogonal_gaussian_block, rbf.rbf_kernel)
    rows = [laplacian, cauchy, orthogonal]
    for name, formula in (("chi2", "sum_i 2 x_i y_i / (x_i + y_i)"),
                          ("intersection", "sum_i min(x_i, y_i)"),
                          ("js", "Jensen-Shannon sum_i x_i/2 log2((x_i + y_i) / x_i) + ...")):
        rows.append(_spectral_map(name, f"additive {name} kernel {formula} on x / bandwidth",
                                  LOG_POLAR, st.additive_block, st.ADDITIVE_KERNELS[name],
                                  sampler_params={"kernel": name}, nonnegative=True))
    rows.append(_spectral_map("hellinger", "Hellinger kernel sum_i sqrt(x_i y_i) on x / "
                              "bandwidth", SQRT, st.hellinger_block, st.hellinger_kernel,
                              feature_scale=_unit_scale, nonnegative=True))
    for name, params, make in (
            ("matern", (KernelParam("nu", sp.MATERN_NUS, 1.5),), matern),
            ("arccos", (KernelParam("order", sp.ARCCOS_ORDERS, 1),), arccos),
            ("poly", (KernelParam("degree", st.POLY_DEGREES, 2),
                      KernelParam("coef0", None, 1.0)), poly)):
        default = make(*(p.default for p in params))
        bind = functools.lru_cache(maxsize=None)(
            lambda make=make, names=tuple(p.name for p in params), **kw:
            make(*(kw[n] for n in names)))
        rows.append(dataclasses.replace(default, name=name, kernel_params=params, bind=bind))
    return rows


#: Every registered feature map by name (the estimators' ``kernel`` options).
FEATURE_MAPS: dict[str, FeatureMap] = {GAUSSIAN.name: GAUSSIAN}
FEATURE_MAPS.update((fmap.name, fmap) for fmap in _table_rows())


def available_kernels() -> list[str]:
    """Names of the registered feature maps.

    Examples
    --------
    >>> from ooc_kernels.features.maps import available_kernels
    >>> "rbf" in available_kernels()
    True
    """
    return sorted(FEATURE_MAPS)


def kernel_settings() -> list[str]:
    """Every kernel of the table with every value of its parameters, as :func:`kernel_spec`
    names them (what the tests and the Monte Carlo benchmark run over).

    Examples
    --------
    >>> from ooc_kernels.features.maps import kernel_settings
    >>> kernel_settings()[:4]
    ['arccos(order=0)', 'arccos(order=1)', 'arccos(order=2)', 'cauchy']
    """
    out = []
    for name in available_kernels():
        row = FEATURE_MAPS[name]
        if not row.kernel_params:
            out.append(name)
            continue
        # every combination of the parameters' allowed values
        finite = [p for p in row.kernel_params if p.values is not None]  # short tuples
        for values in itertools.product(*(p.values for p in finite)):  # not data
            out.append(kernel_spec(name, dict(zip((p.name for p in finite), values))))
        for p in row.kernel_params:  # the listed examples of a checked parameter
            out.extend(kernel_spec(name, {p.name: value}) for value in p.examples)
    return out


def _allowed(row: FeatureMap) -> str:
    if not row.kernel_params:
        return f"kernel={row.name!r} takes no kernel_params"
    return "; ".join(f"{p.name!r}: {p.describe()}" for p in row.kernel_params)


def kernel_spec(kernel, kernel_params=None) -> str:
    """The name of the map of ``kernel`` (a registered name) with ``kernel_params`` (a dict,
    or None for the defaults): the row's name, followed by every parameter's value for a
    row with parameters.  This is the ``kernel`` an estimator saves with its model.  A
    :class:`~ooc_kernels.features.Kernel` object stands for ``"sum"`` with its terms (its
    ``kernel_params`` must then be empty).

    Raises
    ------
    ValidationError
        Naming the unknown kernel; an :class:`~ooc_kernels.exceptions.InvalidParameterError`
        (a ValidationError) naming the unknown parameter or the value out of range, with the
        allowed ones.

    Examples
    --------
    >>> from ooc_kernels.features.maps import kernel_spec
    >>> kernel_spec("rbf"), kernel_spec("matern"), kernel_spec("arccos", {"order": 2})
    ('rbf', 'matern(nu=1.5)', 'arccos(order=2)')
    >>> from ooc_kernels.features import Kernel
    >>> kernel_spec(Kernel("rbf") + Kernel("laplacian")) == kernel_spec(
    ...     "sum", {"terms": "1.0*rbf@1.0+1.0*laplacian@1.0"})
    True
    >>> kernel_spec("matern", {"nu": 0.7})
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.InvalidParameterError: kernel_params={'nu': 0.7} is not valid for kernel='matern': 'nu' must be one of [0.5, 1.5, 2.5]; got 0.7
    """
    if isinstance(kernel, str) and hasattr(kernel, "kernel_params"):
        # a Kernel object (features.objects) is the sum of its terms: kernel="sum" with them
        if kernel_params:
            raise InvalidParameterError(
                f"kernel={kernel!r} carries its own parameters; kernel_params must be None "
                f"or {{}} with a Kernel object, got {kernel_params!r}. Put the parameters in "
                "the Kernel, e.g. Kernel('poly', degree=3).")
        return kernel_spec(kernel.kernel_name, kernel.kernel_params)
    row = FEATURE_MAPS.get(kernel) if isinstance(kernel, str) else None
    if row is None:
        raise ValidationError(
            f"unknown kernel {kernel!r}; the registered kernels are {available_kernels()}")
    if kernel_params is None:
        kernel_params = {}
    if not isinstance(kernel_params, dict):
        raise InvalidParameterError(
            f"kernel_params must be a dict or None; got {kernel_params!r}")
    names = {p.name: p for p in row.kernel_params}
    for key, value in kernel_params.items():
        p = names.get(key)
        if p is None:
            raise InvalidParameterError(
                f"kernel_params={kernel_params!r} is not valid for kernel={kernel!r}: unknown "
                f"parameter {key!r}; {_allowed(row)}")
        if p.check is not None and not isinstance(value, bool):
            try:
                p.check(value)
            except ValidationError as exc:
                raise InvalidParameterError(f"kernel_params={kernel_params!r} is not valid for "
                                      f"kernel={kernel!r}: {exc}") from None
        elif not p.allows(value):
            raise InvalidParameterError(
                f"kernel_params={kernel_params!r} is not valid for kernel={kernel!r}: "
                f"{key!r} must be {p.describe()}; got {value!r}")
    if not row.kernel_params:
        return row.name
    values = {p.name: p.check(kernel_params.get(p.name, p.default)) if p.check else
              type(p.default)(kernel_params.get(p.name, p.default)) for p in row.kernel_params}
    return f"{row.name}(" + ",".join(f"{k}={v!r}" for k, v in values.items()) + ")"


_SPEC = re.compile(r"^(\w+)\((.*)\)$")


def _items(text: str) -> list[str]:
    """``text`` cut at the commas outside quotes and parentheses (``key=value`` items)."""
    items, depth, quote, start = [], 0, None, 0
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "()":
            depth += 1 if ch == "(" else -1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    return items + [text[start:]]


@functools.lru_cache(maxsize=256)
def _bound_map(spec: str) -> FeatureMap | None:
    match = _SPEC.match(spec)
    if match is None or match.group(1) not in FEATURE_MAPS:
        return None
    row = FEATURE_MAPS[match.group(1)]
    params = {}
    for item in filter(None, _items(match.group(2))):
        key, _, text = item.partition("=")
        p = next((p for p in row.kernel_params if p.name == key), None)
        if p is None:
            return None
        if p.check is not None:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                return None
        elif p.values is None:  # p.values: the parameter's allowed values (a short tuple)
            try:
                value = float(text)
            except ValueError:
                return None
        else:
            value = next((v for v in p.values if repr(v) == text), None)  # a short tuple
        if value is None:
            return None
        params[key] = value
    if row.bind is None or kernel_spec(row.name, params) != spec:
        return None
    return row.bind(**params)


def get_feature_map(kernel) -> FeatureMap:
    """The feature map of ``kernel``: a registered name (a row with parameters at their
    defaults), a name with parameters as :func:`kernel_spec` writes it, or a
    :class:`FeatureMap`.

    Examples
    --------
    >>> from ooc_kernels.features.maps import get_feature_map, GAUSSIAN
    >>> get_feature_map("rbf") is GAUSSIAN, get_feature_map(GAUSSIAN) is GAUSSIAN
    (True, True)
    >>> get_feature_map("arccos(order=0)").description
    'arc-cosine kernel of order 0 on x / bandwidth'
    """
    if isinstance(kernel, FeatureMap):
        return kernel
    fmap = None
    if isinstance(kernel, str):
        fmap = FEATURE_MAPS.get(kernel)
        if fmap is not None and fmap.kernel_params:
            fmap = _bound_map(kernel_spec(kernel))
        elif fmap is None:
            fmap = _bound_map(kernel)
    if fmap is None:
        raise ValidationError(
            f"unknown kernel {kernel!r}; the registered kernels are {available_kernels()}"
        )
    return fmap


def kernel_function(name, **params):
    """The exact kernel ``k(X, Y)`` of a row of the table, as a function of two arrays.

    Parameters
    ----------
    name : str
        A registered kernel (:func:`available_kernels`).
    **params
        ``bandwidth`` (a positive number, or one per input column; default 1.0) and the
        row's ``kernel_params`` (``nu`` for ``"matern"``, ``order`` for ``"arccos"``).

    Returns
    -------
    callable
        ``k(X, Y) -> ndarray (n, m)`` in float64, for a few rows (it holds the whole Gram
        matrix).

    Examples
    --------
    >>> import numpy as np
    >>> import ooc_kernels as ok
    >>> k = ok.features.kernel_function("matern", nu=0.5, bandwidth=2.0)
    >>> k(np.zeros((1, 1)), np.array([[2.0]])).round(4).tolist()
    [[0.3679]]
    """
    bandwidth = params.pop("bandwidth", 1.0)
    fmap = get_feature_map(kernel_spec(name, params))
    fmap.input_scale(bandwidth, np.size(bandwidth))  # checks it once, early

    def k(X, Y):
        return fmap.gram(X, Y, bandwidth, np.float64)

    k.__doc__ = f"The exact {fmap.description} (bandwidth={bandwidth!r})."
    return k

