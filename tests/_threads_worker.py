"""Run by ``tests/test_threads.py`` in a fresh process started with ``NUMBA_NUM_THREADS=3``
(numba fixes its pool size at import, and the machine may have fewer cores): the parallel
kernels and small fits with 1, 2 and 3 threads on the sync, threads and processes
schedulers.  Prints one JSON object: a SHA-256 of every result's bytes (equal digests are
equal arrays) and the thread counts the parallel full-phase kernel ran with."""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor

import dask
import dask.array as da
import numba
import numpy as np

import ooc_kernels as ok
from ooc_kernels.families.dsg import kernels_threads
from ooc_kernels.families.dsg.kernels import dsg_predict
from ooc_kernels.families.dsg.kernels_full import dsg_full_update
from ooc_kernels.features.blocks import stacked_block_params
from ooc_kernels.features.rbf import feature_scale


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str((a.dtype, a.shape)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def kernels() -> dict:
    rng = np.random.default_rng(0)
    n, d, m, r, C, b = 203, 4, 5, 8, 2, 16
    X = np.ascontiguousarray(rng.normal(size=(n, d)), dtype=np.float32)
    Y = np.ascontiguousarray(rng.normal(size=(n, C)), dtype=np.float32)
    W, ph = stacked_block_params(3, np.arange(m), d, r, 1.2, np.float32)
    coef, avg = 0.1 * rng.normal(size=(m, r, C)), 0.1 * rng.normal(size=(m, r, C))
    s = math.ceil(n / b)
    steps = (0.5 / np.sqrt(1.0 + np.arange(s)), np.arange(s) % 3 > 0)
    params = (0.01, b, 0, feature_scale(r), 0.0)
    Xp = np.ascontiguousarray(rng.normal(size=(70_000, d)), dtype=np.float32)  # 5 tiles
    out = {"full_seq": [], "full_threads": [], "predict_seq": "", "predict_threads": []}
    # 5 blocks of 80 columns: 15 tasks of 32, 32 and 16 columns (kernels_tasks)
    W80, ph80 = stacked_block_params(4, np.arange(m), d, 80, 1.2, np.float32)
    c80, a80 = 0.1 * rng.normal(size=(m, 80, C)), 0.1 * rng.normal(size=(m, 80, C))
    p80 = (0.01, b, 0, feature_scale(80), 0.0)
    problems = [(W, ph, coef, avg, params, buffer) for buffer in (1 << 26, 2 * b * r * 4)]
    problems += [(W80, ph80, c80, a80, p80, buffer) for buffer in (1 << 26, 1)]
    # 16 blocks of 128 columns: 64 tasks of 32 columns, which the threads take from a
    # shared counter (3 threads on fewer cores take them unevenly)
    W16, ph16 = stacked_block_params(5, np.arange(16), d, 128, 1.2, np.float32)
    c16, a16 = 0.1 * rng.normal(size=(16, 128, C)), 0.1 * rng.normal(size=(16, 128, C))
    problems += [(W16, ph16, c16, a16, (0.01, b, 0, feature_scale(128), 0.0), 1 << 26)]
    for Wp, php, cp, ap, pp, buffer in problems:  # features kept, or recomputed
        out["full_seq"].append(_digest(*dsg_full_update(X, Y, np.ones(n), Wp, php, cp, ap,
                                                        2, steps, pp, buffer)[:3]))
    out["predict_seq"] = _digest(dsg_predict(Xp, W, ph, coef[:, :, :1].astype(np.float32),
                                             0.5))
    for t in (1, 2, 3):
        numba.set_num_threads(t)
        out["full_threads"].append([_digest(*kernels_threads.dsg_full_update_threads(
            X, Y, np.ones(n), Wp, php, cp, ap, 2, steps, pp, buffer)[:3])
            for Wp, php, cp, ap, pp, buffer in problems])
        out["predict_threads"].append(_digest(kernels_threads.dsg_predict_threads(
            Xp, W, ph, coef[:, :, :1].astype(np.float32), 0.5)))
    return out


def fits() -> dict:
    seen = []
    original = kernels_threads.dsg_full_update_threads

    def spy(*args):  # the thread counts the parallel kernel runs with (in this process)
        seen.append(numba.get_num_threads())
        return original(*args)

    kernels_threads.dsg_full_update_threads = spy
    rng = np.random.default_rng(1)
    X = rng.normal(size=(960, 3))
    y = np.where(X[:, 0] ** 2 + X[:, 1] > 0.8, 1, 0)
    Xd, yd = da.from_array(X, chunks=(240, 3)), da.from_array(y, chunks=(240,))
    Xt = np.ascontiguousarray(rng.normal(size=(12_000, 3)))  # three prediction tiles
    out = {}
    # one pool of 2 spawned processes for every "processes" round (Dask starts a new pool
    # for every compute otherwise: a process start and a library import per round)
    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
    for scheduler in ("sync", "threads", "processes"):
        for n_jobs in (1, 2, 3):
            with dask.config.set(pool=pool if scheduler == "processes" else None):
                clf = ok.DSGClassifier(n_features=512, block_size=128, batch_size=16,
                                       bandwidth=1.0, max_iter=2, tol=None, random_state=0,
                                       chunks_per_round=1, scheduler=scheduler,
                                       n_jobs=n_jobs, chunk_size=20_000,
                                       progress=False).fit(Xd, yd)
            arrays = clf._fitted_arrays()
            out[f"{scheduler}-{n_jobs}"] = [_digest(*(arrays[k] for k in sorted(arrays))),
                                           _digest(clf.decision_function(Xt))]
    pool.shutdown()
    out["threads_seen"] = sorted(set(seen))
    return out


if __name__ == "__main__":
    what = sys.argv[1]
    print(json.dumps(kernels() if what == "kernels" else fits()))
