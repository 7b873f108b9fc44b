"""DSPDC's defaults on raw, unscaled columns like those of a real tabular dataset (the
table of ``benchmarks/dspdc_raw.py`` at a small size): a relative gap of 1e-4 within 20
passes, and the test metrics of the scaled scikit-learn pipelines."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import r2_score, roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import ooc_kernels as ok

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "dspdc_raw.py"


def _raw_table(n):
    spec = importlib.util.spec_from_file_location("dspdc_raw_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.raw_table(n, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_defaults_reach_1e4_within_20_passes_on_raw_columns(kind):
    X, yc, yv = _raw_table(24_000)
    assert X.max(axis=0).max() > 2000 and X[:, 11].mean() > 900    # raw scales kept
    tr, te = slice(0, 20_000), slice(20_000, None)
    if kind == "classifier":
        est = ok.DSPDCClassifier(chunk_size=5_000, random_state=0, scheduler="sync",
                                 progress=False).fit(X[tr], yc[tr])
        ref = make_pipeline(StandardScaler(), LogisticRegression()).fit(X[tr], yc[tr])
        got = roc_auc_score(yc[te], est.predict_proba(X[te])[:, 1])
        want = roc_auc_score(yc[te], ref.predict_proba(X[te])[:, 1])
    else:
        est = ok.DSPDCRegressor(chunk_size=5_000, random_state=0, scheduler="sync",
                                progress=False).fit(X[tr], yv[tr])
        ref = make_pipeline(StandardScaler(), Ridge()).fit(X[tr], yv[tr])
        got, want = r2_score(yv[te], est.predict(X[te])), r2_score(yv[te], ref.predict(X[te]))
    passes = [h["passes"] for h in est.gap_history_ if h["relative_gap"] <= 1e-4]
    assert passes and passes[0] <= 20, [h["relative_gap"] for h in est.gap_history_]
    assert est.stop_reason_.startswith("tol:")
    assert abs(got - want) < 2e-3, (got, want)
