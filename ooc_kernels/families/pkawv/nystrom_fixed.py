"""The Nystrom embedding of a dictionary chosen beforehand: ``phi(x) = K_mm^{-1/2} k_m(x)``.

With the span of ``k(d_1, .), ..., k(d_m, .)`` as the approximation space (the paper's
"beforehand features", the fixed-embedding algorithm of its Appendix H.1 with
``g_j = k(d_j, .)`` and ``Q = K_mm``), the learner is linear ridge on

    ``phi(x) = S_r^{-1/2} U_r^T k_m(x)``,  ``k_m(x) = (k(d_j, x))_{j <= m}``,

where ``K_mm = U S U^T`` is the eigendecomposition of the dictionary's Gram matrix and
``U_r, S_r`` keep the eigenvalues above ``rcond * max(S)`` (a dictionary with repeated or
nearly repeated points has a rank-deficient ``K_mm``: the directions below the floor are
dropped instead of being inverted).  Whatever the floor, ``phi(x)^T phi(x') = k_m(x)^T
K_mm^+ k_m(x')`` with the pseudo-inverse at that floor: the Nystrom approximation of the
kernel, so ridge regression on ``phi`` is kernel ridge regression restricted to the span of
the dictionary, and with every training row in the dictionary it is exact kernel ridge
regression.  ``S_r^{-1/2} U_r^T`` differs from the symmetric ``K_mm^{-1/2}`` of the paper's
eq. (37) by the rotation ``U_r``, which changes neither the Gram matrix of the features nor
any ridge prediction, and has ``r <= m`` columns only.

The kernel is the Gaussian ``k(x, x') = exp(-||x - x'||^2 / (2 sigma^2))``.

The basis (:class:`~ooc_kernels.features.nystroem.FixedNystromBasis`) and the out-of-core
draw of the dictionary (:func:`~ooc_kernels.parallel.sampling.sample_dictionary`) are
shared with the DSG machines; this module names them for the family.
:func:`sample_dictionary` chooses the dictionary out of core: ``m`` rows drawn uniformly
without replacement among all the rows of a chunked array, reading only the chunks that
hold a chosen row, one task each, each returning its few rows.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.families.pkawv.nystrom_fixed import FixedNystromBasis
>>> X = np.random.default_rng(0).uniform(-1, 1, size=(6, 2))
>>> basis = FixedNystromBasis(X, bandwidth=1.0)
>>> Phi = basis.transform(X)
>>> Phi.shape
(6, 6)
>>> from ooc_kernels.features.rbf import rbf_kernel
>>> bool(np.allclose(Phi @ Phi.T, rbf_kernel(X, X, 1.0)))   # exact on the dictionary
True
"""

from ooc_kernels.features.nystroem import (RCOND, TILE_ROWS, FixedNystromBasis,
                                            gaussian_cross_kernel)
from ooc_kernels.parallel.sampling import sample_dictionary

__all__ = ["FixedNystromBasis", "RCOND", "TILE_ROWS", "gaussian_cross_kernel",
           "sample_dictionary"]
