"""The accounting of ``benchmarks/threads_parts.py``: the parts on a fit's critical path add
up to its wall-clock, and the kernel's CPU seconds include the threads it starts."""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CRITICAL = ("set-up", "round reads (not ahead)", "read wait", "chunk step, other",
            "growth phase", "step kernel", "apply", "engine, other", "fit, other")


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("threads_parts",
                                                  ROOT / "benchmarks" / "threads_parts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_the_parts_on_the_critical_path_add_up_to_the_fit(bench):
    clock = bench.Clock()
    wall = {"start": 0.5, "rounds": 9.0, "compute": 1.5, "step in compute": 1.0,
            "step": 7.0, "growth": 0.25, "kernel": 6.0, "apply": 0.125, "take": 0.0625,
            "ahead": 3.0}
    clock.wall.update(wall)
    clock.cpu.update({k: v / 2 for k, v in wall.items()})
    clock.kernel_caller = 1.0
    got = bench.parts(clock, wall=10.0, cpu=12.0)
    assert sum(got[p]["wall_s"] for p in CRITICAL) == pytest.approx(10.0)
    assert got["round reads (not ahead)"]["wall_s"] == pytest.approx(0.5)
    assert got["chunk step, other"]["wall_s"] == pytest.approx(0.75)
    assert got["chunk step, other"]["cpu_s"] == pytest.approx(3.5 - 0.125 - 1.0)
    assert got["engine, other"]["wall_s"] == pytest.approx(9.0 - 7.0 - 0.5 - 0.0625 - 0.125)
    assert got["fit, other"]["wall_s"] == pytest.approx(0.5)
    timed = sum(v["cpu_s"] for k, v in got.items()
                if v["cpu_s"] is not None and not k.startswith("CPU not timed"))
    assert got["CPU not timed per part (main thread, Dask's pool)"]["cpu_s"] == \
        pytest.approx(12.0 - timed)


def test_the_kernel_clock_counts_the_threads_the_call_starts(bench):
    """A helper thread the call starts and that outlives it (as numba's pool does)."""
    clock = bench.Clock()
    burnt, release = threading.Event(), threading.Event()
    helpers = []

    def helper():
        _burn(0.2)
        burnt.set()
        release.wait()

    def kernel():
        helpers.append(threading.Thread(target=helper))
        helpers[0].start()
        _burn(0.1)
        burnt.wait()

    clock.kernel(kernel)()
    release.set()
    helpers[0].join()
    tick = 1.0 / bench._TICK
    assert clock.cpu["kernel"] >= 0.3 - 4 * tick
    assert 0.1 - 2 * tick <= clock.kernel_caller <= 0.1 + 4 * tick
    assert clock.wall["kernel"] >= 0.2
