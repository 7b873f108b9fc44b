"""The compiled-kernel cache lives in a per-user folder, never in the package folder.

numba's ``cache=True`` writes ``__pycache__/*.nbi`` and ``*.nbc`` next to a module's source:
for an installed package, files ``pip uninstall`` leaves behind, so a left-over
``site-packages/ooc_kernels`` folder shadows a later editable install.  These tests run a
copy of the package (a fresh "installation") in subprocesses, with the cache folder pointed
at a temporary folder, and look at both folders.
"""

import itertools
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import ooc_kernels
from ooc_kernels._jit._cache import CACHE_DIR_ENV_VAR, _KeyedDataCacheFile, cache_dir

PACKAGE = Path(ooc_kernels.__file__).resolve().parent

# Compiles and runs one real kernel; prints where the package came from, the result and
# numba's cache statistics of the kernel.
_RUN_ROWS = """
import json, numpy as np, ooc_kernels
from ooc_kernels._jit.rows import permute_rows_inplace
X = np.arange(12.0).reshape(6, 2)
permute_rows_inplace(X, np.array([3, 5, 0, 1, 4, 2]))
print(json.dumps({"file": ooc_kernels.__file__, "X": X.tolist(),
                  "hits": sum(permute_rows_inplace.stats.cache_hits.values()),
                  "cache_path": permute_rows_inplace.stats.cache_path}))
"""


def _install_copy(root: Path) -> Path:
    """A copy of the package's sources under ``root`` (no compiled or cached files)."""
    site = root / "site"
    shutil.copytree(PACKAGE, site / "ooc_kernels",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc", "*.pyc"))
    return site


def _run(site: Path, code: str, env_extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", CACHE_DIR_ENV_VAR, "PYTHONPATH")}
    env.update(PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1", **env_extra)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300, cwd=site.parent)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cache_files(folder: Path) -> list[Path]:
    return sorted(p for pattern in ("*.nbi", "*.nbc") for p in folder.rglob(pattern))


@pytest.mark.slow
def test_kernel_cache_is_written_outside_the_package_and_reused(tmp_path):
    site = _install_copy(tmp_path)
    cache = tmp_path / "cache"
    expected = np.arange(12.0).reshape(6, 2)[[3, 5, 0, 1, 4, 2]].tolist()

    first = _run(site, _RUN_ROWS, {CACHE_DIR_ENV_VAR: str(cache)})
    assert Path(first["file"]).resolve().parent == (site / "ooc_kernels").resolve()
    assert first["X"] == expected
    assert first["hits"] == 0
    # nothing compiled is left in the package folder: pip removes all of it on uninstall
    assert _cache_files(site) == []
    # ... it is in the documented folder: <root>/jit/<version>-<digest of the kernels>
    folder = Path(first["cache_path"])
    assert folder.parent == cache / "jit"
    assert folder.name.startswith(f"{ooc_kernels.__version__}-")
    names = [p.name for p in _cache_files(cache)]
    assert any(n.startswith("rows.permute_rows_inplace-") and n.endswith(".nbi")
               for n in names), names

    # a second process loads the compiled kernel from that cache
    second = _run(site, _RUN_ROWS, {CACHE_DIR_ENV_VAR: str(cache)})
    assert second["X"] == expected
    assert second["hits"] == 1
    assert _cache_files(site) == []


def test_numba_cache_dir_is_honoured_below_an_ooc_kernels_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(CACHE_DIR_ENV_VAR, raising=False)
    monkeypatch.setattr("numba.core.config.CACHE_DIR", str(tmp_path / "numba-cache"))
    assert cache_dir().parent == tmp_path / "numba-cache" / "ooc_kernels" / "jit"


@pytest.mark.slow
def test_an_edited_kernel_module_is_never_read_from_a_stale_cache(tmp_path):
    """A kernel inlines the kernels it calls from other modules: numba checks only the
    caller's own file, so an edit to the callee's module must change the cache folder."""
    site = _install_copy(tmp_path)
    jit = site / "ooc_kernels" / "_jit"
    (jit / "probe_callee.py").write_text(
        "from ooc_kernels._jit._cache import njit\n\n\n"
        "@njit(cache=True)\ndef callee(x):\n    return x + 1\n")
    (jit / "probe_caller.py").write_text(
        "from ooc_kernels._jit._cache import njit\n"
        "from ooc_kernels._jit.probe_callee import callee\n\n\n"
        "@njit(cache=True)\ndef caller(x):\n    return callee(x) * 10\n")
    code = ("import json\nfrom ooc_kernels._jit.probe_caller import caller\n"
            "print(json.dumps({'value': caller(1), 'path': caller.stats.cache_path}))\n")
    env = {CACHE_DIR_ENV_VAR: str(tmp_path / "cache")}

    before = _run(site, code, env)
    assert before["value"] == 20
    (jit / "probe_callee.py").write_text(
        (jit / "probe_callee.py").read_text().replace("x + 1", "x + 2"))
    after = _run(site, code, env)
    assert after["value"] == 30
    assert after["path"] != before["path"]


def test_cache_dir_defaults_to_the_per_user_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(CACHE_DIR_ENV_VAR, raising=False)
    monkeypatch.setattr("numba.core.config.CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(sys, "platform", "linux")
    folder = cache_dir()
    assert folder.parent == tmp_path / "xdg" / "ooc_kernels" / "jit"
    assert folder.name.startswith(f"{ooc_kernels.__version__}-")


def test_every_module_that_compiles_kernels_keys_the_cache():
    """A module that compiles with ``njit`` but is not among the cache's key sources would be
    read from a stale cache after an edit: every such module of the package is a key."""
    from ooc_kernels._jit._cache import kernel_sources

    keyed = set(kernel_sources())
    compiling = {path for path in PACKAGE.rglob("*.py")
                 if "@njit" in path.read_text() or "njit(" in path.read_text()}
    compiling.discard(PACKAGE / "_jit" / "_cache.py")
    assert compiling, "no kernel module found: the scan is broken"
    assert {PACKAGE / "families" / "dsg" / "kernels.py",
            PACKAGE / "families" / "dspdc" / "kernels.py"} <= compiling
    missing = sorted(str(p.relative_to(PACKAGE)) for p in compiling - keyed)
    assert not missing, f"kernel modules outside the cache key: {missing}"


def _interleave(saves, order):
    """Run ``saves`` (``(cache_file, key, data)``, one thread each) so that the index and
    data reads and writes of the cache files happen in ``order`` (the thread number of
    each successive operation): every interleaving of two processes' saves can be made."""
    cond, done = threading.Condition(), [0]

    def wrap(owner, op):
        def run(*args):
            with cond:
                assert cond.wait_for(lambda: order[done[0]] == owner, timeout=10), order
            try:
                return op(*args)
            finally:
                with cond:
                    done[0] += 1
                    cond.notify_all()
        return run

    threads = []
    for owner, (cache_file, key, data) in enumerate(saves):
        for name in ("_load_index", "_save_index", "_save_data"):
            setattr(cache_file, name, wrap(owner, getattr(cache_file, name)))
        threads.append(threading.Thread(target=cache_file.save, args=(key, data)))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert done[0] == len(order), (order, done[0])


def test_processes_saving_two_signatures_at_once_never_cross_their_code(tmp_path):
    """Two processes compiling two signatures of one kernel (Dask worker processes,
    parallel test workers) save into one index: in every order of their index and data
    reads and writes, each key the index names loads the code saved for that key, and no
    key loads another's."""
    keys = {"A": ((("float32", 2),), "cpu", ("h1", "h0")),
            "B": ((("float64", 2),), "cpu", ("h1", "h0"))}
    checked = 0
    for order in sorted(set(itertools.permutations((0, 0, 0, 1, 1, 1)))):
        folder = tmp_path / f"o{checked}"
        folder.mkdir()
        files = [_KeyedDataCacheFile(str(folder), "rows.kernel-10.py311", "stamp")
                 for _ in keys]
        _interleave([(f, keys[name], f"code of {name}") for f, name in zip(files, keys)],
                    order)
        reader = _KeyedDataCacheFile(str(folder), "rows.kernel-10.py311", "stamp")
        loaded = {name: reader.load(key) for name, key in keys.items()}
        assert any(loaded.values()), order
        for name, code in loaded.items():
            assert code in (None, f"code of {name}"), (order, loaded)
        checked += 1
    assert checked == 20
