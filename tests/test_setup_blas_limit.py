"""The BLAS limit is held for a fit's whole set-up.

Two fits in threads of one process each enter and leave :func:`single_threaded_blas` many
times during their set-up (bandwidth trials, per-input width search); a limit that ended
between two of those steps let the other fit's BLAS calls run multi-threaded beside it, and
OpenBLAS then spun (two fits with ``bandwidth="auto"`` took 20 to 40 CPU seconds against
about 1.3 s alone).  Holding the limit from the start of the set-up to its end removes the
windows; these tests fail if the set-up runs outside it.
"""

from __future__ import annotations

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels import _blas


def _record_depth(monkeypatch, cls):
    seen = []
    original = cls._initialize

    def spy(self, *args, **kwargs):
        seen.append(_blas._depth)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, "_initialize", spy)
    return seen


@pytest.mark.parametrize("cls, y_kind", [(ok.DSGRegressor, "real"),
                                          (ok.DSGClassifier, "label"),
                                          (ok.DSPDCRegressor, "real")])
def test_the_set_up_runs_inside_the_blas_limit(monkeypatch, cls, y_kind):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] if y_kind == "real" else (X[:, 0] > 0).astype(int)
    seen = _record_depth(monkeypatch, cls)
    params = dict(max_iter=1, random_state=0, progress=False, tol=None)
    if cls is not ok.DSPDCRegressor:
        params.update(n_features=64, block_size=32, bandwidth=1.0)
    cls(**params).fit(X, y)
    assert seen and all(depth >= 1 for depth in seen), seen
    assert _blas._depth == 0   # and released after the fit
