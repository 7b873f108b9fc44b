"""The quickstart pipeline at a small size, for the numbers the test suite rechecks.

``pipelines/quickstart.yaml`` as shipped, with 1,500 training and 300 test digits instead
of 200,000 and 20,000 and 512 random features instead of 8192 (the sizes of the README's
own test), run in a temporary copy of its folders.  Every other setting is the shipped
file's, so a change of the pipeline or of the defaults shows in these numbers.
``docs/benchmarks.md`` quotes them and ``tests/test_doc_numbers.py`` reruns this script and
compares.  Takes about half a minute on 2 cores.

Usage::

    python benchmarks/quickstart_small.py        # prints the metrics as JSON
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: ``(pattern, replacement)`` applied to the shipped pipeline; each must match once.
SIZES = [(r"\bn_samples: 200000\b", "n_samples: 1500"),
         (r"\bn_samples: 20000\b", "n_samples: 300"),
         (r"\bn_features: 8192\b", "n_features: 512")]


def small_pipeline(folder: Path) -> Path:
    """Write the small quickstart (pipeline and catalog, no data) under ``folder``."""
    text = (ROOT / "pipelines" / "quickstart.yaml").read_text()
    for pattern, replacement in SIZES:
        text, n = re.subn(pattern, replacement, text)
        if n != 1:
            raise SystemExit(f"pipelines/quickstart.yaml no longer has {pattern!r} once "
                             f"(found {n}); update SIZES in {Path(__file__).name}")
    (folder / "pipelines").mkdir(parents=True)
    (folder / "catalogs").mkdir()
    shutil.copy(ROOT / "catalogs" / "examples.yaml", folder / "catalogs" / "examples.yaml")
    path = folder / "pipelines" / "quickstart.yaml"
    path.write_text(text)
    return path


def run_small(folder: Path | None = None) -> dict:
    """Run the small quickstart in ``folder`` (default: a temporary folder, removed after)
    and return its metrics."""
    from ooc_kernels.pipeline import run_pipeline

    if folder is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run_small(Path(tmp))
    path = small_pipeline(Path(folder))
    # base_dir '..' is the copy's root: allowed, as --data-root . does from the repository
    return run_pipeline(path, allow_outside=[Path(folder)], progress=False)


if __name__ == "__main__":
    metrics = run_small()
    print(json.dumps({k: v for k, v in metrics.items() if k.startswith(("test_", "n_"))},
                     sort_keys=True))
