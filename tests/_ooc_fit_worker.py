"""Subprocess body of test_out_of_core: fit on a Zarr store and report memory (JSON)."""

import json
import sys
import threading
import time

import psutil


def main(store: str, chunk_rows: int, shuffle_chunks="auto") -> None:
    import numpy as np

    import ooc_kernels as ok
    from ooc_kernels.data.schema import open_zarr_dataset

    proc = psutil.Process()
    params = dict(n_features=512, block_size=64, batch_size=2048, max_iter=1, tol=None,
                  bandwidth=3.0, chunks_per_round=2, random_state=0, scheduler="threads",
                  shuffle_chunks=shuffle_chunks, progress=False)
    # Warm up: imports, numba caches, thread pools, on a tiny in-memory problem.
    rng = np.random.default_rng(0)
    Xw = rng.normal(size=(chunk_rows, 32)).astype(np.float32)
    ok.DSGClassifier(**params).fit(Xw, (Xw[:, 0] > 0).astype(int))
    ds = open_zarr_dataset(store)
    baseline = proc.memory_info().rss
    peak = [baseline]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.perf_counter()
    clf = ok.DSGClassifier(**params).fit(ds)
    seconds = time.perf_counter() - t0
    done.set()
    sampler.join()
    peak[0] = max(peak[0], proc.memory_info().rss)
    print(json.dumps({"baseline": baseline, "peak": peak[0], "seconds": seconds,
                      "n_samples_seen": clf.n_samples_seen_,
                      "x_nbytes": int(ds["X"].nbytes),
                      "shuffle_chunks_": int(clf.shuffle_chunks_)}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]),
         *[a if a == "auto" else int(a) for a in sys.argv[3:4]])
