"""Out of core: training on a store ten times larger than the memory growth allowed.

A subprocess (fresh interpreter, so nothing else inflates its memory) warms up, then fits
one epoch over a Zarr store while a thread samples its resident memory every 5 ms.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ooc_kernels as ok

ALLOWED_GROWTH = 32 * 2**20          # bytes of resident-memory growth the fit may use
N_FEATURES = 32
CHUNK_ROWS = 10_000


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


@pytest.mark.slow
def test_fit_memory_is_bounded_by_chunks_not_data(tmp_path):
    # sized so that even compressed on disk the store is > 10x the allowed growth
    n = 12 * ALLOWED_GROWTH // (4 * N_FEATURES)
    store = ok.make_dataset("nonlinear_binary", tmp_path / "big.zarr", n,
                            chunk_size=CHUNK_ROWS, n_features=N_FEATURES, progress=False)
    on_disk = _dir_bytes(store)
    assert on_disk >= 10 * ALLOWED_GROWTH
    worker = Path(__file__).with_name("_ooc_fit_worker.py")
    out = subprocess.run([sys.executable, str(worker), str(store), str(CHUNK_ROWS)],
                         capture_output=True, text=True, timeout=600, check=True)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    growth = report["peak"] - report["baseline"]
    assert report["n_samples_seen"] == n
    assert report["x_nbytes"] >= 10 * ALLOWED_GROWTH
    assert growth <= ALLOWED_GROWTH, (
        f"peak memory grew by {growth / 2**20:.1f} MiB while fitting on "
        f"{report['x_nbytes'] / 2**20:.0f} MiB of data (allowed {ALLOWED_GROWTH / 2**20:.0f})")
