"""Orthogonal random features of the Gaussian kernel (Yu et al., 2016, "Orthogonal Random
Features"): the ``rbf_orthogonal`` row of the feature-map table
(:mod:`ooc_kernels.features.maps`).

The kernel is the Gaussian RBF kernel ``exp(-||x - x'||^2 / (2 bandwidth^2))`` of the
``rbf`` row, and the features are the same ``sqrt(2 / r) cos(x @ W + phase)``; only the
frequencies differ.  Instead of ``r`` independent ``N(0, I_d)`` columns, the columns of a
block come in groups of ``d`` (the last group of a block keeps the ``r mod d`` columns it
needs; a block of ``r < d`` columns is one group of ``r``):

* the directions of a group are orthonormal: the ``Q`` factor of the QR decomposition of a
  ``d x c`` standard Gaussian matrix ``G`` (``c`` columns), with column ``k`` multiplied by
  the sign of ``R[k, k]``, so that the directions are uniform (Haar) on the sphere and
  orthogonal to each other;
* the lengths are independent ``chi(d)`` draws, the norms of the columns of a second
  ``d x c`` standard Gaussian matrix.

Each column is then marginally ``N(0, I_d)``, as an ``rbf`` column, so every feature is an
unbiased estimate of the kernel; orthogonal directions within a group are negatively
correlated in ``cos(w.(x - x'))``, which lowers the variance of the block's Gram estimate
below that of ``r`` independent columns (Yu et al., Theorem 1).  Row ``i`` of ``W`` is then
divided by the input scale ``bandwidth[i]``.

Block ``j`` of a model with feature seed ``s`` is a pure function of ``(s, j)``: its ``2 d r``
normals are the Box-Muller normals of the raw words of ``numpy.random.Philox(key=[s, j])``
(:func:`ooc_kernels.features.rbf.philox_normals`): normals ``0 .. dr-1`` fill ``G`` (d, r) in
C order, of which group ``k`` is columns ``kd .. min((k+1)d, r) - 1``; normals
``dr .. 2dr-1`` fill the length matrix (d, r) the same way; the ``r`` words after the
normals' ``2 dr`` words give the phases ``2 pi u``.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features.orthogonal import orthogonal_gaussian_block
>>> W, b = orthogonal_gaussian_block(3, 0, n_features_in=4, block_size=8,
...                                  input_scale=np.ones(4))
>>> W.shape, b.shape
((4, 8), (8,))
>>> D = W[:, :4] / np.linalg.norm(W[:, :4], axis=0)  # the first group's directions
>>> bool(np.allclose(D.T @ D, np.eye(4)))
True
"""

from __future__ import annotations

import numpy as np

from ooc_kernels.features.rbf import _TWO_PI, _box_muller, _raw_words, _to_unit

__all__ = ["orthogonal_gaussian_block", "orthogonal_directions"]


def orthogonal_directions(G: np.ndarray) -> np.ndarray:
    """Orthonormal directions of the columns of groups of ``d`` of a Gaussian ``G`` (d, r):
    per group, the sign-corrected ``Q`` factor of its QR decomposition.

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.orthogonal import orthogonal_directions
    >>> G = np.random.default_rng(0).normal(size=(3, 5))
    >>> Q = orthogonal_directions(G)
    >>> bool(np.allclose(Q[:, :3].T @ Q[:, :3], np.eye(3))), Q[:, 3:].shape
    (True, (3, 2))
    >>> bool(np.allclose(np.linalg.norm(Q, axis=0), 1.0))
    True
    """
    d, r = G.shape
    Q = np.empty_like(G)
    for start in range(0, r, d):
        q, rr = np.linalg.qr(G[:, start:start + d])
        signs = np.sign(np.diag(rr))
        signs[signs == 0] = 1.0
        Q[:, start:start + d] = q * signs[None, :]
    return Q


def orthogonal_gaussian_block(seed, block_id, n_features_in, block_size, input_scale):
    """Float64 ``(W, phase)`` of a block of orthogonal Gaussian frequencies (see the module
    docstring for the layout).

    Examples
    --------
    >>> import numpy as np
    >>> from ooc_kernels.features.orthogonal import orthogonal_gaussian_block
    >>> W, _ = orthogonal_gaussian_block(0, 0, 2, 20_000, np.ones(2))
    >>> bool(abs(W.var() - 1.0) < 0.05)       # each column is N(0, I) marginally
    True
    """
    d, r = int(n_features_in), int(block_size)
    n = 2 * d * r  # an even count: exactly d r Box-Muller pairs
    words = _raw_words(seed, block_id, n + r)
    g = _box_muller(words[:n], n)
    G = g[:d * r].reshape(d, r)
    lengths = np.linalg.norm(g[d * r:].reshape(d, r), axis=0)
    W = orthogonal_directions(G) * lengths[None, :]
    return W / np.asarray(input_scale, dtype=np.float64)[:, None], _TWO_PI * _to_unit(words[n:])
