"""A classifier's set-up reads the classes of ``y`` (and the label counts of
``class_weight="balanced"``) and the rows it samples (bandwidth, standardization, step size)
in one computation of one task per chunk: one round trip to a ``distributed`` scheduler
instead of two or three, with the classes, counts and rows each gets read alone."""

from __future__ import annotations

import dask.array as da
import numpy as np
import pytest
from dask.callbacks import Callback

from ooc_kernels import DSGClassifier
from ooc_kernels._seeds import derive_seed
from ooc_kernels.families.dsg import estimators
from ooc_kernels.families.dsg._bandwidth import GCV_MAX_ROWS
from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.sampling import draw_rows, labels_and_rows, sample_rows


def _fit_counting(X, y, sample_weight=None, classes=None, **params):
    """The fit's model, the computations its set-up ran and the sample it used."""
    computations, samples = [], []

    class Count(Callback):
        def _start(self, dsk):
            computations.append(len(dsk))

    real_start, real_sample = DSGClassifier._start, estimators._DSGEstimator._sample

    def start(self, data, sched, classes=None):
        with Count():
            real_start(self, data, sched, classes)

    def sample(self, data, sched):
        out = real_sample(self, data, sched)
        samples.append(out)
        return out

    model = DSGClassifier(max_iter=1, tol=None, n_features=64, block_size=32, random_state=3,
                          scheduler="sync", progress=False, **params)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DSGClassifier, "_start", start)
        patch.setattr(estimators._DSGEstimator, "_sample", sample)
        if classes is None:
            model.fit(X, y, sample_weight=sample_weight)
        else:
            model.partial_fit(X, y, classes=classes, sample_weight=sample_weight)
    assert not hasattr(model, "_setup_sample_read")   # read for the set-up only
    return model, computations, samples


@pytest.mark.parametrize("weighted, balanced", [(False, False), (True, False), (True, True)])
def test_classes_and_sampled_rows_are_read_in_one_computation(weighted, balanced):
    rng = np.random.default_rng(0)
    n = 5 * GCV_MAX_ROWS                # more rows than the set-up reads whole
    Xn = rng.normal(size=(n, 3))
    yn = np.array(["a", "b", "c"])[(Xn[:, 0] > 0).astype(int) + (Xn[:, 1] > 1)]
    wn = rng.uniform(0.5, 2.0, size=n)
    chunks = 250
    X, y = da.from_array(Xn, chunks=(chunks, 3)), da.from_array(yn, chunks=chunks)
    w = da.from_array(wn, chunks=chunks) if weighted else None
    model, computations, samples = _fit_counting(
        X, y, w, bandwidth=1.0, class_weight="balanced" if balanced else None)
    assert len(computations) == 1     # not one for y's classes, one for rows, one for counts
    assert model.classes_.tolist() == ["a", "b", "c"]
    if balanced:                      # n / (n_classes * count), the counts of every row
        counts = np.unique(yn, return_counts=True)[1]
        assert model._config.class_weight == tuple((n / (3 * counts)).tolist())
    (sample, y_sample, w_sample, origin), = samples
    rows = origin.chunk_of * chunks + origin.row_of
    assert len(set(origin.chunk_of.tolist())) == 8 and len(rows) > 0
    assert np.array_equal(sample, Xn[rows]) and np.array_equal(y_sample, yn[rows])
    assert np.array_equal(w_sample, wn[rows] if weighted else np.ones(len(rows)))
    # the rows a sample of its own reads (the draw does not depend on what is read with it)
    names = ("X", "y", "sample_weight") if weighted else ("X", "y")
    alone, chunk_of, row_of = sample_rows(
        model._fit_data(X, y, reset=False, sample_weight=w), n_rows=len(rows), max_chunks=8,
        seed=derive_seed(model.random_seed_, 3), var=names, return_index=True,
        scheduler="sync")
    assert np.array_equal(chunk_of, origin.chunk_of) and np.array_equal(row_of, origin.row_of)
    assert np.array_equal(alone[0], sample)


def test_classes_given_or_nothing_sampled_each_read_alone():
    rng = np.random.default_rng(1)
    Xn = rng.normal(size=(600, 2))
    yn = (Xn[:, 0] > 0).astype(np.int64)
    X, y = da.from_array(Xn, chunks=(200, 2)), da.from_array(yn, chunks=200)
    # every setting given: nothing sampled, the classes alone
    model, computations, samples = _fit_counting(
        X, y, bandwidth=1.0, standardize=False, eta0=0.1)
    assert len(computations) == 1 and samples == [] and model.classes_.tolist() == [0, 1]
    # classes given (partial_fit): the sample alone, the rows the fit reads with the classes
    _, computations, fitted = _fit_counting(X, y)
    _, alone, given = _fit_counting(X, y, classes=[0, 1])
    assert len(computations) == 1 and len(alone) == 1
    for a, b in zip(fitted[0][:3], given[0][:3]):
        assert np.array_equal(a, b)
    assert np.array_equal(given[0][0], Xn[given[0][3].chunk_of * 200 + given[0][3].row_of])


def test_labels_and_rows_one_task_per_chunk_equal_unique_and_sample_rows():
    rng = np.random.default_rng(2)
    chunks = (40, 40, 25, 40, 40, 15)
    X, w = rng.normal(size=(200, 3)), rng.uniform(size=200)
    y = rng.choice(np.array(["x", "yy", "z"]), size=200, p=[0.7, 0.2, 0.1])
    y[:40] = "x"                                    # a chunk without some of the labels
    data = ChunkedData({"X": da.from_array(X, chunks=(chunks, 3)),
                        "y": da.from_array(y, chunks=(chunks,)),
                        "sample_weight": da.from_array(w, chunks=(chunks,))})
    names = ("X", "y", "sample_weight")
    kw = dict(n_rows=30, max_chunks=4, seed=5, var=names)
    graphs = []

    class Count(Callback):
        def _start(self, dsk):
            graphs.append(len(dsk))

    with Count():
        found, counts, (rows, chunk_of, row_of) = labels_and_rows(
            data, draw_rows(data, **kw), counts=True, scheduler="sync")
    assert graphs == [len(chunks)]                  # one computation, one task per chunk
    labels, n = np.unique(y, return_counts=True)
    assert found.tolist() == labels.tolist() and counts.tolist() == n.tolist()
    (ax, ay, aw), a_chunk, a_row = sample_rows(data, scheduler="sync", return_index=True, **kw)
    assert np.array_equal(chunk_of, a_chunk) and np.array_equal(row_of, a_row)
    at = np.concatenate([[0], np.cumsum(chunks)])[chunk_of] + row_of
    for got, alone, every in zip(rows, (ax, ay, aw), (X, y, w)):
        assert np.array_equal(got, alone) and np.array_equal(got, every[at])
    found, counts, _ = labels_and_rows(data, draw_rows(data, **kw), scheduler="sync")
    assert found.tolist() == labels.tolist() and counts is None
