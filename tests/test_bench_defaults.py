"""``benchmarks/defaults.py`` records the default's bandwidth in multiples of the median
distance as JSON, one number or one per input (``bandwidth_`` of per-input widths)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("defaults_bench",
                                                  ROOT / "benchmarks" / "defaults.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("bandwidth, expected", [(3.0, 1.5),
                                                 (np.array([1.0, 4.0]), [0.5, 2.0])])
def test_bandwidth_multiple_is_json(bench, bandwidth, expected):
    row = {"bandwidth_multiple": bench._multiple(bandwidth, 2.0)}
    assert json.loads(json.dumps(row))["bandwidth_multiple"] == expected
