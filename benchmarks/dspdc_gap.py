"""DSPDC's duality gap against passes and seconds, for K = 1, 2, 4 chunks per round.

Two problems from generators, written as Zarr stores and fitted out of core from them:

* ridge regression: Gaussian rows in 20 dimensions, a linear target plus noise;
* logistic regression on ``nonlinear_binary`` (20 dimensions).

For each, ``DSPDCRegressor`` / ``DSPDCClassifier`` with ``alpha = 1e-3`` and everything else at
its default, ``tol = 1e-8``, the gap evaluated every epoch.  Writes the gap histories to JSON
and a plot (relative gap against passes over the duals, log scale).

    python benchmarks/dspdc_gap.py --n 100000 --out benchmarks/results/dspdc_gap.json \
        --plot docs/img/dspdc_gap.svg
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import xarray as xr

import ooc_kernels as ok


def _ridge_store(path: Path, n: int, chunk: int, p: int = 20) -> Path:
    """Gaussian rows, y = X w + noise: written chunk by chunk with the library's writer."""
    from ooc_kernels.data.declarations import make_attrs
    from ooc_kernels.data.zarr_io import write_chunks

    w = np.random.default_rng(12345).normal(size=p)

    def chunks():
        for i, lo in enumerate(range(0, n, chunk)):
            rng = np.random.default_rng([7, i])
            X = rng.normal(size=(min(chunk, n - lo), p)).astype(np.float32)
            yield {"X": X, "y": (X @ w + 0.5 * rng.normal(size=len(X))).astype(np.float32)}

    write_chunks(path, chunks(), n_samples=n, chunk_size=chunk,
                 attrs=make_attrs("regression", generator="dspdc_gap ridge"),
                 sizes={"feature": p}, progress=False)
    return path


def run(n: int, chunk: int, ks, alpha: float, max_iter: int) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="dspdc-gap-"))
    stores = {
        "ridge": (ok.DSPDCRegressor, _ridge_store(tmp / "ridge.zarr", n, chunk)),
        "logistic": (ok.DSPDCClassifier,
                     ok.make_dataset("nonlinear_binary", tmp / "nb.zarr", n,
                                     chunk_size=chunk, n_features=20, progress=False)),
    }
    out = []
    for name, (Est, path) in stores.items():
        ds = xr.open_zarr(path)
        for k in ks:
            start = time.perf_counter()
            est = Est(alpha=alpha, tol=1e-8, max_iter=max_iter, chunks_per_round=k,
                      random_state=0, progress=False).fit(ds)
            row = {"problem": name, "K": k, "n": n, "chunk_size": chunk, "alpha": alpha,
                   "seconds": time.perf_counter() - start, "stop_reason": est.stop_reason_,
                   "epochs": est.n_iter_, "gap_history": est.gap_history_}
            print(json.dumps({key: v for key, v in row.items() if key != "gap_history"}),
                  flush=True)
            out.append(row)
    return out


def plot(results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    problems = sorted({r["problem"] for r in results})
    fig, axes = plt.subplots(1, len(problems), figsize=(5 * len(problems), 3.6))
    for ax, name in zip(np.atleast_1d(axes), problems):
        for r in results:
            if r["problem"] != name:
                continue
            h = r["gap_history"]
            ax.semilogy([e["passes"] for e in h], [max(e["relative_gap"], 1e-16) for e in h],
                        marker=".", label=f"K = {r['K']}")
        ax.set_title(f"{name}, n = {results[0]['n']:,}, alpha = {results[0]['alpha']:g}")
        ax.set_xlabel("passes over the duals")
        ax.set_ylabel("relative duality gap (P - D) / P")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--k", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--alpha", type=float, default=1e-3)
    parser.add_argument("--max-iter", type=int, default=60)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--plot", type=Path, default=None)
    args = parser.parse_args(argv)
    results = run(args.n, args.chunk_size, args.k, args.alpha, args.max_iter)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
