"""An in-memory ``X`` named without hashing (``as_chunked(lazy_token=True)``, DSPDC's
fits): the data's token is the one of the array named by hashing, a DSPDC fit on rows held
in memory never hashes ``X``, and checkpoints written with either naming resume."""

from __future__ import annotations

import dask
import dask.array.core
import numpy as np
import pytest
from dask.core import flatten

import ooc_kernels as ok
from ooc_kernels.data.inputs import as_chunked
from ooc_kernels.exceptions import CheckpointMismatchError
from ooc_kernels.parallel.checkpoint import read_checkpoint

FAST = dict(scheduler="sync", random_state=0, progress=False)


def _problem(n=300, p=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, X @ rng.normal(size=p) + 0.3 * rng.normal(size=n)


def test_lazy_token_equals_the_hashed_names_token():
    """The lazily named data's token is the token of the data named by Dask's hashing (its
    Dask name is not), for float64 and float32 rows, and changes with one value of X; its
    chunks are those of ``from_array``, without a copy of X."""
    for dtype in (np.float64, np.float32):
        X, y = _problem()
        X = X.astype(dtype)
        eager = as_chunked(X, y, chunk_size=70)
        lazy = as_chunked(X, y, chunk_size=70, lazy_token=True)
        assert lazy.X.name != eager.X.name
        assert lazy.token == eager.token
        assert lazy.X.chunks == eager.X.chunks and lazy.X.dtype == eager.X.dtype == dtype
        assert np.array_equal(lazy.X.compute(), eager.X.compute())
        graph = lazy.X.__dask_graph__()            # its blocks are views of X, not copies
        assert all(np.shares_memory(graph[key], X) for key in flatten(lazy.X.__dask_keys__()))
        X2 = X.copy()
        X2[17, 3] += 1
        assert as_chunked(X2, y, chunk_size=70, lazy_token=True).token != eager.token


def test_in_memory_fit_does_not_hash_X(monkeypatch):
    """A DSPDC fit on NumPy rows never tokenizes the rows (Dask's hash of 20 MB at the
    peer table's size)."""
    X, y = _problem()
    real = dask.array.core.tokenize
    hashed = []

    def spy(*args, **kwargs):
        hashed.extend(np.shape(a) == X.shape for a in args)
        return real(*args, **kwargs)

    monkeypatch.setattr(dask.array.core, "tokenize", spy)
    ok.DSPDCRegressor(alpha=0.1, max_iter=3, tol=None, **FAST).fit(X, y)
    assert not any(hashed)


def test_checkpoint_of_a_lazily_named_fit_resumes_and_refuses_other_rows(tmp_path):
    """The token a fit on NumPy rows writes in its checkpoint is the hashed names' token
    (so checkpoints written with hashed names resume); resumed, the fit reaches the model
    of the uninterrupted fit with a checkpoint; a resume on other rows is refused, naming the token."""
    X, y = _problem()
    params = dict(alpha=0.1, tol=None, chunk_size=100, **FAST)
    reference = ok.DSPDCRegressor(max_iter=6, **params).fit(     # its rows drawn as
        X, y, checkpoint=tmp_path / "uninterrupted.zarr")        # with a checkpoint
    ck = tmp_path / "ck.zarr"
    ok.DSPDCRegressor(max_iter=3, **params).fit(X, y, checkpoint=ck)
    written = read_checkpoint(ck).meta["dataset"]["token"]
    assert written == as_chunked(X, y, chunk_size=100).token
    resumed = ok.DSPDCRegressor(max_iter=6, **params).fit(X, y, checkpoint=ck, resume=True)
    assert np.array_equal(resumed.coef_, reference.coef_)
    X2 = X.copy()
    X2[5, 1] += 1.0
    with pytest.raises(CheckpointMismatchError, match="token"):
        ok.DSPDCRegressor(max_iter=9, **params).fit(X2, y, checkpoint=ck, resume=True)
