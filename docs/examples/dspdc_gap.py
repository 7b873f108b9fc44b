"""The certified duality gap of DSPDC, epoch by epoch, on a small ridge and logistic problem.

Every epoch the DSPDC estimators compute the primal value ``P(x)`` of the current model and
the dual value ``D(y)`` of the current duals; weak duality gives ``P(x) - P* <= P(x) - D(y)``,
so the gap is a proven bound on how far the model is from the optimum (``gap_history_``).
For ridge regression the optimum ``P*`` also has a closed form, so the figure shows the
bound next to the true distance ``P(x) - P*`` it bounds; the ridge fit starts from that
solution (the squared loss's start), so its gap is at rounding from the first evaluation,
the start's.  For logistic regression the figure shows the gap alone, the only certificate
there is: the fit starts from Newton's solution of the same problem (the logistic loss's
start in memory, to a relative gap of at most ``1e-10`` without ``tol``; on this problem
its last Newton step already takes it to rounding), and the epochs keep the gap there.

Run from the repository root (well under a minute on a laptop)::

    python docs/examples/dspdc_gap.py --out docs/img/dspdc_gap_example.svg

``--n`` and ``--epochs`` lower the sizes (the test suite runs it small).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import ooc_kernels as ok  # noqa: E402


def ridge_optimum(X: np.ndarray, y: np.ndarray, alpha: float) -> tuple[np.ndarray, float]:
    """Closed-form minimizer and minimum of ``P(x) = |Xx - y|^2 / (2n) + alpha |x|^2 / 2``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    alpha : float

    Returns
    -------
    coef : ndarray of shape (p,)
    primal : float
        ``P(coef)``.
    """
    n, p = X.shape
    coef = np.linalg.solve(X.T @ X / n + alpha * np.eye(p), X.T @ y / n)
    return coef, float(np.mean((X @ coef - y) ** 2) / 2 + alpha * coef @ coef / 2)


def main(argv: list[str] | None = None) -> dict:
    """Fit both models, draw the figure, print and return what it shows.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    dict
        ``X``, ``y``, ``labels``: the data (``y`` of the ridge, ``labels`` of the logistic
        problem); ``ridge`` and ``logistic``: the fitted estimators; ``ridge_coef`` and
        ``ridge_primal``: the closed-form ridge optimum and its objective ``P*``; ``out``:
        the path of the image written.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="rows of each problem")
    parser.add_argument("--p", type=int, default=30, help="columns of each problem")
    parser.add_argument("--chunk-size", type=int, default=2_500, help="rows per chunk")
    parser.add_argument("--epochs", type=int, default=30, help="epochs of each fit")
    parser.add_argument("--alpha", type=float, default=1e-3, help="l2 regularization")
    parser.add_argument("--out", default="docs/img/dspdc_gap_example.svg",
                        help="image to write (SVG; the format follows the suffix)")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    X = rng.normal(size=(args.n, args.p))
    y = X @ rng.normal(size=args.p) + 0.1 * rng.normal(size=args.n)
    labels = (X @ rng.normal(size=args.p) + rng.logistic(size=args.n) > 0).astype(int)

    # tol=None: run every epoch, to draw the whole curve (a fit stops at its gap tol otherwise);
    # standardize=False: the problem of the raw columns, whose ridge optimum is ridge_optimum's
    common = {"alpha": args.alpha, "chunk_size": args.chunk_size, "max_iter": args.epochs,
              "fit_intercept": False, "standardize": False, "tol": None, "random_state": 0,
              "progress": False}
    ridge = ok.DSPDCRegressor(**common).fit(X, y)
    logistic = ok.DSPDCClassifier(**common).fit(X, labels)
    ridge_coef, ridge_primal = ridge_optimum(X, y, args.alpha)

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    r_epochs = [h["passes"] for h in ridge.gap_history_]
    # ridge starts from its solution: gaps at rounding, drawn at 1e-16 where they are <= 0
    ax.semilogy(r_epochs, [max(h["gap"], 1e-16) for h in ridge.gap_history_], "o-",
                markersize=3, color="C0", label="ridge: certified gap $P(x) - D(y)$")
    ax.semilogy(r_epochs, [max(h["primal"] - ridge_primal, 1e-16) for h in ridge.gap_history_],
                "--", color="C0", alpha=0.7, label="ridge: true $P(x) - P^*$ (closed form)")
    # logistic starts from Newton's solution: its gaps reach rounding too, drawn likewise
    ax.semilogy([h["passes"] for h in logistic.gap_history_],
                [max(h["gap"], 1e-16) for h in logistic.gap_history_], "s-", markersize=3,
                color="C1",
                label="logistic: certified gap $P(x) - D(y)$")
    ax.set(xlabel="epochs (passes over the data)", ylabel="objective gap",
           title=f"DSPDC, n = {args.n:,}, p = {args.p}, alpha = {args.alpha:g}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # no date in an SVG, so that rerunning the script changes the file only if the plot changes
    fig.savefig(out, metadata={"Date": None} if out.suffix == ".svg" else None)
    plt.close(fig)

    for name, est in (("ridge", ridge), ("logistic", logistic)):
        last = est.gap_history_[-1]
        print(f"{name}: {est.n_iter_} epochs, gap {last['gap']:.3g} "
              f"(relative {last['relative_gap']:.3g}); {est.stop_reason_}")
    print(f"ridge: P(coef_) - P* = {ridge.gap_history_[-1]['primal'] - ridge_primal:.3g}, "
          f"max |coef_ - closed form| = {np.max(np.abs(ridge.coef_ - ridge_coef)):.3g}")
    print(f"wrote {out}")
    return {"X": X, "y": y, "labels": labels, "ridge": ridge, "logistic": logistic, "ridge_coef": ridge_coef,
            "ridge_primal": ridge_primal, "out": out}


if __name__ == "__main__":
    main(sys.argv[1:])
