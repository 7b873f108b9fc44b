"""What a local round costs besides its task: a round of one task whose rows were read ahead
runs that task in the calling thread (no Dask graph to build, tokenize or schedule; a DSPDC
fit's first round reads its rows there too), and a fit on Dask's default scheduler reads
ahead; the models are those of rounds that each build and compute their graph, bit for bit
(DSPDC and DSG)."""

from __future__ import annotations

import dask
import dask.array as da
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.families.dspdc import _squared_start
from ooc_kernels.parallel.graph import RoundGraph
from ooc_kernels.parallel.read_ahead import read_ahead_enabled


def _lazy(seed=0, n=600, p=6, classify=False, chunk=150):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * np.linspace(0.5, 3.0, p) + 1.0
    s = X @ rng.normal(size=p) + rng.normal(size=n)
    y = np.where(s > np.median(s), 1, 0) if classify else s
    return da.from_array(X, chunks=(chunk, -1)), da.from_array(y, chunks=chunk)


def _graphs(monkeypatch):
    """Count the rounds whose graph is built (:meth:`RoundGraph.local_round`)."""
    calls = []
    original = RoundGraph.local_round

    def counted(self, *a, **k):
        calls.append(1)
        return original(self, *a, **k)

    monkeypatch.setattr(RoundGraph, "local_round", counted)
    return calls


FITS = [
    (ok.DSPDCRegressor, {"alpha": 1e-3, "tol": 1e-5, "max_iter": 40}, False),
    (ok.DSPDCClassifier, {"alpha": 1e-3, "l1_ratio": 0.3, "tol": 1e-3, "max_iter": 40}, True),
]


@pytest.mark.parametrize("Est, params, classify", FITS)
@pytest.mark.parametrize("scheduler", [None, "sync"])   # None: the threaded one
def test_dspdc_rounds_without_a_graph_give_the_graph_rounds_bit_for_bit(
        monkeypatch, Est, params, classify, scheduler):
    # from the zero start: the squared loss's start certifies the ridge problem at epoch 0, and
    # the rounds under test would not run (tests/test_dspdc_memory_start.py)
    monkeypatch.setattr(_squared_start, "START_MAX_FEATURES", 0)
    X, y = _lazy(classify=classify)
    kw = dict(params, chunk_size=150, random_state=2, progress=False, scheduler=scheduler)
    graphs = _graphs(monkeypatch)
    with dask.config.set({"ooc-kernels.local.read_ahead": False}):   # a graph every round
        ref = Est(**kw).fit(X, y)
    n_ref = len(graphs)
    fast = Est(**kw).fit(X, y)
    n_fast = len(graphs) - n_ref
    assert n_ref >= ref.n_iter_ > 2
    assert n_fast == 0   # no graph: the first round, which nothing read ahead for, reads here
    np.testing.assert_array_equal(fast.coef_, ref.coef_)
    assert fast.intercept_ == ref.intercept_
    assert fast.n_iter_ == ref.n_iter_
    assert [(h["primal"], h["dual"]) for h in fast.gap_history_] == \
        [(h["primal"], h["dual"]) for h in ref.gap_history_]


def test_dsg_rounds_without_a_graph_give_the_graph_rounds_bit_for_bit(monkeypatch):
    X, y = _lazy(1, classify=True)
    kw = dict(n_features=64, block_size=64, max_iter=3, tol=None, chunk_size=150, random_state=0,
              progress=False)
    graphs = _graphs(monkeypatch)
    with dask.config.set({"ooc-kernels.local.read_ahead": False}):
        ref = ok.DSGClassifier(**kw).fit(X, y)
    n_ref = len(graphs)
    fast = ok.DSGClassifier(**kw).fit(X, y)
    assert len(graphs) - n_ref < n_ref
    np.testing.assert_array_equal(fast.decision_function(X[:50]),
                                  ref.decision_function(X[:50]))


def test_several_tasks_a_round_keep_the_graph(monkeypatch):
    """``chunks_per_round=2``: the round's tasks run in Dask's threads, every round."""
    X, y = _lazy(2)
    graphs = _graphs(monkeypatch)
    est = ok.DSPDCRegressor(alpha=1e-3, tol=None, max_iter=2, chunk_size=150,
                            chunks_per_round=2, shuffle_chunks=1, random_state=0,
                            progress=False).fit(X, y)
    assert len(graphs) == est.n_iter_ * 2       # 4 chunks: 2 rounds of 2 tasks an epoch


def test_the_default_scheduler_reads_ahead():
    """No scheduler named: rounds run on Dask's threaded scheduler, and read ahead; a
    scheduler set in Dask's configuration decides."""
    assert read_ahead_enabled(None)
    with dask.config.set(scheduler="processes"):
        assert not read_ahead_enabled(None)
    with dask.config.set(scheduler="sync"):
        assert read_ahead_enabled(None)


def test_factorized_rounds_without_a_graph_get_the_whole_factor(monkeypatch):
    """Factorized data ``A = U V``: the whole factor ``V`` reaches the rounds run in this
    thread (computed once) as it reaches the graph's tasks: the same model bit for bit."""
    rng = np.random.default_rng(3)
    U = rng.normal(size=(600, 3))
    V = rng.normal(size=(3, 8))
    y = U @ V @ rng.normal(size=8) + 0.1 * rng.normal(size=600)
    data = ok.Factorized(da.from_array(U, chunks=(150, -1)), V)
    kw = dict(alpha=1e-3, tol=1e-3, max_iter=30, chunk_size=150, random_state=1,
              progress=False)
    graphs = _graphs(monkeypatch)
    with dask.config.set({"ooc-kernels.local.read_ahead": False}):
        ref = ok.DSPDCRegressor(**kw).fit(data, da.from_array(y, chunks=150))
    n_ref = len(graphs)
    fast = ok.DSPDCRegressor(**kw).fit(data, da.from_array(y, chunks=150))
    assert len(graphs) == n_ref > 0        # no graph, the first round's included
    np.testing.assert_array_equal(fast.coef_, ref.coef_)
    assert fast.intercept_ == ref.intercept_ and fast.n_iter_ == ref.n_iter_
