"""A software prefetch for numba kernels: ask the CPU to bring a row into cache early.

A kernel that visits rows in a random order it knows in advance (DSPDC draws its row from
the next pre-drawn uniform) waits for memory on every row of a matrix larger than the
cache.  :func:`prefetch_row` issues ``llvm.prefetch`` for the cache lines of one row, so the
next row's read overlaps the current row's arithmetic.  A prefetch is a hint: it never
faults, changes no value and returns nothing.

Examples
--------
>>> import numpy as np
>>> import numba
>>> from ooc_kernels._jit.prefetch import prefetch_row
>>> @numba.njit
... def row_sum(A, i):
...     prefetch_row(A, i)
...     return A[i].sum()
>>> float(row_sum(np.arange(12.0).reshape(3, 4), 1))
22.0
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ooc_kernels._jit._cache import njit

__all__ = ["CACHE_LINE", "prefetch_row"]

#: Bytes per cache line assumed when stepping through a row (64 on x86-64 and most ARM).
CACHE_LINE = 64


@intrinsic
def _prefetch_item(typingctx, arr, i, j):
    """``llvm.prefetch`` (read, high locality) of the address of ``arr[i, j]``; no bounds
    check (a prefetch of any address is harmless)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 2):
        return None
    sig = types.void(arr, i, j)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = [context.cast(builder, args[1], signature.args[1], types.intp),
               context.cast(builder, args[2], signature.args[2], types.intp)]
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, idx)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        builder.call(fn, [builder.bitcast(ptr, i8p), ir.Constant(i32, 0),
                          ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, nogil=True)
def prefetch_row(A, i):
    """Prefetch the cache lines of row ``i`` of the 2-d array ``A`` (one per
    :data:`CACHE_LINE` bytes, and its last entry's, when the row is contiguous; else one per
    entry)."""
    p = A.shape[1]
    step = 1
    if A.strides[1] == A.itemsize:
        step = max(1, CACHE_LINE // A.itemsize)
    for j in range(0, p, step):
        _prefetch_item(A, i, j)
    if p > 0:
        _prefetch_item(A, i, p - 1)         # the row's last line, when it is not aligned
