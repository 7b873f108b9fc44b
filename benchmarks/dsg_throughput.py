"""DSG throughput, peak memory, hot-loop FLOP rate vs float32 GEMM, and accuracy against
scikit-learn's RBFSampler + SGDClassifier.partial_fit at equal wall-clock time.

Run from the repository root::

    python benchmarks/dsg_throughput.py --repeats 3

Everything is measured in the same process and the same run, so ratios are not disturbed by
the machine's load changing between runs.  Medians over ``--repeats`` runs are reported.
The datasets are generated (chunk by chunk) into ``--data-dir`` when missing.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import threading
import time
from pathlib import Path

import numpy as np
import psutil

import ooc_kernels as ok
from ooc_kernels.families.dsg.kernels import dsg_chunk_update, dsg_predict
from ooc_kernels.data.schema import open_zarr_dataset
from ooc_kernels.features.blocks import stacked_block_params
from ooc_kernels.features.rbf import feature_scale

#: The end-to-end fit's settings: a fixed bandwidth and step schedule, so that rows per
#: second measure the engine, not the default bandwidth search.
FIT_PARAMS = {"loss": "logistic", "bandwidth": "median", "median_multiplier": 0.5,
              "standardize": False, "n_features": 8192, "block_size": 256, "batch_size": 256,
              "max_iter": 3, "tol": None, "learning_rate": "inverse", "eta0": 200000.0,
              "t0": 1000.0, "chunks_per_round": 2, "random_state": 0}


def median_time(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def gemm_rate(repeats):
    """float32 GEMM rate (FLOP/s) of a large square product: the machine's reference."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2048, 2048), dtype=np.float32)
    b = rng.standard_normal((2048, 2048), dtype=np.float32)
    np.dot(a, b)
    t = median_time(lambda: np.dot(a, b), max(repeats, 5))
    return 2 * 2048**3 / t


def hot_loop_rates(X, Y, *, block_size, batch_size, n_blocks_model, repeats):
    """FLOP rates of the two numba kernels on one real chunk (float32)."""
    n, d = X.shape
    C = Y.shape[1]
    r, b = block_size, batch_size
    m = math.ceil(n / b)
    scale = feature_scale(r)
    W, ph = stacked_block_params(1, np.arange(m), d, r, 1.0, np.float32)
    steps = (np.full(m, 0.1), np.zeros(m, dtype=bool))   # step sizes, none averaged
    params = (1e-5, b, 3 if C > 1 else 2, scale, 0.0)    # alpha, batch size, loss, scale
    sw = np.ones(n)
    F0 = np.zeros((n, C), np.float32)
    dsg_chunk_update(X, Y, sw, F0.copy(), W, ph, steps, params)
    t_upd = median_time(lambda: dsg_chunk_update(X, Y, sw, F0.copy(), W, ph, steps, params),
                        repeats)
    rest = np.array([n - s * b for s in range(m)], dtype=np.float64)
    flops_upd = float(np.sum(2 * rest * d * r + 2 * rest * r * C) + 2 * n * r * C)
    Wm, phm = stacked_block_params(2, np.arange(n_blocks_model), d, r, 1.0, np.float32)
    coef = np.random.default_rng(0).standard_normal((n_blocks_model, r, C)).astype(np.float32)
    dsg_predict(X, Wm, phm, coef, scale)
    t_pred = median_time(lambda: dsg_predict(X, Wm, phm, coef, scale), repeats)
    flops_pred = float(n_blocks_model) * (2 * n * d * r + 2 * n * r * C)
    return flops_upd / t_upd, flops_pred / t_pred, t_upd, t_pred


class PeakRSS:
    """Samples the resident memory of this process every 5 ms while active."""

    def __enter__(self):
        self.proc = psutil.Process()
        self.baseline = self.peak = self.proc.memory_info().rss
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss)
            time.sleep(0.005)

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)


def ensure(name, path, n, split, seed, **params):
    if not path.exists():
        ok.make_dataset(name, path, n, split=split, random_state=seed, progress=False,
                        **params)
    return open_zarr_dataset(path)


def sklearn_equal_time(train, test, *, seconds, bandwidth, n_components, sub_batch):
    """RBFSampler + SGDClassifier.partial_fit over the same Zarr chunks for `seconds`."""
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import SGDClassifier

    classes = np.asarray(train.attrs["classes"])
    sampler = RBFSampler(gamma=1.0 / (2 * bandwidth**2), n_components=n_components,
                         random_state=0).fit(np.zeros((1, train.sizes["feature"]),
                                                      np.float32))
    clf = SGDClassifier(loss="log_loss", alpha=1e-6, random_state=0)
    chunks = train["X"].data.to_delayed().ravel()
    ychunks = train["y"].data.to_delayed().ravel()
    t0 = time.perf_counter()
    rows = 0
    while time.perf_counter() - t0 < seconds:
        for xc, yc in zip(chunks, ychunks):
            Xc, yc_ = np.asarray(xc.compute()), np.asarray(yc.compute())  # one chunk
            for lo in range(0, len(Xc), sub_batch):
                clf.partial_fit(sampler.transform(Xc[lo:lo + sub_batch]),
                                yc_[lo:lo + sub_batch], classes=classes)
                rows += len(Xc[lo:lo + sub_batch])
                if time.perf_counter() - t0 >= seconds:
                    break
            if time.perf_counter() - t0 >= seconds:
                break
    elapsed = time.perf_counter() - t0
    hits = total = 0
    for xc, yc in zip(test["X"].data.to_delayed().ravel(), test["y"].data.to_delayed().ravel()):
        Xc, yc_ = np.asarray(xc.compute()), np.asarray(yc.compute())
        for lo in range(0, len(Xc), sub_batch):
            pred = clf.predict(sampler.transform(Xc[lo:lo + sub_batch]))
            hits += int((pred == yc_[lo:lo + sub_batch]).sum())
            total += len(pred)
    return {"accuracy": hits / total, "rows": rows, "seconds": elapsed,
            "epochs": rows / train.sizes["sample"], "n_components": n_components}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default="data/bench", type=Path)
    ap.add_argument("--n-train", type=int, default=200_000)
    ap.add_argument("--n-test", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", type=Path, default=None, help="Also write the results here.")
    args = ap.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    out = {"machine": {"cpu_count": psutil.cpu_count(), "python": platform.python_version(),
                       "numpy": np.__version__}}

    from threadpoolctl import threadpool_limits

    gemm = gemm_rate(args.repeats)
    with threadpool_limits(limits=1, user_api="blas"):
        gemm1 = gemm_rate(args.repeats)
    out["gemm_float32_gflops"] = gemm / 1e9
    out["gemm_float32_gflops_1_thread"] = gemm1 / 1e9

    # Hot loop on one real chunk: digits (d = 64) and nonlinear_binary with d = 256.
    digits = ensure("digits_deformed", args.data_dir / "digits_train.zarr", args.n_train,
                    "train", 0)
    digits_test = ensure("digits_deformed", args.data_dir / "digits_test.zarr", args.n_test,
                         "test", 1)
    wide = ensure("nonlinear_binary", args.data_dir / "wide.zarr", 20_000, "train", 0,
                  n_features=256)
    hot = {}
    for name, ds, C in (("digits d=64 C=10", digits, 10), ("nonlinear_binary d=256 C=1", wide, 1)):
        X = np.ascontiguousarray(ds["X"][:10_000].values)  # one chunk
        Y = np.zeros((len(X), C), np.float32)
        Y[np.arange(len(X)), np.asarray(ds["y"][:10_000].values) % C] = 1.0
        for threads, ref in ((2, gemm), (1, gemm1)):
            # chunk tasks run with one BLAS thread (bit-identical results on every scheduler)
            with threadpool_limits(limits=threads, user_api="blas"):
                upd, pred, t_upd, t_pred = hot_loop_rates(
                    X, Y, block_size=256, batch_size=256, n_blocks_model=64,
                    repeats=args.repeats)
            hot[f"{name}, {threads} BLAS thread(s)"] = {
                "chunk_update_gflops": upd / 1e9, "predict_gflops": pred / 1e9,
                "chunk_update_ratio": upd / ref, "predict_ratio": pred / ref,
                "chunk_update_seconds": t_upd, "predict_seconds": t_pred}
    out["hot_loop"] = hot

    # End-to-end fit with fixed settings (FIT_PARAMS): rows/s and peak memory.
    params = dict(FIT_PARAMS, scheduler="threads", progress=False)
    fits = []
    for _ in range(args.repeats):
        with PeakRSS() as mem:
            t0 = time.perf_counter()
            clf = ok.DSGClassifier(**params).fit(digits)
            fit_s = time.perf_counter() - t0
        fits.append({"seconds": fit_s, "peak_rss_mib": mem.peak / 2**20,
                     "rss_growth_mib": (mem.peak - mem.baseline) / 2**20})
    acc = clf.score(digits_test)
    fit_s = statistics.median(f["seconds"] for f in fits)
    out["fit"] = {"params": {k: v for k, v in params.items() if k != "progress"},
                  "n_train": args.n_train, "median_seconds": fit_s,
                  "rows_per_second": args.n_train * clf.n_iter_ / fit_s,
                  "peak_rss_mib": max(f["peak_rss_mib"] for f in fits),
                  "rss_growth_mib": max(f["rss_growth_mib"] for f in fits),
                  "test_accuracy": acc, "runs": fits}

    # scikit-learn at equal wall-clock time, on the same chunks.
    out["sklearn"] = [
        sklearn_equal_time(digits, digits_test, seconds=fit_s, bandwidth=clf.bandwidth_,
                           n_components=nc, sub_batch=1000)
        for nc in sorted({params['n_features'], 2048})
    ]
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
