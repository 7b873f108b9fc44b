"""The feature basis of :class:`~ooc_kernels.families.dsg.one_class.DSGOneClassSVM`:
random features regenerated from seeds (``basis="random"``) or a Nystrom basis built from
the training rows (``basis="nystroem"``).

``basis="nystroem"`` draws ``n_features`` landmarks uniformly among all the training rows
by seed (:func:`~ooc_kernels.parallel.sampling.sample_dictionary`: only the chunks that
hold a drawn row are read, and the draw does not depend on the chunking), standardizes
them as the model sees its rows, and whitens them
(:class:`~ooc_kernels.features.nystroem.FixedNystromBasis`: ``phi(x) = k(x, L) U_r
S_r^{-1/2}``, ``K_LL = U S U^T`` with the eigenvalues at or below ``1e-10`` of the largest
dropped).  ``phi(x)^T phi(x')`` is the Nystrom approximation of the Gaussian kernel.  The
model is linear on ``phi``; its steps apply ``C = U_r S_r^{-1/2}`` to the coefficients
rather than form ``phi`` of every row
(:func:`~ooc_kernels.families.dsg.kernels_one_class.one_class_fixed_update`).  The
landmarks are saved with the model (the array ``landmarks``, checksummed like the
coefficients) and the whitening is computed again on load.

Examples
--------
>>> import numpy as np
>>> import ooc_kernels as ok
>>> X = np.random.default_rng(0).normal(size=(400, 3))
>>> det = ok.DSGOneClassSVM(nu=0.1, basis="nystroem", n_features=64, block_size=32,
...                         random_state=0, scheduler="sync").fit(X)
>>> det.landmarks_.shape, det.coef_.shape
((64, 3), (2, 32, 1))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ooc_kernels.exceptions import ModelFormatError, ValidationError
from ooc_kernels.features.maps import kernel_spec
from ooc_kernels.features.nystroem import RCOND, FixedNystromBasis
from ooc_kernels.parallel.sampling import sample_dictionary

__all__ = ["BASES", "check_basis", "draw_nystroem_basis", "restore_basis", "saved_basis"]

#: The values of ``DSGOneClassSVM(basis=...)``.
BASES = ("auto", "random", "nystroem")


def check_basis(estimator) -> None:
    """Refuse a ``basis`` the estimator cannot fit with: an unknown name, or
    ``"nystroem"`` with a kernel other than the Gaussian ``"rbf"`` (the basis whitens the
    Gaussian kernel's Gram matrix of the landmarks) or with ``kernel_params``.

    Raises
    ------
    ValidationError
    """
    basis = estimator.basis
    if not isinstance(basis, str) or basis not in BASES:
        raise ValidationError(
            f"basis must be one of {list(BASES)}, got {basis!r}; 'random' for random "
            "features regenerated from seeds, 'nystroem' for a basis built from n_features "
            "training rows, 'auto' for 'nystroem' with kernel='rbf' and 'random' otherwise.")
    if basis == "nystroem" and kernel_spec(estimator.kernel,
                                           estimator.kernel_params) != "rbf":
        raise ValidationError(
            f"basis='nystroem' is built for the Gaussian kernel, got kernel="
            f"{estimator.kernel!r} with kernel_params={estimator.kernel_params!r}; use "
            "kernel='rbf' without kernel_params, or basis='random' for other kernels.")


def draw_nystroem_basis(X, n_landmarks: int, *, seed: int, scheduler: Any, on_invalid: str,
                        affine, bandwidth: float) -> FixedNystromBasis:
    """The Nystrom basis of ``n_landmarks`` rows of ``X`` (a chunked array, read out of
    core) drawn by ``seed``, in the units the model sees (``affine``: ``(shift, scale)``
    of the standardization, or None) at the Gaussian ``bandwidth``.

    Examples
    --------
    >>> import dask.array as da
    >>> X = da.random.default_rng(0).normal(size=(100, 2), chunks=30)
    >>> b = draw_nystroem_basis(X, 8, seed=1, scheduler="sync", on_invalid="error",
    ...                         affine=None, bandwidth=1.0)
    >>> b.dictionary.shape, b.n_components
    ((8, 2), 8)
    """
    L = sample_dictionary(X, int(n_landmarks), seed=seed, scheduler=scheduler,
                          on_invalid="skip" if on_invalid == "skip" else "error")
    if affine is not None:
        L = (L - affine[0]) / affine[1]
    return FixedNystromBasis(L, bandwidth, rcond=RCOND)


def saved_basis(basis) -> tuple[dict, dict]:
    """``(arrays, meta)`` that save a Nystrom basis: the landmarks (in the units the
    model sees) and ``{"kind", "rcond", "n_components"}``."""
    return ({"landmarks": np.asarray(basis.dictionary, dtype=np.float64)},
            {"kind": "nystroem", "rcond": float(basis.rcond),
             "n_components": int(basis.n_components)})


def restore_basis(arrays: dict, meta, config, where: str):
    """The basis a saved model was fitted on: None (random features; a model saved
    without a basis), or the Nystrom basis of its landmarks.

    Raises
    ------
    ModelFormatError
        Only one of the metadata and the landmarks is there, or they disagree with the
        model's configuration.
    """
    landmarks = arrays.get("landmarks")
    if meta is None and landmarks is None:
        return None
    if meta is None or landmarks is None:
        raise ModelFormatError(
            f"{where}: the model has only one of the basis metadata and the landmarks "
            "array; re-save the model or restore it from a backup.")
    if not isinstance(meta, dict) or meta.get("kind") != "nystroem" or \
            not isinstance(meta.get("rcond"), float) or not 0 <= meta["rcond"] < 1:
        raise ModelFormatError(
            f"{where}: the basis metadata is {meta!r}; it must be {{'kind': 'nystroem', "
            "'rcond': a number in [0, 1), 'n_components': ...}. Re-save the model or "
            "restore it from a backup.")
    L = np.asarray(landmarks)
    if L.ndim != 2 or L.shape[1] != config.n_features_in or not len(L) or \
            len(L) > config.n_blocks * config.block_size or not np.isfinite(L).all():
        raise ModelFormatError(
            f"{where}: landmarks has shape {L.shape}; it must hold between 1 and "
            f"{config.n_blocks * config.block_size} finite rows of "
            f"{config.n_features_in} features. Re-save the model or restore it from a "
            "backup.")
    basis = FixedNystromBasis(L, config.bandwidth, rcond=meta["rcond"])
    if basis.n_components != meta.get("n_components"):
        raise ModelFormatError(
            f"{where}: the landmarks give a basis of {basis.n_components} features, the "
            f"metadata says {meta.get('n_components')!r}; re-save the model or restore it "
            "from a backup.")
    return basis
