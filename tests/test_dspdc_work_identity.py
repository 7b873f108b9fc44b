"""A DSPDC work store's versions are tied to their chunk: a resumed fit whose store had a
chunk's duals replaced by another chunk's file (the same number of rows, an intact file)
is refused with CorruptChunkError, which says to delete the work store and fit again."""

from __future__ import annotations

import shutil

import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import CorruptChunkError

FAST = dict(scheduler="sync", random_state=0, progress=False)


def test_a_resumed_fit_refuses_a_chunks_duals_swapped_with_another_chunks(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 5))
    y = np.where(X @ rng.normal(size=5) + 0.5 * rng.normal(size=120) > 0, 1, 0)
    Xd, yd = da.from_array(X, chunks=(40, 5)), da.from_array(y, chunks=40)
    params = dict(alpha=0.05, tol=None, shuffle_chunks=1, **FAST)
    ck = tmp_path / "ck.zarr"
    ok.DSPDCClassifier(max_iter=2, **params).fit(Xd, yd, checkpoint=ck)
    (store,) = [p for p in (tmp_path / "ck.zarr.work").iterdir() if p.is_dir()]
    chunks = sorted((store / "y").iterdir())
    first, second = (max(c.iterdir()) for c in chunks[:2])     # the latest versions
    np.testing.assert_raises(AssertionError, np.testing.assert_array_equal,
                             first.read_bytes(), second.read_bytes())
    shutil.copyfile(first, second)                             # chunk 0's duals as chunk 1's
    with pytest.raises(CorruptChunkError,
                       match=r"chunk 1 at version .*holds the values of .*c0000000.*Delete "
                             r"the work store.*resume=False"):
        ok.DSPDCClassifier(max_iter=3, **params).fit(Xd, yd, checkpoint=ck, resume=True)
