"""The rows a DSG estimator's set-up samples (bandwidth, standardization, step size): the
draw, which :meth:`~ooc_kernels.estimators.base.ChunkedEstimator._start` reads in one
computation with the classes of ``y``, and the sample made from the rows read."""

from __future__ import annotations

import numpy as np

from ooc_kernels._checks import SampleOrigin
from ooc_kernels._seeds import derive_seed
from ooc_kernels.estimators._inputs import weight_scale, zero_weights_error
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.families.dsg._ard import bandwidth_mode
from ooc_kernels.families.dsg._bandwidth import GCV_MAX_ROWS, SAMPLE_ROWS
from ooc_kernels.families.dsg._common import finite_sample_rows
from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.sampling import RowDraw, draw_rows

__all__ = ["check_sampled_weights", "sample_draw", "setup_sample"]


def sample_draw(est, data: ChunkedData) -> RowDraw:
    """Rows from up to 8 random chunks of ``X``, ``y`` (and ``sample_weight``), unread;
    every row of a small data set (at most ``GCV_MAX_ROWS`` rows, whatever its chunks)."""
    n_rows = SAMPLE_ROWS if bandwidth_mode(est.bandwidth) in ("auto", "ard") else 2000
    max_chunks = 8
    if data.n_samples <= GCV_MAX_ROWS:
        max_chunks = data.n_chunks
        n_rows = max(data.chunk_sizes) * data.n_chunks
    names = ("X", "y", "sample_weight") if "sample_weight" in data else ("X", "y")
    return draw_rows(data, n_rows=n_rows, max_chunks=max_chunks,
                     seed=derive_seed(est.random_seed_, 3), var=names)


def setup_sample(est, data: ChunkedData, sched, read=None):
    """``(X rows, y rows, row weights, origin)`` of :func:`sample_draw`'s rows, the rows
    with NaN or inf left out under ``on_invalid="skip"``.  ``read``: the rows as
    :meth:`RowDraw.rows` returned them (``return_index=True``) when they were read with
    other computations; otherwise they are read here, every variable in one computation."""
    if read is None:
        read = sample_draw(est, data).read(sched, return_index=True)
    rows, chunk_of, row_of = read
    sample, y = rows[:2]
    # the sampled rows' weights (at most the set-up sample's rows), already read
    w = np.asarray(rows[2], dtype=np.float64) if len(rows) > 2 else np.ones(len(sample))
    check_sampled_weights(est, data, w, every_row=data.n_samples <= GCV_MAX_ROWS)
    origin = SampleOrigin(chunk_of, row_of,
                          "the rows sampled for the bandwidth and the step size")
    keep = finite_sample_rows(sample, y, chunk_of, row_of, est.on_invalid)
    if keep is not None:
        return sample[keep], y[keep], w[keep], origin.keep(keep)
    return sample, y, w, origin


#: How to rescale DSG weights: they count as copies of their rows (alpha="auto" and the
#: step size follow their total), so their scale is part of the model.
_RESCALE = ("rescale the weights to the numbers of copies of their rows they stand for, "
            "e.g. divide them by their mean (alpha='auto' and the step size follow their "
            "total, so their scale is part of the model, not only their ratios)")


def check_sampled_weights(est, data: ChunkedData, w: np.ndarray, *, every_row: bool) -> None:
    """Refuse weights ``w`` of the set-up's rows that are all 0: when ``every_row`` (the
    set-up read every row), the data has nothing to learn from; otherwise a bandwidth
    measured from the data (a string ``bandwidth``) has no row to measure on.  Other
    lazy weights are summed by the fit's first epoch, which refuses a sum of 0.  Weights
    the set-up scales to mean 1 by the inverse of their mean are refused where their sum
    overflows or is too small for that inverse (:func:`weight_scale`)."""
    if "sample_weight" not in data:
        return
    if (w > 0).any():
        with np.errstate(over="ignore"):
            total = float(np.sum(w))
        weight_scale(total, len(w), f"all {len(w)} rows, read by the set-up" if every_row
                     else f"the {len(w)} rows the set-up sampled", _RESCALE)
        return
    if every_row:
        raise zero_weights_error(f"all {data.n_samples} rows, read by the set-up")
    if isinstance(est.bandwidth, str):
        raise ValidationError(
            f"sample_weight is zero on every one of the {len(w)} rows sampled to measure "
            f"bandwidth={est.bandwidth!r}, so no row is left to measure distances on; give "
            "some rows of every chunk a positive weight, or pass a numeric bandwidth.")
