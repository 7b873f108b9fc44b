"""The per-thread CPU accounting of ``benchmarks/threads_serial.py`` against known work."""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("threads_serial",
                                                  ROOT / "benchmarks" / "threads_serial.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    x = 0
    while time.thread_time() < end:
        x += 1


def test_thread_cpu_gives_each_thread_its_own_cpu_seconds(bench):
    before = bench.thread_cpu()
    done = {}

    def work():
        done["tid"] = threading.get_native_id()
        _burn(0.3)
        done["after"] = bench.thread_cpu()[done["tid"]]
        done["cpu"] = time.thread_time()

    t = threading.Thread(target=work)
    t.start()
    t.join()
    tick = 1.0 / bench._TICK
    # a thread started after ``before``: all of its CPU seconds, to the kernel's tick
    assert done["tid"] not in before
    assert abs(done["after"] - done["cpu"]) <= 2 * tick
    assert done["after"] >= 0.3 - 2 * tick


def test_the_kernel_probe_counts_every_thread_the_call_starts(bench):
    probe = bench.Probe()
    release = threading.Event()
    helpers = []

    def helper():
        _burn(0.2)
        release.wait()

    def kernel():  # a helper thread working beside the caller, like a parallel region's
        helpers.append(threading.Thread(target=helper))
        helpers[0].start()
        _burn(0.2)
        while helpers[0].is_alive() and not _burned(helpers[0]):
            time.sleep(0.01)

    def _burned(t):  # the helper's 0.2 s are on its counter
        return bench.thread_cpu().get(t.native_id, 0.0) >= 0.2 - 1.0 / bench._TICK

    probe.kernel(kernel)()
    release.set()
    helpers[0].join()
    tick = 1.0 / bench._TICK
    assert probe.cpu["kernel caller"] == pytest.approx(0.2, abs=0.05)
    # the caller's and the helper's CPU seconds (a thread started by the call)
    assert probe.cpu["kernel"] == pytest.approx(0.4, abs=0.05 + 4 * tick)
    assert probe.cpu["kernel wall"] >= 0.2


@pytest.mark.parametrize("name, role", [("MainThread", "main"),
                                        ("ooc-kernels-launcher_0", "launcher"),
                                        ("ooc-kernels-read-ahead_0", "read ahead"),
                                        ("asyncio_1", "zarr"), ("zarr_io", "zarr"),
                                        ("ThreadPoolExecutor-0_1", "dask pool"),
                                        (None, "numba workers (native)")])
def test_threads_are_grouped_by_role(bench, name, role):
    assert bench.role(name) == role
