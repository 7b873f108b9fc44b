"""Factorized data A = U V: the sparse_recovery generator, random instance reduction, the
dense twin, and ``ok.Factorized`` inputs (round trips and every bad input at once)."""

from __future__ import annotations

import math

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from dask.callbacks import Callback

import ooc_kernels as ok
from ooc_kernels.data import (
    Factorized,
    generate_chunk,
    instance_reduction,
    iter_chunks,
    make_dataset,
    materialize,
    materialize_chunks,
    open_zarr_dataset,
)
from ooc_kernels.data.factorized import sparse_recovery_coef
from ooc_kernels.data.generators import chunk_rng, get_generator
from ooc_kernels.data.inputs import as_chunked, is_lazy_input, wrap_prediction
from ooc_kernels.exceptions import (
    DatasetExistsError,
    InvalidDataError,
    SchemaError,
    ValidationError,
)

SMALL = {"n_features": 12, "rank": 4, "n_informative": 3}


def _raw(random_state, index, n_rows, p, split="train"):
    """The raw X and labels of a sparse_recovery chunk, regenerated from the documented
    draws (X first, then one uniform per row), independently of the library's code."""
    rng = np.random.default_rng(np.random.SeedSequence(random_state,
                                                       spawn_key=({"train": 0, "test": 1}[split],
                                                                  index)))
    X = rng.standard_normal((n_rows, p))
    u = rng.random(n_rows)
    return X, u


def _G(random_state, rank, p):
    rng = np.random.default_rng(np.random.SeedSequence(random_state, spawn_key=(2,)))
    return rng.standard_normal((rank, p)) / math.sqrt(rank)


# --------------------------------------------------------------------------- generator
def test_sparse_recovery_is_registered_and_writes_the_factorized_schema(tmp_path):
    assert "sparse_recovery" in ok.available_generators()
    spec = get_generator("sparse_recovery")
    assert spec.schema == "factorized" and spec.task == "classification"
    assert dict(spec.defaults) == {"n_features": 100, "rank": 20, "n_informative": None}
    p = make_dataset("sparse_recovery", tmp_path / "f.zarr", 250, chunk_size=100,
                     random_state=3, **SMALL)
    ds = open_zarr_dataset(p)
    assert dict(ds.sizes) == {"sample": 250, "rank": 4, "feature": 12}
    assert ds.U.dtype == np.float32 and ds.V.dtype == np.float32 and ds.y.dtype == np.int8
    assert ds.U.chunks == ((100, 100, 50), (4,)) and ds.V.chunks == ((4,), (12,))
    assert ds.attrs["task"] == "classification" and ds.attrs["classes"] == [-1, 1]
    assert ds.attrs["ooc_kernels_schema"] == "factorized"
    assert ds.attrs["generator_params"] == SMALL
    # the same call keeps the store; the store is the chunks generate_chunk returns
    assert make_dataset("sparse_recovery", p, 250, chunk_size=100, random_state=3,
                        exist_ok=True, **SMALL) == p
    np.testing.assert_array_equal(ds.U[100:200].values,
                                  generate_chunk("sparse_recovery", 1, 100, random_state=3,
                                                 **SMALL)["U"])
    # the catalog/Zarr path of the adapter: U and y along samples, V whole
    data = as_chunked(ds)
    assert sorted(data.variables) == ["U", "y"] and list(data.whole) == ["V"]
    assert data.chunk_sizes == (100, 100, 50) and data.n_features == 12
    np.testing.assert_array_equal(np.asarray(data.whole["V"].compute()), ds.V.values)


def test_sparse_recovery_chunks_are_independent_of_n_samples_and_of_each_other():
    streamed = list(iter_chunks("sparse_recovery", 350, chunk_size=100, random_state=5,
                                **SMALL))
    direct = [generate_chunk("sparse_recovery", i, rows, random_state=5, **SMALL)
              for i, rows in reversed(list(enumerate([100, 100, 100, 50])))][::-1]
    for s, d in zip(streamed, direct, strict=True):
        assert list(s) == list(d) == ["U", "y"]
        np.testing.assert_array_equal(s["U"], d["U"])
        np.testing.assert_array_equal(s["y"], d["y"])
    longer = list(iter_chunks("sparse_recovery", 1000, chunk_size=100, random_state=5,
                              **SMALL))
    for i in range(3):
        np.testing.assert_array_equal(longer[i]["U"], streamed[i]["U"])
    assert not np.array_equal(streamed[0]["U"], streamed[1]["U"])
    other = generate_chunk("sparse_recovery", 0, 100, random_state=6, **SMALL)
    test = generate_chunk("sparse_recovery", 0, 100, random_state=5, split="test", **SMALL)
    assert not np.array_equal(other["U"], streamed[0]["U"])
    assert not np.array_equal(test["U"], streamed[0]["U"])


def test_u_is_x_times_g_transposed_from_independently_regenerated_draws(tmp_path):
    p = make_dataset("sparse_recovery", tmp_path / "tiny.zarr", 25, chunk_size=10,
                     random_state=7, **SMALL)
    ds = open_zarr_dataset(p)
    G = _G(7, SMALL["rank"], SMALL["n_features"])
    np.testing.assert_array_equal(ds.V.values, G.astype(np.float32))  # V = G, whole_rng
    np.testing.assert_array_equal(
        ds.V.values, get_generator("sparse_recovery").whole(7, SMALL)["V"])
    G32 = G.astype(np.float32).astype(np.float64)
    beta = sparse_recovery_coef(12, 3)
    assert beta.tolist() == [1.0] * 3 + [0.0] * 9
    for i, (lo, hi) in enumerate([(0, 10), (10, 20), (20, 25)]):
        X, u = _raw(7, i, hi - lo, 12)
        np.testing.assert_allclose(ds.U[lo:hi].values, X @ G32.T, rtol=1e-6, atol=1e-6)
        labels = np.where(u < 1 / (1 + np.exp(-X @ beta)), 1, -1)
        np.testing.assert_array_equal(ds.y[lo:hi].values, labels)


def test_label_model_recovers_the_support_and_g_has_the_right_scale():
    from sklearn.linear_model import LogisticRegression

    # the raw features behind the labels: the informative ones carry the signal
    p, k, n = 20, 4, 6000
    chunk = generate_chunk("sparse_recovery", 0, n, random_state=1, n_features=p, rank=10,
                           n_informative=k)
    X, _ = _raw(1, 0, n, p)
    y = chunk["y"]
    assert set(np.unique(y)) == {-1, 1} and 0.35 < np.mean(y == 1) < 0.65
    coef = LogisticRegression(C=1.0, max_iter=1000).fit(X, y).coef_[0]
    # the maximum-likelihood fit finds beta itself: 1 on the support, 0 elsewhere
    np.testing.assert_allclose(coef[:k], 1.0, atol=0.2)
    assert np.all(np.abs(coef[k:]) < 0.2), coef
    # G (rank x p) has entries N(0, 1/rank): E[G^T G] = I, and the default k = min(50, p)
    G = get_generator("sparse_recovery").whole(0, {"n_features": 400, "rank": 50,
                                                    "n_informative": None})["V"]
    G = G.astype(np.float64)
    assert abs(G.var() * 50 - 1) < 0.05 and abs(G.mean()) < 0.01
    gram = G.T @ G
    assert abs(np.mean(np.diag(gram)) - 1) < 0.02
    assert abs(np.mean(gram[~np.eye(400, dtype=bool)])) < 0.01
    default = generate_chunk("sparse_recovery", 0, 3, n_features=30, rank=5)
    assert default["U"].shape == (3, 5)


@pytest.mark.parametrize("params, match", [
    ({"rank": 0}, r"rank=0 must be an integer >= 1"),
    ({"rank": 30, "n_features": 10}, r"rank=30 must be <= n_features=10.*lower rank"),
    ({"n_informative": 11, "n_features": 10, "rank": 2},
     r"n_informative=11 must be <= n_features=10; lower it, or leave it out"),
    ({"n_informative": -1}, r"n_informative=-1 must be an integer >= 0"),
    ({"n_features": 2.5}, r"n_features=2.5 must be an integer"),
])
def test_sparse_recovery_bad_parameters(tmp_path, params, match):
    with pytest.raises(ValidationError, match=match):
        make_dataset("sparse_recovery", tmp_path / "x.zarr", 10, **params)
    assert not (tmp_path / "x.zarr").exists()


# --------------------------------------------------------------------------- dense twin
def test_materialize_writes_the_same_rows_as_a_supervised_store(tmp_path):
    f = make_dataset("sparse_recovery", tmp_path / "f.zarr", 45, chunk_size=20,
                     random_state=2, **SMALL)
    fa = open_zarr_dataset(f)
    twin = open_zarr_dataset(materialize(f, tmp_path / "twin.zarr"))
    assert twin.attrs.get("ooc_kernels_schema", "supervised") == "supervised"
    assert twin.X.chunks == ((20, 20, 5), (12,)) and twin.X.dtype == np.float32
    assert twin.attrs["task"] == "classification" and twin.attrs["classes"] == [-1, 1]
    assert twin.attrs["source"]["generator"] == "sparse_recovery"
    assert twin.attrs["source"]["path"] == str(f)
    A = fa.U.values.astype(np.float64) @ fa.V.values.astype(np.float64)
    np.testing.assert_allclose(twin.X.values, A, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(twin.y.values, fa.y.values)
    # chunk by chunk, for any factorized input (here an in-memory Factorized)
    parts = list(materialize_chunks(Factorized(fa.U.values, fa.V.values), fa.y.values,
                                    chunk_size=15))
    assert [c["X"].shape for c in parts] == [(15, 12)] * 3
    np.testing.assert_allclose(np.concatenate([c["X"] for c in parts]), A, rtol=1e-6,
                               atol=1e-6)
    with pytest.raises(DatasetExistsError, match=r"already exists; pass overwrite=True"):
        materialize(f, tmp_path / "twin.zarr")
    with pytest.raises(ValidationError, match=r"expected factorized data \(U, V\), got the "
                                              r"variables \['X', 'y'\]"):
        list(materialize_chunks(tmp_path / "twin.zarr"))


# --------------------------------------------------------------------------- instance reduction
class _Reads(Callback):
    """A Dask array whose chunk loads are recorded, grouped by compute call."""

    def __init__(self, values, chunk):
        super().__init__()
        self.values, self.chunk, self.calls = values, chunk, [[]]

    def _start(self, dsk):
        self.calls.append([])

    def load(self, i):
        self.calls[-1].append(i)
        return self.values[i * self.chunk:(i + 1) * self.chunk]

    def array(self, name):
        n = len(self.values)
        count = -(-n // self.chunk)
        dsk = {(name, i) + (0,) * (self.values.ndim - 1): (self.load, i) for i in range(count)}
        chunks = ((self.chunk,) * (n // self.chunk) + ((n % self.chunk,) if n % self.chunk
                                                       else ()),) + \
            tuple((s,) for s in self.values.shape[1:])
        return da.Array(dsk, name, chunks, dtype=self.values.dtype)

    @property
    def reads(self):
        return [c for c in self.calls if c]


def _supervised(n=57, p=6, chunk=10, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p))
    y = (rng.random(n) < 0.5).astype(np.int32)
    return X, y


def test_instance_reduction_v_is_g_x_and_u_is_g_transposed(tmp_path):
    X, y = _supervised()
    ds = xr.Dataset({"X": (("sample", "feature"), X), "y": (("sample",), y)}).chunk(
        {"sample": 10})
    p = instance_reduction(ds, tmp_path / "r.zarr", rank=5, random_state=4)
    red = open_zarr_dataset(p)
    assert dict(red.sizes) == {"sample": 57, "rank": 5, "feature": 6}
    assert red.U.chunks[0] == (10, 10, 10, 10, 10, 7)
    assert red.attrs["reduction"] == "instance_reduction" and red.attrs["rank"] == 5
    assert red.attrs["task"] == "classification"
    np.testing.assert_array_equal(red.y.values, y)
    # U = G^T, chunk k from its own generator, entries N(0, 1/rank)
    for k in range(6):
        lo, hi = 10 * k, min(10 * k + 10, 57)
        expected = chunk_rng(4, "train", k).standard_normal((hi - lo, 5)) / math.sqrt(5)
        np.testing.assert_array_equal(red.U[lo:hi].values, expected.astype(np.float32))
    G = red.U.values.astype(np.float64).T  # small: a 57-row test
    np.testing.assert_allclose(red.V.values, G @ X, rtol=1e-5, atol=1e-5)
    # the same seed gives the same store; E[G^T G] = I
    again = open_zarr_dataset(instance_reduction(ds, tmp_path / "r2.zarr", rank=5,
                                                 random_state=4))
    np.testing.assert_array_equal(again.V.values, red.V.values)
    big = instance_reduction(ds, tmp_path / "r3.zarr", rank=57, random_state=0)
    Gb = open_zarr_dataset(big).U.values.astype(np.float64).T
    assert abs(np.mean(np.diag(Gb.T @ Gb)) - 1) < 0.1


def test_instance_reduction_reads_x_once_one_chunk_at_a_time(tmp_path):
    """Memory: never the whole X; each compute call reads one chunk, each chunk once."""
    X, y = _supervised(n=90, p=4)
    xs, ys = _Reads(X, 10), _Reads(y.astype(np.float32), 10)
    ds = xr.Dataset({"X": (("sample", "feature"), xs.array("x-source")),
                     "y": (("sample",), ys.array("y-source"))})
    with xs, ys:
        p = instance_reduction(ds, tmp_path / "r.zarr", rank=3, random_state=0)
    assert len(xs.reads) == 9 and all(len(c) == 1 for c in xs.reads)
    assert sorted(i for c in xs.reads for i in c) == list(range(9))  # one pass over X
    assert len(ys.reads) == 9 and all(len(c) == 1 for c in ys.reads)
    red = open_zarr_dataset(p)
    assert red.attrs["task"] == "regression" and red.y.dtype == np.float32
    np.testing.assert_allclose(red.V.values, red.U.values.astype(np.float64).T @ X,
                               rtol=1e-5, atol=1e-5)
    # a chunk size that straddles source chunks reads at most the two it overlaps
    xs.calls = [[]]
    with xs:
        instance_reduction(ds, tmp_path / "r15.zarr", rank=3, chunk_size=15)
    assert max(len(c) for c in xs.reads) == 2
    assert sorted(set(i for c in xs.reads for i in c)) == list(range(9))


def test_instance_reduction_from_a_store_and_its_errors(tmp_path):
    src = make_dataset("nonlinear_binary", tmp_path / "nb.zarr", 40, chunk_size=20,
                       n_features=5)
    red = open_zarr_dataset(instance_reduction(src, tmp_path / "r.zarr", rank=3))
    assert red.attrs["classes"] == [0, 1] and red.y.dtype == np.int32
    assert red.attrs["source"]["generator"] == "nonlinear_binary"
    with pytest.raises(DatasetExistsError, match=r"already exists; pass overwrite=True"):
        instance_reduction(src, tmp_path / "r.zarr", rank=3)
    with pytest.raises(ValidationError, match=r"rank=41 must be <= n_samples=40"):
        instance_reduction(src, tmp_path / "x.zarr", rank=41)
    with pytest.raises(ValidationError, match=r"rank must be a positive integer, got 0"):
        instance_reduction(src, tmp_path / "x.zarr", rank=0)
    with pytest.raises(ValidationError, match=r"takes a supervised dataset \(X, y\), got the "
                                              r"variables \['U', 'y', 'V'\] \('factorized'"):
        instance_reduction(tmp_path / "r.zarr", tmp_path / "x.zarr", rank=2)
    X, y = _supervised(n=30)
    X[23, 2] = np.nan
    ds = xr.Dataset({"X": (("sample", "feature"), X), "y": (("sample",), y)}).chunk(
        {"sample": 10})
    with pytest.raises(InvalidDataError, match=r"X has a non-finite value \(nan\) in chunk 2, "
                                               r"row 3, feature 2 \(sample 23 of the source\)"):
        instance_reduction(ds, tmp_path / "x.zarr", rank=2)
    assert not (tmp_path / "x.zarr").exists()


# --------------------------------------------------------------------------- ok.Factorized
def _factors(n=10, d=3, p=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, d)), rng.standard_normal((d, p)), np.arange(n) % 2


@pytest.mark.parametrize("kind", ["numpy", "dask", "dataarray", "dataarray-memory"])
def test_factorized_round_trip(kind):
    U, V, y = _factors()
    if kind == "dask":
        Ui, Vi, yi = da.from_array(U, chunks=(4, 3)), da.from_array(V), da.from_array(y, 4)
    elif kind == "dataarray":
        Ui = xr.DataArray(U, dims=("time", "r")).chunk({"time": 4})
        Vi, yi = xr.DataArray(V, dims=("r", "f")), xr.DataArray(y, dims=("time",))
    elif kind == "dataarray-memory":
        Ui, Vi, yi = xr.DataArray(U, dims=("time", "r")), xr.DataArray(V, dims=("r", "f")), y
    else:
        Ui, Vi, yi = U, V, y
    F = ok.Factorized(Ui, Vi)
    assert F.shape == (10, 5) and F.rank == 3
    data = as_chunked(F, yi, chunk_size=4)
    assert data.chunk_sizes == (4, 4, 2)
    assert data.dims == {"U": ("sample", "rank"), "y": ("sample",), "V": ("rank", "feature")}
    assert data.sizes == {"sample": 10, "rank": 3, "feature": 5} and data.n_features == 5
    assert data.attrs == {"ooc_kernels_schema": "factorized"}
    assert isinstance(data.whole["V"], np.ndarray) and data.whole["V"].dtype == np.float64
    np.testing.assert_array_equal(data.whole["V"], V)
    blocks = data.delayed_chunks()
    for k, (lo, hi) in enumerate([(0, 4), (4, 8), (8, 10)]):
        np.testing.assert_array_equal(blocks["U"][k].compute(), U[lo:hi])
        np.testing.assert_array_equal(blocks["y"][k].compute(), y[lo:hi])
    assert is_lazy_input(F) == (kind in ("dask", "dataarray", "dataarray-memory"))


def test_factorized_dtypes_without_targets_and_predictions():
    U, V, _ = _factors()
    data = as_chunked(ok.Factorized(U.astype(np.float32), V), chunk_size=5)
    assert data.variables["U"].dtype == np.float32 and data.whole["V"].dtype == np.float32
    assert "y" not in data
    ints = as_chunked(ok.Factorized(np.ones((4, 2), dtype=np.int64), np.eye(2)))
    assert ints.variables["U"].dtype == np.float64
    with pytest.raises(ValidationError, match=r"no targets: pass y, e\.g\. "
                                              r"fit\(ok\.Factorized\(U, V\), y\)"):
        as_chunked(ok.Factorized(U, V), require_y=True)
    Ux = xr.DataArray(U, dims=("time", "r"), coords={"time": np.arange(10) * 10})
    pred = wrap_prediction(ok.Factorized(Ux, V), np.zeros(10))
    assert pred.dims == ("time",) and pred.time.values[-1] == 90
    assert repr(ok.Factorized(U, V)) == "Factorized(U=ndarray (10, 3), V=ndarray (3, 5))"
    assert ok.Factorized is Factorized and "Factorized" in ok.__all__


def test_every_bad_factorized_input_is_reported_at_once():
    U, V, y = _factors()
    V_bad = np.vstack([V, V[:1]])  # rank 4 against U's 3
    V_bad[1, 2] = np.nan
    Ud = da.from_array(U, chunks=(4, 1))
    with pytest.raises(SchemaError) as info:
        as_chunked(ok.Factorized(Ud, V_bad), y[:7])
    msg, problems = str(info.value), info.value.problems
    assert msg.startswith("the factorized input (U, V, y) has 4 problems:")
    assert len(problems) == 4
    assert "the ranks of U and V differ: U has shape (10, 3) (n_samples, rank) and V has " \
           "shape (4, 5) (rank, n_features)" in msg
    assert "A = U V needs U.shape[1] == V.shape[0]" in msg
    assert "U is chunked along the rank axis (rank chunks (1, 1, 1))" in msg
    assert "Fix: U = U.rechunk({1: -1})" in msg
    assert "U and y have different numbers of samples: 10 and 7" in msg
    assert "V has 1 non-finite value(s), the first (nan) at rank 1, feature 2" in msg


@pytest.mark.parametrize("make, error, fragments", [
    (lambda U, V, y: (xr.DataArray(U, dims=("time", "r")).chunk({"time": 4, "r": 1}), V, y),
     SchemaError, ["U is chunked along the rank axis", "Fix: U = U.chunk({'r': -1})"]),
    (lambda U, V, y: (U, V.T, y), SchemaError,
     ["U has shape (10, 3)", "V has shape (5, 3)", "V looks transposed", "pass V.T"]),
    (lambda U, V, y: (U[:, 0], V, y), SchemaError,
     ["U must be 2-D (n_samples, rank), got an array of shape (10,)", "U.reshape(-1, 1)"]),
    (lambda U, V, y: (da.from_array(U)[:, 0], V, y), SchemaError,
     ["U must be 2-D (n_samples, rank), got a Dask array of shape (10,)"]),
    (lambda U, V, y: (U, V[0], y), SchemaError,
     ["V must be 2-D (rank, n_features), got shape (5,)", "V.reshape(1, -1)"]),
    (lambda U, V, y: (U, np.where(np.eye(3, 5) > 0, np.inf, V), y), InvalidDataError,
     ["V has 3 non-finite value(s), the first (inf) at rank 0, feature 0",
      "replace or remove them"]),
    (lambda U, V, y: (U.astype(complex), V, y), SchemaError,
     ["U must hold numbers, got dtype complex128", "U = U.astype('float32')"]),
    (lambda U, V, y: (U, V, y[:, None].repeat(2, 1)), SchemaError,
     ["y has 2 columns (shape (10, 2))", "MultiOutputRegressor", "y[:, j]"]),
    (lambda U, V, y: (U[:0], V, y[:0]), SchemaError,
     ["the dataset is empty: U has shape (0, 3) (0 samples)"]),
    (lambda U, V, y: (xr.DataArray(U, dims=("time", "r")),
                      xr.DataArray(V.T, dims=("f", "r")), y), SchemaError,
     ["V has dims ('f', 'r'); its first dim must be U's rank dim 'r'",
      "Fix: V = V.transpose('r', 'f')"]),
])
def test_bad_factorized_inputs(make, error, fragments):
    U, V, y = make(*_factors())
    with pytest.raises(error) as info:
        as_chunked(ok.Factorized(U, V), y, chunk_size=4)
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


def test_nan_in_u_is_named_by_chunk_and_row():
    U, V, y = _factors()
    U[6, 1] = np.nan
    # in memory: checked up front, chunk by chunk
    with pytest.raises(InvalidDataError, match=r"U has a non-finite value \(nan\) in chunk 1, "
                                               r"row 2, feature 1"):
        as_chunked(ok.Factorized(U, V), y, chunk_size=4)
    # lazy: when the chunk task reads it
    data = as_chunked(ok.Factorized(da.from_array(U, chunks=(4, 3)), V), y)
    data.delayed_chunks()["U"][0].compute()  # a clean chunk reads fine
    with pytest.raises(InvalidDataError, match=r"U has a non-finite value \(nan\) in chunk 1, "
                                               r"row 2, feature 1"):
        data.delayed_chunks()["U"][1].compute()
    # on_invalid="skip" callers switch the check off
    as_chunked(ok.Factorized(U, V), y, chunk_size=4, check_y=False)


def test_a_factorized_store_gets_chunk_checks_too(tmp_path):
    p = make_dataset("sparse_recovery", tmp_path / "f.zarr", 30, chunk_size=10, **SMALL)
    ds = open_zarr_dataset(p)
    bad = ds.copy()
    values = ds.U.values.copy()  # small: a 30-row store
    values[14, 0] = np.inf
    bad["U"] = (("sample", "rank"), da.from_array(values, chunks=(10, 4)))
    data = as_chunked(bad)
    with pytest.raises(InvalidDataError, match=r"U has a non-finite value \(inf\) in chunk 1, "
                                               r"row 4, feature 0"):
        dask.compute(data.variables["U"])
    with pytest.raises(ValidationError, match=r"y is given separately, but a 'factorized' "
                                              r"dataset holds its variables"):
        as_chunked(ds, ds.y)


def test_a_factorized_catalog_entry_and_its_reader(tmp_path):
    from ooc_kernels.data.catalog import load_catalog, register_dataset

    store = make_dataset("sparse_recovery", tmp_path / "f.zarr", 30, chunk_size=10, **SMALL)
    register_dataset(tmp_path / "cat.yaml", "sr", store)
    by_entry = as_chunked(ok.open_dataset(tmp_path / "cat.yaml", "sr"))
    by_reader = as_chunked(load_catalog(tmp_path / "cat.yaml")["sr"])  # an Intake reader
    for data in (by_entry, by_reader):
        assert sorted(data.variables) == ["U", "y"] and list(data.whole) == ["V"]
        assert data.chunk_sizes == (10, 10, 10) and data.attrs["task"] == "classification"
    np.testing.assert_array_equal(np.asarray(by_reader.whole["V"].compute()),
                                  open_zarr_dataset(store).V.values)
    # materialize takes the reader too
    twin = open_zarr_dataset(materialize(load_catalog(tmp_path / "cat.yaml")["sr"],
                                         tmp_path / "twin.zarr"))
    assert twin.X.shape == (30, 12) and "path" not in twin.attrs["source"]
