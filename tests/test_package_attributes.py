"""The package's subpackages are attributes of ``ooc_kernels`` in a fresh interpreter, as
the docs use them (``ok.data.open_zarr_dataset``), and still imported only on first use."""

from __future__ import annotations

import subprocess
import sys


def test_subpackages_are_attributes_imported_on_first_use():
    code = (
        "import sys, ooc_kernels as ok\n"
        "assert 'ooc_kernels.data' not in sys.modules\n"
        "print(ok.data.open_zarr_dataset.__name__, ok.evaluation.evaluate.__name__,\n"
        "      ok.pipeline.run_pipeline.__name__, ok.estimators.available_estimators.__name__,\n"
        "      ok.features.kernel_function.__name__)\n"
        "try:\n"
        "    ok.nothing\n"
        "except AttributeError as err:\n"
        "    print(err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out == ["open_zarr_dataset evaluate run_pipeline available_estimators "
                   "kernel_function", "module 'ooc_kernels' has no attribute 'nothing'"]
