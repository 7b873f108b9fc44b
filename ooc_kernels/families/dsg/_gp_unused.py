"""The DSG iteration parameters that a ``mean="features"`` Gaussian process does not use.

:class:`~ooc_kernels.families.dsg.gaussian_process.DSGGaussianProcessRegressor` with
``mean="features"`` computes the posterior mean exactly on the random features of the
variance, from one pass: no DSG epoch runs.  Its DSG parameters then act only where a part
of the fit still runs the DSG machinery:

* ``variance="operator"``: the operator's passes take their step sizes from
  ``learning_rate``, ``eta0``, ``t0`` and ``batch_size`` and run ``max_iter`` passes;
* ``bandwidth="auto"`` or ``"ard"`` on more than
  :data:`~ooc_kernels.families.dsg._bandwidth.GCV_MAX_ROWS` rows: the set-up's kernel
  ridge (leave-one-out) uses ``n_features`` random features; on more than
  :data:`~ooc_kernels.families.dsg._large_data.LARGE_DATA_ROWS` rows (or when the sample is
  too small for leave-one-out) short DSG trial fits choose the bandwidth with ``dtype``,
  ``n_features``, ``batch_size``, ``learning_rate``, ``eta0``, ``t0`` and ``average``;
* ``warm_start``: a second fit keeps the first one's set-up (bandwidth, standardization).

Everything else of :data:`ITERATION_PARAMS` has no effect on the fitted model:
:func:`unused_params` names those set away from their defaults, for the warning at fit.

Examples
--------
>>> from ooc_kernels import DSGGaussianProcessRegressor
>>> gp = DSGGaussianProcessRegressor(max_iter=50, tol=1e-4, shuffle=False)
>>> unused_params(gp, n_samples=300, chunk_sizes=(300,))
['max_iter', 'tol', 'shuffle']
>>> unused_params(gp.set_params(variance="operator"), n_samples=300, chunk_sizes=(300,))
['tol', 'shuffle']
"""

from __future__ import annotations

import inspect

from ooc_kernels.families.dsg._ard import bandwidth_mode
from ooc_kernels.families.dsg._bandwidth import GCV_MAX_ROWS
from ooc_kernels.families.dsg._large_data import LARGE_DATA_ROWS
from ooc_kernels.families.dsg._setup_loo import LOO_MIN_ROWS

__all__ = ["ITERATION_PARAMS", "unused_params", "unused_message"]

#: The parameters of the DSG iteration (the rounds of ``mean="dsg"``).
ITERATION_PARAMS = ("dtype", "n_features", "batch_size", "learning_rate", "eta0", "t0",
                    "average", "max_iter", "tol", "n_iter_no_change", "early_stopping",
                    "validation_fraction", "chunks_per_round", "shuffle", "shuffle_chunks")

#: Where a parameter still applies with ``mean="features"`` (for the warning's hint).
_TRIALS = f"bandwidth='auto' or 'ard' on more than {LARGE_DATA_ROWS} rows"
_WHERE = {
    "max_iter": "variance='operator'",
    "batch_size": f"variance='operator' or {_TRIALS}",
    "learning_rate": f"variance='operator' or {_TRIALS}",
    "eta0": f"variance='operator' or {_TRIALS}",
    "t0": f"variance='operator' or {_TRIALS}",
    "average": _TRIALS,
    "dtype": _TRIALS,
    "n_features": f"bandwidth='auto' or 'ard' on more than {GCV_MAX_ROWS} rows",
}


def _is_default(value, default) -> bool:
    try:
        same = bool(value == default)
    except (TypeError, ValueError):  # an array compared with a number
        return False
    return same and isinstance(value, bool) == isinstance(default, bool)


def _applies(est, n_samples: int, chunk_sizes) -> set:
    """The parameters of :data:`ITERATION_PARAMS` that act on a ``mean="features"`` fit of
    ``est`` on ``n_samples`` rows in chunks of ``chunk_sizes`` rows."""
    used = set()
    if est.variance == "operator":
        used |= {"max_iter", "batch_size", "learning_rate", "eta0", "t0"}
    if bandwidth_mode(est.bandwidth) in ("auto", "ard") and n_samples > GCV_MAX_ROWS:
        used.add("n_features")  # the set-up's kernel ridge on n_features random features
        # leave-one-out unless the rows are many, or the sample of (up to 8 chunks) small
        loo_sure = (n_samples <= LARGE_DATA_ROWS and est.on_invalid == "error"
                    and sum(sorted(chunk_sizes)[:8]) >= LOO_MIN_ROWS)
        if not loo_sure:  # the trial fits run DSG
            used |= {"dtype", "batch_size", "learning_rate", "eta0", "t0", "average"}
    return used


def unused_params(est, *, n_samples: int, chunk_sizes) -> list[str]:
    """The parameters of :data:`ITERATION_PARAMS` that ``est`` (a ``mean="features"``
    Gaussian process) sets away from their defaults and that have no effect on its fit on
    ``n_samples`` rows in chunks of ``chunk_sizes`` rows; ``[]`` with ``mean="dsg"``."""
    if est.mean != "features":
        return []
    defaults = {k: p.default for k, p in inspect.signature(type(est)).parameters.items()}
    used = _applies(est, int(n_samples), tuple(chunk_sizes))
    return [name for name in ITERATION_PARAMS if name not in used
            and not _is_default(getattr(est, name), defaults[name])]


def unused_message(est, names) -> str:
    """The warning that ``names`` (from :func:`unused_params`) have no effect."""
    settings = ", ".join(f"{name}={getattr(est, name)!r}" for name in names)
    hints = [f"{name} acts with {_WHERE[name]}" for name in names if name in _WHERE]
    return (
        f"{type(est).__name__}: {settings} {'has' if len(names) == 1 else 'have'} no effect "
        f"with mean='features' (variance={est.variance!r}, bandwidth="
        f"{est.bandwidth if isinstance(est.bandwidth, str) else 'fixed'!r}): the mean "
        "is exact on the random features, from one pass, and no DSG epoch runs. "
        + (f"({'; '.join(hints)}.) " if hints else "")
        + "They set the DSG iteration of mean='dsg': pass mean='dsg' (with a numeric "
        "noise) for them to apply, or leave them at their defaults.")
