"""The BLAS limit keeps threadpoolctl's controller while no shared object is loaded, and
makes it anew as soon as one is (so a BLAS library loaded since the last limit is limited
too)."""

import subprocess
import sys

import pytest
from threadpoolctl import threadpool_info

from ooc_kernels import _blas

LOAD_ONE = r"""
import ctypes, sys
from ooc_kernels._blas import loaded_objects
before = loaded_objects()
import _bz2   # an extension module (a shared object) that a bare interpreter has not loaded
after = loaded_objects()
print(before, after)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="procfs is Linux's")
def test_loaded_objects_counts_a_newly_loaded_shared_object():
    assert "_bz2" not in sys.builtin_module_names
    out = subprocess.run([sys.executable, "-c", LOAD_ONE], capture_output=True, text=True,
                         check=True).stdout.split()
    before, after = int(out[0]), int(out[1])
    assert after > before   # the module, and the library it links (libbz2) if not loaded yet


IMPORT_BESIDE = r"""
import importlib, threading, warnings
from ooc_kernels._blas import loaded_objects, single_threaded_blas
warnings.simplefilter("ignore")
with single_threaded_blas():   # its imports done before the other thread imports
    pass
done, counts = threading.Event(), [0]
def count():
    while not done.is_set():
        for _ in range(20):
            loaded_objects()
        with single_threaded_blas():
            counts[0] += 1
worker = threading.Thread(target=count, daemon=True)
worker.start()
for name in ("_bz2", "_lzma", "_decimal", "_csv", "mmap", "_sqlite3", "_multibytecodec",
             "scipy.signal", "scipy.ndimage", "scipy.interpolate", "scipy.integrate",
             "scipy.io", "scipy.cluster", "sklearn.svm", "sklearn.ensemble"):
    importlib.import_module(name)   # dlopen calls while the other thread counts
done.set()
worker.join()
print(counts[0])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="procfs is Linux's")
def test_counting_beside_an_import_in_another_thread_does_not_hang():
    """A thread entering the limit (which counts the loaded objects) while another imports
    extension modules: a count taken under the dynamic linker's lock with a callback into
    Python hangs both (the importing thread holds the GIL inside dlopen)."""
    out = subprocess.run([sys.executable, "-c", IMPORT_BESIDE], capture_output=True,
                         text=True, check=True, timeout=120).stdout
    assert int(out) > 0


@pytest.fixture
def counting(monkeypatch):
    """Count the controllers made (each still a real one)."""
    made = []
    real = _blas.ThreadpoolController

    def make():
        made.append(1)
        return real()

    monkeypatch.setattr(_blas, "ThreadpoolController", make)
    monkeypatch.setattr(_blas, "_controller", None)
    monkeypatch.setattr(_blas, "_controller_objects", None)
    return made


def _enter_once():
    with _blas.single_threaded_blas():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_the_controller_is_kept_while_nothing_is_loaded_and_made_anew_after(counting,
                                                                            monkeypatch):
    count = {"n": 100}
    monkeypatch.setattr(_blas, "loaded_objects", lambda: count["n"])
    assert set(_enter_once()) == {1}
    assert set(_enter_once()) == {1}
    assert len(counting) == 1            # the same objects: the same controller
    count["n"] = 101                     # a shared object was loaded since
    assert set(_enter_once()) == {1}
    assert len(counting) == 2


def test_without_a_count_the_controller_is_made_at_every_limit(counting, monkeypatch):
    monkeypatch.setattr(_blas, "loaded_objects", lambda: None)
    for _ in range(3):
        assert set(_enter_once()) == {1}
    assert len(counting) == 3


@pytest.mark.parametrize("error", [FileNotFoundError, PermissionError])
def test_without_procfs_the_limit_still_holds(counting, monkeypatch, error):
    """``/proc/self/map_files`` missing (no procfs) or not readable: no count, and every
    limit makes its controller anew and still sets BLAS to one thread."""
    import os

    real = os.listdir

    def listdir(path="."):
        if str(path).startswith("/proc/self/map_files"):
            raise error(f"simulated: {path}")
        return real(path)

    monkeypatch.setattr(_blas.os, "listdir", listdir)
    monkeypatch.setattr(_blas.sys, "platform", "linux")
    assert _blas.loaded_objects() is None
    for _ in range(2):
        assert set(_enter_once()) == {1}
    assert len(counting) == 2


def test_a_dspdc_fit_lists_the_loaded_objects_once(monkeypatch):
    """The set-up's and the rounds' limits nest inside one limit held for the whole fit, so
    a fit (in memory, and out of core from a Dask array) looks up the loaded libraries once,
    outside any other limit, and the limit ends with the fit."""
    import dask.array as da
    import numpy as np

    import ooc_kernels as ok

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    listed = []
    real = _blas.loaded_objects

    def counted():
        listed.append(_blas._depth)
        return real()

    monkeypatch.setattr(_blas, "loaded_objects", counted)
    for data in (X, da.from_array(X, chunks=50)):
        listed.clear()
        ok.DSPDCClassifier(alpha=1e-2, tol=1e-4, progress=False).fit(data, y)
        assert listed == [0]           # one outermost limit: one listing
        assert _blas._depth == 0       # and it ended with the fit
