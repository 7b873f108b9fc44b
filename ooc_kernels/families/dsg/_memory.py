"""Memory a DSG fit needs at least, checked before anything is allocated.

Examples
--------
>>> from ooc_kernels.families.dsg._memory import fit_memory
>>> fit_memory(4096, 256, 256, 1, 10, False)
(98304, 544768)
"""

from __future__ import annotations

from ooc_kernels._memory import physical_memory, size_text as _size
from ooc_kernels.exceptions import ModelTooLargeError

__all__ = ["MODEL_COPIES", "check_fit_memory", "fit_memory", "physical_memory"]


#: Copies of the coefficients a fit holds at once: the state a round starts from, a task's
#: updated copy (its delta) and the next state (each twice with an averaged iterate).
MODEL_COPIES = 3


def fit_memory(n_features: int, block_size: int, batch_rows: int, n_outputs: int,
               n_features_in: int, average: bool) -> tuple[int, int]:
    """The least memory a DSG fit needs, in bytes: ``(model, step)``.

    ``model``: :data:`MODEL_COPIES` copies of the coefficients, ``n_features * n_outputs``
    float64 values each, twice that with an averaged iterate.  ``step``: one feature block
    of one mini-batch of ``batch_rows`` rows (``batch_rows * block_size`` values: the
    smaller of ``batch_size`` and the data's rows) and its random weights
    (``n_features_in * block_size`` values), float64.  A fit holds more (the feature cache
    under its budget, the chunks of a round), so these are lower bounds: a fit that needs
    more than the machine has cannot run.

    Examples
    --------
    >>> from ooc_kernels.families.dsg._memory import fit_memory
    >>> fit_memory(4096, 256, 256, 1, 10, True)
    (196608, 544768)
    """
    per_feature = 8 * n_outputs * (2 if average else 1) * MODEL_COPIES
    step = 8 * block_size * (batch_rows + n_features_in)
    return n_features * per_feature, step


def check_fit_memory(est, *, n_outputs: int, n_features_in: int, n_samples: int,
                     average: bool, limit: int | None = None,
                     n_features: int | None = None, batch_size: int | None = None) -> None:
    """Refuse, before allocating anything, a fit whose model and step need more than the
    machine's physical memory (``limit``: that, by default).

    ``n_outputs``, ``n_features_in``, ``n_samples``: the data's (1, 1 and 0 give the least
    any data could need, checked before the data is read).  ``n_features``: the model's
    features, when not ``est.n_features`` (``"auto"`` resolved for the data);
    ``batch_size``: its batch, when not ``est.batch_size`` (with ``n_samples=0`` no row is
    held, and an unresolved ``"auto"`` is not read).

    Raises
    ------
    ModelTooLargeError
        Naming the values of ``n_features``, ``block_size`` and ``batch_size``, the bytes
        they need, the memory there is and what to lower.
    """
    limit = physical_memory() if limit is None else limit
    if limit is None:
        return
    n_features = int(est.n_features if n_features is None else n_features)
    block_size = int(est.block_size)
    batch_size = est.batch_size if batch_size is None else batch_size
    batch_rows = min(int(batch_size), n_samples) if n_samples else 0
    model, step = fit_memory(n_features, block_size, batch_rows, n_outputs, n_features_in,
                             average)
    if model + step <= limit:
        return
    if model >= step:
        per_feature = model // n_features
        fits = max(limit - step, 0) // per_feature // block_size * block_size
        fix = (f"lower n_features (at most n_features={fits}, a multiple of "
               f"block_size={block_size}, fits; the default is 4096 up to 50,000 rows)"
               if fits >= 1 else
               f"lower n_features and block_size={block_size}")
        what = (f"n_features={n_features} needs {_size(model)} for the model's "
                f"coefficients ({n_features} features x {n_outputs} output(s) x 8 bytes, "
                f"held {model // (8 * n_features * n_outputs)} times during a fit)")
    else:
        fix = "lower batch_size and block_size (the defaults are 256 each)"
        what = (f"batch_size={batch_size} with block_size={block_size} needs "
                f"{_size(step)} for one step's feature block ({batch_rows} rows x "
                f"{block_size} features x 8 bytes, and the block's random weights)")
    raise ModelTooLargeError(
        f"{what}; this machine has {_size(limit)} of memory, so the fit cannot run. "
        f"{fix[0].upper()}{fix[1:]}.")
