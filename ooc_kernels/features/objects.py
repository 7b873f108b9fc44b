"""Kernels of the table as objects that add up: ``Kernel("rbf") + Kernel("poly", degree=2)``.

A :class:`Kernel` is the canonical ``terms`` string of ``kernel="sum"``
(:mod:`ooc_kernels.features.sums`), so it goes wherever that string goes
(``kernel_params={"terms": ...}``), is cloned, compared and saved with a model as the string
itself, and loads back equal to the object.

Examples
--------
>>> import ooc_kernels as ok
>>> k = 0.5 * ok.features.Kernel("rbf") + 0.5 * ok.features.Kernel("poly", degree=2,
...                                                                   bandwidth_multiplier=2)
>>> k
Kernel('0.5*rbf@1.0+0.5*poly(degree=2,coef0=1.0)@2.0')
>>> k == "0.5*rbf@1.0+0.5*poly(degree=2,coef0=1.0)@2.0"
True
>>> model = ok.DSGRegressor(kernel="sum", kernel_params={"terms": k})
"""

from __future__ import annotations

from numbers import Real

from ooc_kernels.exceptions import ValidationError

__all__ = ["Kernel"]


class Kernel(str):
    """A weighted sum of kernels of the table (one term, or the sum of several).

    Parameters
    ----------
    name : str
        A kernel of the table (``"rbf"``, ``"poly"``, ...; not ``"sum"``), or a ``terms``
        string (``"0.5*rbf+0.5*laplacian@2"``) when no other argument is given.
    weight : float, default=1.0
        The term's weight (positive).
    bandwidth_multiplier : float, default=1.0
        The term's bandwidth as a multiple of the estimator's ``bandwidth``.
    **params
        The kernel's ``kernel_params`` (``degree=3``, ``nu=2.5``, ...).

    Examples
    --------
    >>> from ooc_kernels.features import Kernel
    >>> Kernel("matern", nu=2.5, weight=2.0)
    Kernel('2.0*matern(nu=2.5)@1.0')
    >>> (Kernel("rbf") + Kernel("rbf", bandwidth_multiplier=4)).terms
    [(1.0, 'rbf', 1.0), (1.0, 'rbf', 4.0)]
    >>> 3 * Kernel("rbf")
    Kernel('3.0*rbf@1.0')
    >>> Kernel("rbf") + 1
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: a Kernel adds up with a Kernel or a terms string such as '0.5*rbf+0.5*poly@2'; got 1
    """

    def __new__(cls, name, weight=1.0, bandwidth_multiplier=1.0, **params):
        from ooc_kernels.features.maps import kernel_spec
        from ooc_kernels.features.sums import canonical_terms
        if isinstance(name, str) and not params and weight == 1.0 and \
                bandwidth_multiplier == 1.0:
            return super().__new__(cls, canonical_terms(name))
        for key, value in (("weight", weight), ("bandwidth_multiplier", bandwidth_multiplier)):
            if isinstance(value, bool) or not isinstance(value, Real):
                raise ValidationError(f"Kernel {key} must be a positive number; got {value!r}")
        spec = kernel_spec(name, params)
        return super().__new__(cls, canonical_terms(
            f"{float(weight)!r}*{spec}@{float(bandwidth_multiplier)!r}"))

    #: The row of the table a Kernel object stands for (with :attr:`kernel_params`).
    kernel_name = "sum"

    @property
    def kernel_params(self) -> dict:
        """``{"terms": self}`` as a plain string: with :attr:`kernel_name`, the estimator
        parameters this object stands for when passed as ``kernel``."""
        return {"terms": str(self)}

    @property
    def terms(self) -> list[tuple[float, str, float]]:
        """``[(weight, kernel spec, bandwidth multiplier), ...]``."""
        from ooc_kernels.features.sums import parse_terms
        return parse_terms(str(self))

    def __add__(self, other):
        if not isinstance(other, str):
            raise ValidationError("a Kernel adds up with a Kernel or a terms string such as "
                                  f"'0.5*rbf+0.5*poly@2'; got {other!r}")
        return Kernel(str(self) + "+" + str(Kernel(other)))

    def __radd__(self, other):
        if not isinstance(other, str):
            raise ValidationError("a Kernel adds up with a Kernel or a terms string such as "
                                  f"'0.5*rbf+0.5*poly@2'; got {other!r}")
        return Kernel(other) + self

    def __mul__(self, factor):
        if isinstance(factor, bool) or not isinstance(factor, Real) or not factor > 0:
            raise ValidationError(f"a Kernel is multiplied by a positive number (its "
                                  f"weights); got {factor!r}")
        return Kernel("+".join(f"{w * float(factor)!r}*{spec}@{m!r}"
                               for w, spec, m in self.terms))

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"Kernel({str(self)!r})"

    def __reduce__(self):
        return (Kernel, (str(self),))

    def __deepcopy__(self, memo):
        return self

    def __copy__(self):
        return self
