"""The one check for NaN/inf values in a chunk, and its error naming the chunk and row.

Used by the chunk tasks of the solvers, by the lazy per-chunk checks of
:mod:`ooc_kernels.data.integrity` and by the median-bandwidth sample of the estimators.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels._checks import check_finite
>>> check_finite(np.array([[1.0, np.inf]]), "X", chunk=3)
Traceback (most recent call last):
...
ooc_kernels.exceptions.InvalidDataError: X has a non-finite value (inf) in chunk 3, row 0, feature 1; remove or impute the invalid values before fitting.
"""

from __future__ import annotations

import numpy as np

from ooc_kernels.exceptions import InvalidDataError

__all__ = ["check_finite", "non_finite_error"]


def non_finite_error(var: str, value, chunk, row: int, feature: int | None = None,
                     context: str = "") -> InvalidDataError:
    """The error for a NaN/inf ``value`` of variable ``var`` at ``chunk``/``row``."""
    where = f"chunk {chunk}, row {row}" + ("" if feature is None else f", feature {feature}")
    shown = "" if value is None else f" ({value!r})"
    what = "targets" if var == "y" else "values"
    return InvalidDataError(
        f"{var} has a non-finite value{shown} in {where}{context}; remove or impute the "
        f"invalid {what} before fitting."
    )


def check_finite(values: np.ndarray, var: str, chunk) -> None:
    """Raise :func:`non_finite_error` for the first NaN/inf of one chunk (1-D or 2-D)."""
    values = np.asarray(values)  # one chunk
    if values.dtype.kind not in "fc" or values.size == 0:
        return
    ok = np.isfinite(values)
    if ok.all():
        return
    pos = tuple(int(v) for v in np.argwhere(~ok)[0])
    raise non_finite_error(var, values[pos].item(), chunk, pos[0],
                           pos[1] if len(pos) > 1 else None)
