"""Baseline for the soak: worker memory of plain Dask (none of our code) over repeated "fits".

Run from the repository root::

    python benchmarks/soak_dask_baseline.py

Each "fit" is 20 rounds of 3 tiny tasks on a (2000, 32) array, the task count of one fit of
``benchmarks/soak.py``; the resident memory of each of the 3 workers is printed after each.
"""

import dask
import distributed
import numpy as np
import psutil


def step(state, x):
    return state + x.sum()


def rss_mib():
    return psutil.Process().memory_info().rss / 2**20


def main(fits: int = 14, rounds: int = 20) -> None:
    with distributed.LocalCluster(n_workers=3, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        for fit in range(fits):
            state = 0.0
            for _ in range(rounds):
                parts = [dask.delayed(step)(state, dask.delayed(np.ones)((2000, 32)))
                         for _ in range(3)]
                state = dask.compute(dask.delayed(sum)(parts))[0]
            print(fit, [round(v, 1) for v in sorted(client.run(rss_mib).values())], flush=True)


if __name__ == "__main__":
    main()
