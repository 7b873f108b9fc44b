"""The peer table's logistic problem out of core from zero: epochs against the rows' dtype.

The peer table (``benchmarks/dspdc_peers.py``) writes its 50,000 x 50 stores as float32 in
chunks of 10,000 rows.  ``shuffle_chunks="auto"`` groups as many chunks per task as fit in
8 MiB of rows, so the float32 store's tasks solve 3 chunks together and the same rows as a
float64 Dask array 2 (``shuffle_chunks_``); the fit from zero then needs a different number
of epochs.  The fits here start from zero: the script sets
``_squared_start.START_MAX_FEATURES = 0``, which turns off every start out of core
(Newton's start out of core, ``_ooc_newton``, certifies this problem at the set-up);
``--with-start`` keeps the starts and prints the reads of the set-up and the start too.  This script fits
``ok.DSPDCClassifier`` at its defaults (``alpha=1e-4``) on the conditioned classification
store written by :func:`dspdc_peers.write_store`, as the store's ``xarray.Dataset``
(float32) and as float64 Dask arrays of the same rows and chunks, to ``tol`` = 1e-4 and
1e-6, for ``--seeds`` values of ``random_state``, and prints the epochs, ``shuffle_chunks_``
and the median CPU seconds::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_peer_dtype.py --seeds 3
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from dspdc_peers import load, write_store


def main() -> None:
    import dask.array as da

    import ooc_kernels as ok
    from ooc_kernels.families.dspdc import _squared_start

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--with-start", action="store_true")
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    args = parser.parse_args()
    if not args.with_start:
        _squared_start.START_MAX_FEATURES = 0      # the fit from zero (module docstring)
    warnings.simplefilter("ignore")
    tmp = Path(tempfile.mkdtemp(prefix="dspdc-peer-dtype-"))
    store = write_store(tmp / "classification.zarr", args.n, 50, args.chunk_size,
                        "classification", 2, "conditioned")
    ds, X, y = load(store)
    inputs = {"float32 store (xarray Dataset)": (ds,),
              "float64 Dask arrays, same rows and chunks": (
                  da.from_array(X.astype(np.float64), chunks=(args.chunk_size, -1)),
                  da.from_array(y, chunks=args.chunk_size))}
    for name, data in inputs.items():
        for tol in (1e-4, 1e-6):
            epochs, groups, cpu, reads = [], set(), [], []
            for seed in range(args.seeds):
                start = time.process_time()
                est = ok.DSPDCClassifier(alpha=1e-4, tol=tol, random_state=seed,
                                         progress=False).fit(*data)
                cpu.append(time.process_time() - start)
                epochs.append(int(est.n_iter_))
                reads.append(int(est._setup_reads))
                groups.add(int(est.shuffle_chunks_))
            print(f"{name}, tol={tol:g}: epochs {epochs}, shuffle_chunks_ {sorted(groups)}, "
                  f"reads before the first epoch {reads}, median {np.median(cpu):.3f} CPU s",
                  flush=True)


if __name__ == "__main__":
    main()
