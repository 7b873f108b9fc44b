"""The ``update`` hyperparameter of :class:`DSGClassifier` and :class:`DSGRegressor`.

How the growth steps use old feature blocks (:mod:`ooc_kernels.families.dsg._reuse`):
``"new"`` (DSG), ``"uniform"`` (UDSG) or ``"check"`` (CDSG).  This module holds the
parameter's documentation and constraint and :class:`UpdateMixin`, which puts the mode in
the fit's configuration and saves and restores CDSG's per-block ``beta`` with the model.

Examples
--------
>>> import numpy as np
>>> import ooc_kernels as ok
>>> X = np.random.default_rng(0).normal(size=(200, 2))
>>> reg = ok.DSGRegressor(update="check", n_features=512, block_size=32, batch_size=16,
...                       max_iter=2, tol=None, random_state=0, scheduler="sync",
...                       progress=False).fit(X, np.sin(X[:, 0]))
>>> reg._config.update, reg._state.beta.shape
('check', (16, 1))
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ooc_kernels.estimators._constraints import StrOptions
from ooc_kernels.exceptions import ModelFormatError
from ooc_kernels.families.dsg._reuse import UPDATES
from ooc_kernels.families.dsg.solver import init_state

__all__ = ["UPDATE_CONSTRAINTS", "UPDATE_DOC", "UpdateMixin"]

UPDATE_CONSTRAINTS = {"update": [StrOptions(set(UPDATES))]}

UPDATE_DOC = """
    update : {"new", "uniform", "check"}, default="new"
        What a step does while the model holds fewer than ``n_features`` features (the
        growth phase); see ``docs/algorithms/dsg_old_coords.md``.  ``"new"``: every step
        opens a new block of ``block_size`` features (DSG, Dai et al. 2014).
        ``"uniform"``: steps alternate between opening a new block and updating an old
        block drawn uniformly (UDSG, Li and Poczos), so the model grows half as fast.
        ``"check"``: a step updates the old block that admits the largest step by the
        expected-descent test, when that step is larger than a new block's, and opens a
        new block otherwise (CDSG, Li and Poczos).  Once the model holds ``n_features``
        features, every mode runs the same full phase (every block updated each step), so
        the prediction cost stops growing at ``n_features``.  Saved with the model.  The
        default is the one that reached a given test error soonest in the equal-time
        comparison (``docs/benchmarks.md``, "DSG with old coordinates").
"""


class UpdateMixin:
    """Puts ``update`` in the fit's configuration; saves CDSG's ``beta`` with the model.

    The mode is read when the rounds start, so a warm-started ``fit`` or a ``partial_fit``
    after ``set_params(update=...)`` continues in the new mode (a model switching to
    ``"check"`` starts with ``beta = 0``: no old block passes the test before a step has
    updated it).  The bandwidth trials of the setup run DSG's growth steps whatever the
    mode; the mode applies to the fit itself.
    """

    _saved_arrays = {"coef": True, "avg": False, "beta": False}
    #: A continuation applies a changed ``update`` (the mode switch above).
    _switchable_params = frozenset({"update"})

    def _run(self, *args, **kwargs):
        config, state = self._config, self._state
        if config.update != self.update:
            self._config = replace(config, update=self.update)
            beta = state.beta if self.update == "check" else None
            if beta is None and self.update == "check":
                beta = init_state(self._config).beta
            self._state = replace(state, beta=beta)
        return super()._run(*args, **kwargs)

    def _fitted_arrays(self) -> dict:
        arrays = super()._fitted_arrays()
        if self._state.beta is not None:
            arrays["beta"] = np.asarray(self._state.beta, dtype=np.float64)
        return arrays

    def _restore_fitted(self, arrays: dict, meta: dict, where: str) -> None:
        super()._restore_fitted(arrays, meta, where)
        update = self._config.update
        if update not in UPDATES or update != self.update:
            raise ModelFormatError(
                f"{where}: the metadata's fitted.config has update={update!r}, the model's "
                f"parameters say update={self.update!r} (one of {list(UPDATES)}); re-save "
                "the model or restore it from a backup.")
        beta = arrays.get("beta")
        expected = (self._config.n_blocks, self._config.n_outputs)
        if update == "check" and (beta is None or np.shape(beta) != expected):
            raise ModelFormatError(
                f"{where}: a model fitted with update='check' needs the array beta of shape "
                f"{expected}; the file has "
                f"{'none' if beta is None else 'shape ' + str(np.shape(beta))}.")
        if update != "check" and beta is not None:
            raise ModelFormatError(
                f"{where}: the file has an array beta, which only update='check' writes; "
                f"the metadata says update={update!r}.")
        if beta is not None:
            self._state = replace(self._state, beta=np.asarray(beta, dtype=np.float64))
