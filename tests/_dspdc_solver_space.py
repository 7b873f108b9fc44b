"""A fitted DSPDC estimator's problem in the solver's space, in NumPy: its standardized rows
with the intercept's column and its coefficients there (the tests of the fits' starts)."""

from __future__ import annotations

import numpy as np


def solver_rows(est, X):
    """The fit's standardized rows of ``X`` with the intercept's column."""
    cfg = est._config
    A = (X - np.asarray(cfg.x_shift)) / np.asarray(cfg.x_scale)
    if cfg.intercept_scaling:
        A = np.column_stack([A, np.full(len(X), cfg.intercept_scaling)])
    return A


def solver_x(est):
    """The fit's coefficients on :func:`solver_rows` (the intercept's last)."""
    cfg = est._config
    coef = np.ravel(est.coef_)
    x = coef * np.asarray(cfg.x_scale)
    if cfg.intercept_scaling:
        intercept = float(np.ravel(est.intercept_)[0])
        x = np.append(x, (intercept + coef @ np.asarray(cfg.x_shift)) / cfg.intercept_scaling)
    return x
