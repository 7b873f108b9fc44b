"""The estimate of ``benchmarks/threads_estimate.py``: a fit's CPU seconds split into the
one-thread parts ``S``, the step kernel ``K`` and the rest ``B``, medians over fits."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("threads_estimate",
                                                  ROOT / "benchmarks" / "threads_estimate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(n_jobs, cpu, setup, other, growth, kernel, load=1.0):
    parts = {"set-up": setup, "round reads (not ahead)": None, "read wait": 0.0,
             "chunk step, other": other, "growth phase": growth, "step kernel": kernel,
             "apply": 0.25, "engine, other": None, "fit, other": None, "reads (ahead)": 0.5}
    return {"n_jobs": n_jobs, "cpu_s": cpu, "load_before": load,
            "parts": {k: {"wall_s": None, "cpu_s": v} for k, v in parts.items()}}


def test_split_takes_the_one_thread_parts_the_kernel_and_the_rest(bench):
    got = bench.split(_run(2, 10.0, 0.5, 1.0, 0.25, 6.0))
    assert got == {"S": 2.0, "K": 6.0, "B": 2.0, "fit": 10.0}


def test_estimate_is_the_median_of_each_share(bench):
    runs = [_run(1, 9.0, 1.0, 1.0, 0.0, 5.0), _run(1, 12.0, 2.0, 1.0, 0.0, 8.0),
            _run(1, 11.0, 3.0, 1.0, 0.0, 6.0)]
    # S: 2.25, 3.25, 4.25; K: 5, 8, 6; B: 1.75, 0.75, 0.75; fit: 9, 12, 11
    got = bench.estimate(runs)
    assert got == {"S": 3.25, "K": 6.0, "B": 0.75, "fit": 11.0}


def test_the_printed_prediction_is_amdahl_with_the_reads_shared_or_stalling(bench, tmp_path,
                                                                             capsys,
                                                                             monkeypatch):
    path = tmp_path / "parts.json"
    path.write_text(json.dumps({"runs": [_run(1, 10.0, 0.5, 1.0, 0.25, 6.0),
                                         _run(2, 12.0, 0.5, 1.0, 0.25, 8.0)]}))
    monkeypatch.setattr("sys.argv", ["threads_estimate.py", str(path), "--label", "A"])
    bench.main()
    out = capsys.readouterr().out
    # T_1 = 2 + 6 = 8; T_2 = 2 + 4 + 2 / 2 = 7 (shared) or 2 + 4 + 2 = 8 (stall)
    assert "| A | 8.000 | 7.000 | 8.000 | 1.00x to 1.14x |" in out
