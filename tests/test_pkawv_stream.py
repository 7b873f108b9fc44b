"""What a stream of ``ProjectedKernelRidge.partial_fit`` calls equals.

The statistics add up exactly, so a stream equals one fit of the concatenation when
the first call fixes nothing from its rows: the Taylor basis with ``standardize=False``,
``center=False``, a number for ``bandwidth`` and ``alpha`` and an integer ``degree``.
Otherwise the first call fixes the standardization, the Taylor centre, the bandwidth,
``alpha``, the degree and the Nystrom dictionary from its own rows, and the stream is the
exact model of all the rows in those terms, not the one fit's."""

import numpy as np
from sklearn.metrics.pairwise import rbf_kernel

import ooc_kernels as ok
from ooc_kernels.families.pkawv.taylor import TaylorBasis

BATCHES = (0, 70, 150, 240)   # three uneven batches


def _data(n=240, d=3, seed=10):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d)) + [0.5, -0.3, 0.2]
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, -1] + 0.1 * rng.normal(size=n)
    return X, y


def _stream(X, y, **params):
    model = ok.ProjectedKernelRidge(scheduler="sync", chunk_size=25, **params)
    for lo, hi in zip(BATCHES[:-1], BATCHES[1:]):
        model.partial_fit(X[lo:hi], y[lo:hi])
    return model


def _taylor_predict(X, y, Xt, *, degree, bandwidth, alpha, center):
    """NumPy's ridge solve on the Taylor features of ``X - center`` (the formula's twin)."""
    basis = TaylorBasis(X.shape[1], degree, bandwidth)
    phi = basis.transform_ref(X - center)
    w = np.linalg.solve(phi.T @ phi + alpha * np.eye(phi.shape[1]), phi.T @ y)
    return basis.transform_ref(Xt - center) @ w


def test_a_stream_that_fixes_nothing_from_its_first_batch_equals_one_fit():
    X, y = _data()
    params = dict(degree=4, bandwidth=0.9, alpha=0.3, standardize=False, center=False)
    stream = _stream(X, y, **params)
    whole = ok.ProjectedKernelRidge(scheduler="sync", **params).fit(X, y)
    expected = _taylor_predict(X, y, X, degree=4, bandwidth=0.9, alpha=0.3, center=0.0)
    np.testing.assert_allclose(stream.predict(X), expected, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(whole.predict(X), expected, rtol=1e-9, atol=1e-10)


def test_a_centred_taylor_stream_expands_around_the_first_batch_mean():
    X, y = _data()
    params = dict(degree=4, bandwidth=0.9, alpha=0.3, standardize=False)
    stream = _stream(X, y, **params)
    whole = ok.ProjectedKernelRidge(scheduler="sync", **params).fit(X, y)
    first = X[:BATCHES[1]].mean(axis=0)
    np.testing.assert_allclose(stream.center_, first, rtol=1e-12)
    at_first = _taylor_predict(X, y, X, degree=4, bandwidth=0.9, alpha=0.3, center=first)
    at_all = _taylor_predict(X, y, X, degree=4, bandwidth=0.9, alpha=0.3,
                             center=X.mean(axis=0))
    np.testing.assert_allclose(stream.predict(X), at_first, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(whole.predict(X), at_all, rtol=1e-9, atol=1e-10)
    # another truncation of the same kernel: not the one fit's model
    assert np.max(np.abs(stream.predict(X) - whole.predict(X))) > 1e-6


def test_a_nystrom_stream_keeps_the_first_batch_dictionary():
    X, y = _data()
    params = dict(basis="nystrom-fixed", n_components=30, bandwidth=0.9, alpha=0.3,
                  standardize=False, random_state=0)
    stream = _stream(X, y, **params)
    D = stream.dictionary_
    assert D.shape == (30, 3)
    assert all((X[:BATCHES[1]] == row).all(axis=1).any() for row in D)   # first batch's
    # kernel ridge regression of all the rows restricted to span{k(d_j, .)}
    g = 1.0 / (2 * 0.9 ** 2)
    knm, kmm = rbf_kernel(X, D, gamma=g), rbf_kernel(D, D, gamma=g)
    a = np.linalg.lstsq(knm.T @ knm + 0.3 * kmm, knm.T @ y, rcond=None)[0]
    np.testing.assert_allclose(stream.predict(X), knm @ a, rtol=1e-7, atol=1e-7)


def test_a_standardized_stream_uses_the_first_batch_moments():
    X, y = _data()
    params = dict(degree=4, bandwidth=0.9, alpha=0.3)
    stream = _stream(X, y, **params)
    whole = ok.ProjectedKernelRidge(scheduler="sync", **params).fit(X, y)
    head = slice(0, BATCHES[1])
    mx, sx = X[head].mean(axis=0), X[head].std(axis=0)
    my, sy = y[head].mean(), y[head].std()
    expected = _taylor_predict((X - mx) / sx, (y - my) / sy, (X - mx) / sx, degree=4,
                               bandwidth=0.9, alpha=0.3, center=0.0) * sy + my
    np.testing.assert_allclose(stream.predict(X), expected, rtol=1e-9, atol=1e-10)
    # the same bandwidth in other units: another kernel, not the one fit's model
    assert np.max(np.abs(stream.predict(X) - whole.predict(X))) > 1e-6
