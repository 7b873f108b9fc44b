"""``benchmarks/dsg_throughput.py`` calls the DSG kernels with their current arguments: its
kernel rates run on a tiny chunk and come out finite and positive."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def test_the_kernel_rates_run_on_a_tiny_chunk():
    spec = importlib.util.spec_from_file_location("dsg_throughput",
                                                  ROOT / "benchmarks" / "dsg_throughput.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rng = np.random.default_rng(0)
    X = rng.random((256, 8), dtype=np.float32)
    for C in (1, 3):   # the logistic loss for one output, softmax for several
        Y = np.where(rng.random((256, C)) > 0.5, 1.0, -1.0).astype(np.float32)
        if C > 1:
            Y = np.eye(C, dtype=np.float32)[rng.integers(0, C, 256)]
        rates = bench.hot_loop_rates(X, Y, block_size=64, batch_size=64, n_blocks_model=2,
                                     repeats=1)
        assert len(rates) == 4 and all(math.isfinite(v) and v > 0 for v in rates), rates
