"""DSPDCRegressor's held-out R^2 when the regression targets are shifted by a constant.

Friedman #1 (``make_friedman1(800, noise=0.5, random_state=1)``: 600 training rows, the last
200 held out), the targets shifted by 0, 1e4, 1e5 and 1e6 in training and test alike;
``DSPDCRegressor()`` at its defaults (``random_state=0``) against ``LinearRegression``, whose
predictions shift with the targets.  A model whose intercept is free of the penalty scores
the same at every shift (docs/dspdc.md, "Standardization").  ``--checkout FOLDER`` measures
another version of the library (e.g. ``git archive`` of an earlier commit into a folder)::

    python benchmarks/dspdc_target_shift.py
    python benchmarks/dspdc_target_shift.py --checkout /tmp/before
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _checkout import use_checkout  # noqa: E402

SHIFTS = (0.0, 1e4, 1e5, 1e6)


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", default=None,
                        help="a folder holding another version of the library to measure")
    args = parser.parse_args(argv)
    use_checkout(args.checkout)
    from sklearn.datasets import make_friedman1
    from sklearn.linear_model import LinearRegression
    from sklearn.metrics import r2_score

    import ooc_kernels as ok

    X, y = make_friedman1(800, noise=0.5, random_state=1)
    rows = []
    for shift in SHIFTS:
        ytr, yte = y[:600] + shift, y[600:] + shift
        model = ok.DSPDCRegressor(random_state=0, progress=False).fit(X[:600], ytr)
        ols = LinearRegression().fit(X[:600], ytr)
        rows.append({"shift": shift, "dspdc_r2": r2_score(yte, model.predict(X[600:])),
                     "linear_regression_r2": r2_score(yte, ols.predict(X[600:]))})
        print(json.dumps(rows[-1]), flush=True)
    return rows


if __name__ == "__main__":
    main()
