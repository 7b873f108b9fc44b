"""Documented numbers that are cheap to recompute are recomputed here.

``docs/benchmarks.md`` quotes the quickstart pipeline's metrics at a small size (the command
beside them is ``python benchmarks/quickstart_small.py``); this test runs that script and
compares with the quoted digits.  Fits are deterministic given ``random_state``, so the
comparison is exact to the digits printed.  The full-size quickstart takes minutes and is
not rerun; its test accuracy is quoted in two places (``docs/benchmarks.md`` and the README's
Python example, which trains the same model on the same data), and those must agree.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"

#: The small quickstart's quoted metrics in docs/benchmarks.md.
SMALL = re.compile(r"python benchmarks/quickstart_small\.py\n```\n\n.*?test accuracy "
                   r"\*\*(\d\.\d+)\*\*, test log loss (\d\.\d+)", re.DOTALL)
#: The full-size quickstart's test accuracy in docs/benchmarks.md and in the README.
FULL = re.compile(r"\| test accuracy \(digits deformed from source images disjoint from the "
                  r"training ones\) \| \*\*(\d\.\d+)\*\*")
README_SCORE = re.compile(r"clf\.score\(ok\.open_dataset\(\"catalogs/examples\.yaml\", "
                          r"\"digits_deformed_test\"\)\)\s+# (\d\.\d+)")


def _quoted(pattern: re.Pattern, path: Path) -> tuple[str, ...]:
    found = pattern.search(path.read_text())
    assert found, f"{path.name} no longer quotes what {pattern.pattern!r} looks for"
    return found.groups()


def _digits(text: str) -> int:
    return len(text.split(".")[1])


@pytest.mark.slow
def test_the_small_quickstart_numbers_in_the_benchmarks_page_are_what_it_gives(tmp_path):
    accuracy, log_loss = _quoted(SMALL, BENCHMARKS)
    spec = importlib.util.spec_from_file_location("quickstart_small",
                                                  ROOT / "benchmarks" / "quickstart_small.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    metrics = script.run_small(tmp_path)
    assert f"{metrics['test_accuracy']:.{_digits(accuracy)}f}" == accuracy
    assert f"{metrics['test_log_loss']:.{_digits(log_loss)}f}" == log_loss


def test_the_readme_example_quotes_the_quickstarts_test_accuracy():
    (full,) = _quoted(FULL, BENCHMARKS)
    (readme,) = _quoted(README_SCORE, README)
    assert readme == full


def _number(pattern: str, path: Path) -> float:
    """The number ``pattern``'s one group finds in ``path`` (commas of thousands dropped)."""
    (text,) = _quoted(re.compile(pattern), path)
    return float(text.replace(",", ""))


def test_the_set_up_constants_quoted_in_the_docs_are_the_codes():
    """The robust losses' target clip, ProjectedKernelRidge's set-up rows, width multiples,
    trial rows and alpha grid and the DSPDC logistic start's limits, as the pages state them, against the constants the
    code uses."""
    from ooc_kernels.families.dsg._robust_targets import TARGET_CLIP
    from ooc_kernels.families.dspdc._logistic_start import (NEWTON_MAX_FEATURES,
                                                            NEWTON_ROWS_PER_COLUMN)
    from ooc_kernels.families.dspdc._squared_start import START_MAX_FEATURES
    from ooc_kernels.families.pkawv._setup import (ALPHAS, BANDWIDTH_MULTIPLES, SETUP_ROWS,
                                                   TRIAL_ROWS)

    docs = ROOT / "docs"
    for page in (docs / "defaults.md", docs / "machines" / "regression.md"):
        assert _number(r"targets clipped to \+-(\d+\.\d+)", page) == TARGET_CLIP, page.name
    pkr = docs / "machines" / "projected_kernel_ridge.md"
    assert _number(r"and draws ([\d,]+) rows", pkr) == SETUP_ROWS
    multiples = re.compile(r"picks `sigma` on those rows: of ([\d., ]+) and\s+(\d+) times")
    listed, last_multiple = _quoted(multiples, pkr)
    assert [float(v) for v in listed.split(", ")] + [float(last_multiple)] == \
        list(BANDWIDTH_MULTIPLES)
    assert _number(r"error on ([\d,]+) of them", pkr) == TRIAL_ROWS
    grid = re.compile(r"of `([\d.e+-]+), ([\d.e+-]+), \.\.\., ([\d.e+-]+)` \(each scaled")
    first, second, last = map(float, _quoted(grid, pkr))
    assert (first, last) == (ALPHAS[0], ALPHAS[-1])
    assert np.allclose(np.array(ALPHAS[1:]) / np.array(ALPHAS[:-1]), second / first)
    dspdc = docs / "dspdc.md"
    limits = re.compile(r"Above (\d+) solver columns and up to (\d+), the fit starts from the "
                        r"same Newton solution in\s+the `p`-space where the rows are at most "
                        r"(\d+) per column")
    assert tuple(map(int, _quoted(limits, dspdc))) == (
        NEWTON_MAX_FEATURES, START_MAX_FEATURES, NEWTON_ROWS_PER_COLUMN)
