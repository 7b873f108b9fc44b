"""An atomic counter for numba kernels: threads of a parallel region take work items in turn.

A parallel region whose items are split among the threads up front (numba's ``prange``
gives each thread an equal share, decided before the region starts) waits for its slowest
thread: when another process or one of the process's own threads (a read, Zarr's decoding)
takes a core from one kernel thread, its partners finish their share and wait.  With
:func:`claim`, every thread of the region takes the next item from a shared counter until
none is left, so a thread that was held up takes fewer items and the others more.  Which
thread runs an item changes no value when every item writes only its own outputs: the
result is the same for any thread count and any order of the claims.

Examples
--------
>>> import numpy as np
>>> import numba
>>> from ooc_kernels._jit.atomic import claim
>>> @numba.njit
... def take_all(counter, n):
...     seen = []
...     t = claim(counter, 0)
...     while t < n:
...         seen.append(t)
...         t = claim(counter, 0)
...     return seen
>>> counter = np.zeros(1, dtype=np.int64)
>>> take_all(counter, 3), int(counter[0])
([0, 1, 2], 4)
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["claim"]


@intrinsic
def claim(typingctx, counter, i):
    """``counter[i] += 1`` as one atomic operation (sequentially consistent), returning the
    value before the addition: each call of any thread gets a different value.  ``counter``
    is a 1-d int64 array; ``i`` is not bounds-checked."""
    if not (isinstance(counter, types.Array) and counter.ndim == 1
            and counter.dtype == types.int64 and isinstance(i, types.Integer)):
        return None
    sig = types.int64(counter, i)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        idx = context.cast(builder, args[1], signature.args[1], types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [idx])
        one = context.get_constant(types.int64, 1)
        return builder.atomic_rmw("add", ptr, one, "seq_cst")

    return sig, codegen
