"""Predictions chunk by chunk: NumPy for in-memory input, a lazy Dask array for lazy input.

:class:`ChunkedPrediction` is a base of
:class:`~ooc_kernels.estimators.base.ChunkedEstimator`: the prediction path of every
output of every family, from a picklable block function and its payload.  Every chunk is
computed under one BLAS thread (:mod:`ooc_kernels._blas`): OpenBLAS splits a large matrix
product differently with another thread count and gives other last bits, so a prediction
is the same bit for bit whatever the caller's ``threadpool_limits`` or
``OPENBLAS_NUM_THREADS``, lazy or in memory.
"""

from __future__ import annotations

import dask
import numpy as np
from sklearn.utils.validation import check_is_fitted

from ooc_kernels._blas import single_threaded_blas

__all__ = ["ChunkedPrediction"]


class ChunkedPrediction:
    """Decision values and a family's own outputs, chunk by chunk."""

    def _decision_2d(self, X):
        """Decision values ``(n, n_outputs)``: NumPy for in-memory input, a lazy Dask array
        for lazy input (chunk by chunk, NaN/inf named by chunk and row)."""
        check_is_fitted(self, "_state")  # before the payload, which only a fitted model has
        return self._chunk_outputs(X, type(self)._predict_block, self._predict_payload(),
                                   self._n_outputs, self._predict_dtype)

    def _chunk_outputs(self, X, block, payload, n_outputs: int, dtype=np.float64):
        """``block(X_chunk, payload)`` chunk by chunk: an ``(n, n_outputs)`` array, NumPy
        for in-memory input, a lazy Dask array for lazy input.

        The prediction path of every output: decision values (:meth:`_decision_2d`) and a
        family's own outputs (a ratio estimate, a mean and a standard deviation, a
        transform), each from a picklable ``block`` and its ``payload``; wrap the columns
        with :func:`~ooc_kernels.data.inputs.wrap_prediction` to give them the input's
        sample coordinate.
        """
        data, lazy = self._predict_data(X)
        return self._block_outputs(data, lazy, block, payload, n_outputs, dtype)

    def _block_outputs(self, data, lazy: bool, block, payload, n_outputs: int,
                       dtype=np.float64):
        """:meth:`_chunk_outputs` of an input that :meth:`_predict_data` adapted already
        (``data, lazy``: its result), for a family that looks at the data first."""
        dtype = np.dtype(dtype)
        if lazy:
            from ooc_kernels.data.integrity import check_finite_blocks

            model = dask.delayed(payload, traverse=False)
            Xc = check_finite_blocks(data.X, "X")
            return Xc.map_blocks(_apply_block, block, model,
                                 chunks=(Xc.chunks[0], (n_outputs,)), dtype=dtype,
                                 meta=np.empty((0, 0), dtype=dtype))
        step = self.chunk_size  # the caller's validated array, sliced without a copy
        with single_threaded_blas():   # the bits of the lazy path's chunks
            out = [block(data[lo:lo + step], payload)
                   for lo in range(0, data.shape[0], step)]
        return np.concatenate(out) if out else np.zeros((0, n_outputs))


def _apply_block(X, block, payload):
    """``block(X, payload)``: one chunk in, one chunk of outputs out, under one BLAS thread
    (:func:`~ooc_kernels._blas.single_threaded_blas`), so that the outputs' bits do not
    depend on the thread count of the process that computes the chunk."""
    with single_threaded_blas():
        return block(X, payload)
