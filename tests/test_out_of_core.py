"""Out of core: training on a store many times larger than the memory growth allowed.

A subprocess (fresh interpreter, so nothing else inflates its memory) warms up, then fits
one epoch over a Zarr store while a thread samples its resident memory every 5 ms.

With ``shuffle_chunks=1`` a task holds one chunk: the growth allowed is 32 MiB for a store
of 512 MiB.  The default ``shuffle_chunks="auto"`` mixes the rows of a group of chunks of
at most ``SHUFFLE_BYTES`` (8 MiB) of ``X`` per task, which a task holds twice while the group
is gathered (its chunks and their concatenation): the documented bound adds
``K * 2 * SHUFFLE_BYTES``.  The threaded scheduler also reads the next round's groups while
a round runs (one round ahead, ``docs/scale_out.md``): each gathered one chunk at a time
into its own array, which adds ``K`` groups plus one chunk each.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from _memory_env import worker_env

import ooc_kernels as ok
from ooc_kernels.estimators.base import SHUFFLE_BYTES

ALLOWED_GROWTH = 32 * 2**20          # bytes of resident-memory growth the fit may use
N_FEATURES = 32
CHUNK_ROWS = 10_000
K = 2                                # chunks_per_round of the worker


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


#: samples of the store: even compressed on disk it is > 10x the allowed growth
N_SAMPLES = 16 * ALLOWED_GROWTH // (4 * N_FEATURES)


@pytest.fixture(scope="module")
def big_store(tmp_path_factory):
    """The store both fits read (only read: written once for the module)."""
    return ok.make_dataset("nonlinear_binary", tmp_path_factory.mktemp("ooc") / "big.zarr",
                           N_SAMPLES, chunk_size=CHUNK_ROWS, n_features=N_FEATURES,
                           progress=False)


@pytest.mark.slow
@pytest.mark.parametrize("shuffle_chunks,allowed", [
    ("1", ALLOWED_GROWTH),
    ("auto", ALLOWED_GROWTH + K * 2 * SHUFFLE_BYTES
     + K * (SHUFFLE_BYTES + CHUNK_ROWS * N_FEATURES * 4)),
])
def test_fit_memory_is_bounded_by_chunks_not_data(big_store, shuffle_chunks, allowed):
    store, n = big_store, N_SAMPLES
    on_disk = _dir_bytes(store)
    assert on_disk >= 10 * ALLOWED_GROWTH
    worker = Path(__file__).with_name("_ooc_fit_worker.py")
    out = subprocess.run([sys.executable, str(worker), str(store), str(CHUNK_ROWS),
                          shuffle_chunks], capture_output=True, text=True, timeout=600,
                         check=True, env=worker_env())
    report = json.loads(out.stdout.strip().splitlines()[-1])
    growth = report["peak"] - report["baseline"]
    assert report["n_samples_seen"] == n
    assert report["x_nbytes"] >= 6 * allowed
    if shuffle_chunks == "auto":     # groups of 6 chunks of 1.25 MiB: rows really mixed
        assert report["shuffle_chunks_"] == SHUFFLE_BYTES // (CHUNK_ROWS * N_FEATURES * 4)
    assert growth <= allowed, (
        f"peak memory grew by {growth / 2**20:.1f} MiB while fitting on "
        f"{report['x_nbytes'] / 2**20:.0f} MiB of data (allowed {allowed / 2**20:.0f})")
