"""The package's lazy names resolve when several threads ask for them at once.

The estimator classes come from a registry that imports the families on first use.  A
second thread must wait for a discovery under way: a registry marked "discovered" before
the first thread has imported the families gives it
``AttributeError: module 'ooc_kernels' has no attribute 'DSGRegressor'``.  Each run below
is a fresh interpreter, where the first lookups race.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import threading
    import ooc_kernels as ok
    names = ["DSGRegressor", "DSGClassifier", "DSPDCRegressor", "DSGOneClassSVM"] * 2
    barrier = threading.Barrier(len(names))
    errors, found = [], []
    def look(name):
        barrier.wait()
        try:
            found.append(getattr(ok, name).__name__)
        except Exception as exc:
            errors.append(repr(exc))
    threads = [threading.Thread(target=look, args=(n,)) for n in names]
    [t.start() for t in threads]
    [t.join() for t in threads]
    print(sorted(found) == sorted(names), errors)
""")


@pytest.mark.parametrize("run", range(3))
def test_estimator_classes_resolve_from_many_threads_in_a_fresh_process(run):
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=120, check=True)
    assert out.stdout.strip() == "True []", out.stdout + out.stderr
