"""Dask DataFrames (and Series) as inputs: read out of core, partitions as chunks, lazy outputs.

A Dask DataFrame must never be loaded into memory by scikit-learn's validation, and
``predict`` on one returns a lazy result, not a NumPy array.
"""

import json
import subprocess
import sys

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
from _memory_env import worker_env
from dask.callbacks import Callback

import ooc_kernels as ok
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.data.inputs import as_chunked, is_lazy_input

pytest.importorskip("pyarrow")  # dask.dataframe needs it
# Dask's Parquet reader calls a pandas API that pandas 3.1 deprecates (not ours)
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index")
dd = pytest.importorskip("dask.dataframe")

SMALL = dict(n_features=256, block_size=64, batch_size=16, max_iter=2, tol=None, random_state=0,
             scheduler="sync", progress=False)
FEATURES = ["f0", "f1", "f2"]


def _frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(FEATURES))).astype(np.float32)
    df = pd.DataFrame(X, columns=FEATURES)
    df["y"] = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
    return df


def _lengths(ddf):
    return tuple(int(n) for n in ddf.map_partitions(len).compute(scheduler="sync"))


def _dask_arrays(df, lengths):
    """The equivalent Dask arrays: the same rows, the same chunks."""
    X = da.from_array(df[FEATURES].to_numpy(), chunks=(lengths, len(FEATURES)))
    y = da.from_array(df["y"].to_numpy(), chunks=(lengths,))
    return X, y


def _parquet(tmp_path, df, npartitions):
    """A Parquet folder of ``npartitions`` files (one partition each when read back)."""
    path = tmp_path / "data.parquet"
    path.mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(df)), npartitions)):
        df.iloc[part].to_parquet(path / f"part.{i}.parquet", index=False)
    return path


class _TaskCounter(Callback):
    """Counts the Dask tasks run by local schedulers while active."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def _pretask(self, key, dsk, state):
        self.n += 1


# ---------------------------------------------------------------------------- same model
def test_fit_from_pandas_ddf_is_the_dask_array_fit_with_partitions_as_chunks():
    df = _frame()
    ddf = dd.from_pandas(df, npartitions=5)
    lengths = _lengths(ddf)
    assert len(lengths) == 5
    data = as_chunked(ddf[FEATURES], ddf["y"])
    assert data.chunk_sizes == lengths and data.y.chunks == (lengths,)
    assert data.dtype == np.float32                      # float32 columns stay float32
    a = ok.DSGClassifier(**SMALL).fit(ddf[FEATURES], ddf["y"])
    b = ok.DSGClassifier(**SMALL).fit(*_dask_arrays(df, lengths))
    assert np.array_equal(a.coef_, b.coef_)
    assert a.n_features_in_ == 3 and a.n_samples_seen_ == b.n_samples_seen_


def test_fit_from_read_parquet_is_the_dask_array_fit(tmp_path):
    df = _frame(800)
    ddf = dd.read_parquet(_parquet(tmp_path, df, npartitions=6))
    lengths = _lengths(ddf)
    assert len(lengths) == 6
    X, y = ddf[FEATURES], ddf["y"]
    # y alone is a one-column read that Dask would fuse into fewer partitions: the
    # chunks must stay the partitions the user sees, the same for X and y
    data = as_chunked(X, y)
    assert data.chunk_sizes == lengths and data.y.chunks == (lengths,)
    np.testing.assert_array_equal(data.y.compute(scheduler="sync"), df["y"].to_numpy())
    a = ok.DSGClassifier(**SMALL).fit(X, y)
    b = ok.DSGClassifier(**SMALL).fit(*_dask_arrays(df, lengths))
    assert np.array_equal(a.coef_, b.coef_)
    reg = ok.DSGRegressor(**SMALL).fit(X, ddf["f2"])     # a float target column
    reg_ref = ok.DSGRegressor(**SMALL).fit(_dask_arrays(df, lengths)[0],
                                           da.from_array(df["f2"].to_numpy(),
                                                         chunks=(lengths,)))
    assert np.array_equal(reg.coef_, reg_ref.coef_)


@pytest.mark.parametrize("npartitions", [1, 3])
def test_a_filtered_parquet_frame_fits_like_its_rows_in_memory(tmp_path, npartitions):
    """A filter leaves the partition lengths unknown to Dask; with one partition Dask
    returns that partition's row count as a bare int rather than one per partition."""
    df = _frame(600)
    df["species"] = np.where(df["y"] == 1, "setosa", "virginica")
    d = dd.read_parquet(_parquet(tmp_path, df, npartitions=npartitions))
    assert d.npartitions == npartitions
    s = d[d.f0 > 0]
    kept = df[df.f0 > 0]
    expected = tuple(int((df.iloc[p].f0 > 0).sum())
                     for p in np.array_split(np.arange(len(df)), npartitions))
    data = as_chunked(s[FEATURES], s["species"])
    assert data.chunk_sizes == expected
    got = ok.DSGClassifier(**SMALL).fit(s[FEATURES], s["species"])
    # the same rows in memory, chunked as the partitions are
    ref = ok.DSGClassifier(**SMALL).fit(
        da.from_array(kept[FEATURES].to_numpy(), chunks=(expected, len(FEATURES))),
        da.from_array(kept["species"].to_numpy(dtype=object), chunks=(expected,)))
    np.testing.assert_array_equal(got.classes_, ["setosa", "virginica"])
    assert np.array_equal(got.coef_, ref.coef_)
    assert got.n_samples_seen_ == SMALL["max_iter"] * len(kept)      # epochs x rows
    if npartitions == 1:  # one chunk: the NumPy fit of the same rows
        mem = ok.DSGClassifier(**SMALL).fit(kept[FEATURES].to_numpy(),
                                            kept["species"].to_numpy())
        assert np.array_equal(got.coef_, mem.coef_)


def test_columns_are_cast_like_arrays_and_nullable_na_become_nan():
    pdf = pd.DataFrame({"i": np.arange(6), "f": np.linspace(0, 1, 6).astype(np.float32),
                        "b": [True, False] * 3,
                        "n": pd.array([1.5, None, 2.0, 3.0, None, 1.0], dtype="Float64")})
    data = as_chunked(dd.from_pandas(pdf, npartitions=2), np.zeros(6))
    assert data.dtype == np.float64                      # mixed columns: float64
    X = data.X.compute(scheduler="sync")
    np.testing.assert_array_equal(X[:, 0], np.arange(6))
    assert np.isnan(X[[1, 4], 3]).all() and X[0, 3] == 1.5


def test_string_labels_from_a_series():
    df = _frame()
    df["label"] = np.where(df["y"] == 1, "yes", "no")
    ddf = dd.from_pandas(df, npartitions=3)
    clf = ok.DSGClassifier(**SMALL).fit(ddf[FEATURES], ddf["label"])
    np.testing.assert_array_equal(clf.classes_, ["no", "yes"])
    assert set(clf.predict(ddf[FEATURES]).compute(scheduler="sync")) <= {"no", "yes"}


def test_unknown_partition_lengths_cost_one_shared_pass():
    loads = []

    def load(i):
        loads.append(i)
        return _frame(100 + 10 * i, seed=i)

    ddf = dd.from_map(load, range(4))                    # lengths unknown to Dask
    loads.clear()
    data = as_chunked(ddf[FEATURES], ddf["y"])
    assert data.chunk_sizes == (100, 110, 120, 130)
    assert sorted(loads) == [0, 1, 2, 3]                 # each partition read once, X and y


# ---------------------------------------------------------------------------- lazy outputs
def test_predictions_on_a_ddf_are_lazy_and_equal_the_numpy_ones(tmp_path):
    df = _frame(700)
    ddf = dd.read_parquet(_parquet(tmp_path, df, npartitions=4))
    lengths = _lengths(ddf)
    X_np = df[FEATURES].to_numpy()
    # float64 features: the comparison below checks the two paths, not float32 rounding
    # (whose sums depend on how the rows are cut into blocks)
    clf = ok.DSGClassifier(**SMALL, dtype="float64").fit(X_np, df["y"].to_numpy())
    X = ddf[FEATURES]
    assert is_lazy_input(X) and is_lazy_input(ddf["y"])
    for method in ("predict", "predict_proba", "decision_function"):
        with _TaskCounter() as counter:
            lazy = getattr(clf, method)(X)
        assert counter.n == 0, f"{method} ran {counter.n} Dask tasks before .compute()"
        assert isinstance(lazy, da.Array) and dask.is_dask_collection(lazy)
        assert lazy.chunks[0] == lengths                 # one chunk per partition
        with _TaskCounter() as counter:
            values = lazy.compute(scheduler="sync")
        assert counter.n > 0
        np.testing.assert_allclose(values, getattr(clf, method)(X_np), rtol=1e-6)
    assert clf.score(X, ddf["y"]) == pytest.approx(clf.score(X_np, df["y"].to_numpy()))
    reg = ok.DSGRegressor(**SMALL).fit(X, ddf["f2"])
    assert isinstance(reg.predict(X), da.Array)
    assert list(reg.feature_names_in_) == FEATURES     # names kept, as for pandas
    assert reg.score(X, ddf["f2"]) == pytest.approx(reg.score(df[FEATURES], df["f2"]))


def test_pandas_dataframes_keep_scikit_learn_feature_names():
    df = _frame()
    clf = ok.DSGClassifier(**SMALL).fit(df[FEATURES], df["y"])
    assert list(clf.feature_names_in_) == FEATURES
    assert isinstance(clf.predict(df[FEATURES]), np.ndarray)


@pytest.mark.parametrize("columns", [[0, 1, 2], ["f0", "f1", "f2"], [0, "f1", 2]])
def test_dask_frames_keep_feature_names_as_pandas_frames_do(columns):
    """scikit-learn's rule, whatever the frame: names only when every column name is a
    string, none for other names (no warning at a NumPy predict), mixed names refused."""
    import warnings

    from sklearn.linear_model import Ridge

    df = _frame().rename(columns=dict(zip(FEATURES, columns)))
    X = df.drop(columns="y")
    ddf = dd.from_pandas(X, npartitions=3)
    try:
        ref = Ridge().fit(X, df["y"])
    except TypeError as err:   # mixed names: scikit-learn refuses them
        with pytest.raises(TypeError, match="all input features have string names"):
            _fit(X, df["y"])
        with pytest.raises(TypeError, match="all input features have string names"):
            _fit(ddf, dd.from_pandas(df["y"], npartitions=3))
        assert "string names" in str(err)
        return
    for given in (X, ddf):
        est = _fit(given, dd.from_pandas(df["y"], npartitions=3) if given is ddf else df["y"])
        assert (getattr(est, "feature_names_in_", None) is None) == (
            getattr(ref, "feature_names_in_", None) is None), type(given)
        if hasattr(ref, "feature_names_in_"):
            assert list(est.feature_names_in_) == list(ref.feature_names_in_)
        with warnings.catch_warnings():
            warnings.simplefilter("error")   # no "fitted with feature names" warning
            est.predict(X.to_numpy()[:5] if not hasattr(ref, "feature_names_in_") else X[:5])


@pytest.mark.parametrize("make", [
    lambda: ok.DSGClassifier(**SMALL),
    lambda: ok.DSGRegressor(**SMALL),
    lambda: ok.DSPDCClassifier(max_iter=2, tol=None, random_state=0, scheduler="sync",
                               progress=False)])
def test_score_on_a_frame_with_its_columns_reordered_is_refused_as_predict_is(make):
    """scikit-learn refuses to score a frame whose columns are in another order than in fit
    (it would pair every weight with another input); so does ``score`` on a Dask DataFrame,
    with the message of ``predict``, instead of a score of the wrong model."""
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import Ridge

    df = _frame()
    reordered = FEATURES[::-1]
    with pytest.raises(ValueError, match="feature names"):   # the reference
        Ridge().fit(df[FEATURES], df["y"]).score(df[reordered], df["y"])
    y = dd.from_pandas(df["y"], npartitions=3)
    with pytest.raises(NotFittedError, match="is not fitted yet"):
        make().score(dd.from_pandas(df[FEATURES], npartitions=3), y)
    est = make().fit(dd.from_pandas(df[FEATURES], npartitions=3), y)
    X_other = dd.from_pandas(df[reordered], npartitions=3)
    with pytest.raises(ValidationError, match="fitted with \\['f0', 'f1', 'f2'\\], got "
                                              "\\['f2', 'f1', 'f0'\\]"):
        est.predict(X_other)
    with pytest.raises(ValidationError, match="fitted with \\['f0', 'f1', 'f2'\\], got "
                                              "\\['f2', 'f1', 'f0'\\]"):
        est.score(X_other, y)
    assert est.score(dd.from_pandas(df[FEATURES], npartitions=3), y) == pytest.approx(
        est.score(df[FEATURES], df["y"]), abs=1e-12)


# ---------------------------------------------------------------------------- bad inputs
def _fit(X, y):
    return ok.DSGClassifier(**SMALL).fit(X, y)


def test_a_text_column_is_refused_by_name_with_the_fix():
    df = _frame()
    df["city"] = "Lyon"
    ddf = dd.from_pandas(df, npartitions=3)
    fix = r"non-numeric columns: 'city'.*ddf\[numeric_cols\]"
    with pytest.raises(ValidationError, match=fix):
        _fit(ddf[FEATURES + ["city"]], ddf["y"])
    clf = ok.DSGClassifier(**SMALL).fit(df[FEATURES], df["y"])
    with pytest.raises(ValidationError, match="non-numeric columns: 'city'"):
        clf.predict(ddf[FEATURES + ["city"]])


def test_partitions_of_x_and_y_must_pair_up():
    df = _frame()
    X = dd.from_pandas(df[FEATURES], npartitions=4)
    with pytest.raises(ValidationError, match="X has 4 partitions and y has 3.*ddf\\["):
        _fit(X, dd.from_pandas(df["y"], npartitions=3))
    y_other_index = df["y"].set_axis(df.index + 1000)      # other rows by index
    with pytest.raises(ValidationError, match="different divisions"):
        _fit(X, dd.from_pandas(y_other_index, npartitions=4))
    # same number of partitions, unknown divisions, other boundaries: found by the lengths
    y_other = dd.from_map(lambda b: df["y"].iloc[b[0]:b[1]],
                          [(0, 100), (100, 300), (300, 450), (450, 600)])
    with pytest.raises(ValidationError, match="partition 0 has 150 rows in X and 100 in y"):
        _fit(X.clear_divisions(), y_other)


def test_y_of_another_length_and_other_misuses():
    df = _frame()
    X = dd.from_pandas(df[FEATURES], npartitions=3).clear_divisions()
    y_short = dd.from_pandas(df["y"].iloc[:-7], npartitions=3).clear_divisions()
    with pytest.raises(ValidationError, match="different numbers of samples: 600 and 593"):
        _fit(X, y_short)
    with pytest.raises(ValidationError, match="different numbers of samples: 600 and 593"):
        _fit(X, df["y"].to_numpy()[:-7])               # an in-memory y too
    ddf = dd.from_pandas(df, npartitions=3)
    # two target columns: one model per column, never y.ravel() (twice the rows)
    two = r"y has 2 columns \(shape \(600, 2\)\).*MultiOutputRegressor.*y\[:, j\]"
    with pytest.raises(ValidationError, match="Dask DataFrame with 2 columns.*single target"):
        _fit(ddf[FEATURES], ddf[["y", "f0"]])
    with pytest.raises(ValidationError, match=two):
        _fit(ddf[FEATURES].to_dask_array(lengths=True), ddf[["y", "f0"]].to_dask_array(
            lengths=True))
    with pytest.raises(ValidationError, match=r"Dask Series.*ddf\[\['column'\]\]"):
        _fit(ddf["f0"], ddf["y"])


# ---------------------------------------------------------------------------- memory
_WORKER = r'''
import glob, json, os, sys, threading, time

import psutil


def main(store, mode):
    import dask, dask.array as da, dask.dataframe as dd, numpy as np, pyarrow.parquet as pq
    import ooc_kernels as ok

    proc = psutil.Process()
    params = dict(n_features=256, block_size=64, batch_size=1024, max_iter=1, tol=None, bandwidth=3.0,
                  chunks_per_round=2, random_state=0, scheduler="sync", progress=False)
    if "shuffle_chunks" in ok.DSGClassifier().get_params():
        params["shuffle_chunks"] = 1  # one chunk per task: the bound is set by chunks
    files = sorted(glob.glob(os.path.join(store, "*.parquet")))
    feats = [c for c in pq.read_schema(files[0]).names if c != "y"]
    # warm-up (imports, numba, the Parquet reader) on one file, both input kinds
    small = dd.read_parquet(files[:1])
    ok.DSGClassifier(**params).fit(small[feats], small["y"])
    t = pq.read_table(files[0]).to_pandas()
    ok.DSGClassifier(**params).fit(t[feats].to_numpy(), t["y"].to_numpy())
    del t
    if mode == "array":  # the Dask-array path: the same files read chunk by chunk
        def read_x(f):
            return pq.read_table(f, columns=feats).to_pandas().to_numpy()

        def read_y(f):
            return pq.read_table(f, columns=["y"]).column(0).to_numpy()

        rows = [pq.ParquetFile(f).metadata.num_rows for f in files]
        X = da.concatenate([da.from_delayed(dask.delayed(read_x)(f), (n, len(feats)),
                                            np.float32) for f, n in zip(files, rows)])
        y = da.concatenate([da.from_delayed(dask.delayed(read_y)(f), (n,), np.int64)
                            for f, n in zip(files, rows)])
    else:
        ddf = dd.read_parquet(store)
        X, y = ddf[feats], ddf["y"]
    # start from a process holding no freed memory: what the warm-up freed and the allocators
    # kept for reuse would otherwise hide part of the fit's growth, by a different amount in
    # every run (glibc's free lists; Arrow's own pool is glibc's, see _growth)
    import ctypes, gc
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    baseline = proc.memory_info().rss
    try:  # the exact peak of the resident size from here on (Linux); else the sampler's
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        hwm = True
    except OSError:
        hwm = False
    peak = [baseline]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    # the rows a fit holds because of its input kind; the round read ahead (K more chunks,
    # the same for every input kind) is bounded by tests/test_out_of_core.py
    with dask.config.set({"ooc-kernels.local.read_ahead": False}):
        clf = ok.DSGClassifier(**params).fit(X, y)
    done.set()
    sampler.join()
    peak[0] = max(peak[0], proc.memory_info().rss)
    if hwm:
        with open("/proc/self/status") as f:
            peak[0] = max(peak[0], next(int(line.split()[1]) * 1024 for line in f
                                        if line.startswith("VmHWM:")))
    print(json.dumps({"growth": peak[0] - baseline, "n_samples_seen": clf.n_samples_seen_}))


main(sys.argv[1], sys.argv[2])
'''

ALLOWED_GROWTH = 16 * 2**20     # bytes of resident-memory growth a fit may use
MARGIN = 8 * 2**20              # the DataFrame path may exceed the Dask-array one by this


def _growth(store, mode):
    # Arrow's default pool (mimalloc or jemalloc) keeps freed pages for a while, by an amount
    # that depends on timing (the machine's load); on the system allocator, configured like a
    # Dask worker's, the growth is what the fit holds
    out = subprocess.run([sys.executable, "-c", _WORKER, str(store), mode],
                         capture_output=True, text=True, timeout=300, check=True,
                         env=dict(worker_env(), ARROW_DEFAULT_MEMORY_POOL="system"))
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_fit_from_read_parquet_keeps_memory_bounded(tmp_path):
    n_files, rows, n_feat = 40, 25_000, 16           # X: 61 MiB of float32 in 40 files
    store = tmp_path / "big.parquet"
    store.mkdir()
    for i in range(n_files):
        rng = np.random.default_rng(i)
        X = rng.normal(size=(rows, n_feat)).astype(np.float32)
        df = pd.DataFrame(X, columns=[f"f{j}" for j in range(n_feat)])
        df["y"] = (X[:, 0] * X[:, 1] > 0).astype(np.int64)
        df.to_parquet(store / f"part.{i:03d}.parquet", index=False)
    x_nbytes = n_files * rows * n_feat * 4
    assert x_nbytes >= 3.5 * ALLOWED_GROWTH
    frame = _growth(store, "ddf")
    array = _growth(store, "array")
    assert frame["n_samples_seen"] == array["n_samples_seen"] == n_files * rows
    mib = {k: r["growth"] / 2**20 for k, r in (("ddf", frame), ("array", array))}
    assert frame["growth"] <= ALLOWED_GROWTH, (
        f"fitting from read_parquet grew memory by {mib['ddf']:.1f} MiB for "
        f"{x_nbytes / 2**20:.0f} MiB of X (Dask-array path: {mib['array']:.1f} MiB)")
    assert frame["growth"] <= array["growth"] + MARGIN, mib


def test_column_names_are_checked_between_pandas_and_dask_frames():
    """Fit on a pandas DataFrame, predict on a Dask DataFrame (and the other way): the
    column names are compared as scikit-learn compares them for pandas."""
    import pandas as pd

    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(80, 3)), columns=["a", "b", "c"])
    y = (frame["a"] > 0).astype(int)
    params = dict(n_features=64, block_size=16, batch_size=8, max_iter=1, tol=None, random_state=0,
                  scheduler="sync")
    clf = ok.DSGClassifier(**params).fit(frame, y)
    lazy = dd.from_pandas(frame, npartitions=2)
    np.testing.assert_array_equal(clf.predict(lazy).compute(), clf.predict(frame))
    with pytest.raises(ValidationError, match=r"feature names should match.*\['a', 'b', "
                                              r"'c'\], got \['b', 'a', 'c'\]"):
        clf.predict(lazy[["b", "a", "c"]])
    from_dask = ok.DSGClassifier(**params).fit(lazy, dd.from_pandas(y, npartitions=2))
    assert list(from_dask.feature_names_in_) == ["a", "b", "c"]
    with pytest.raises(ValidationError, match="feature names should match"):
        from_dask.predict(lazy.rename(columns={"c": "z"}))
