"""Hyperparameters that would need more memory than the machine has are refused up front,
with the library's error (not a raw ``MemoryError`` from NumPy), from Python and the CLI."""

import numpy as np
import pytest
from click.testing import CliRunner

import ooc_kernels as ok
from ooc_kernels.cli import main
from ooc_kernels.families.dsg.estimators import check_fit_memory
from ooc_kernels.exceptions import ModelTooLargeError


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    return X, (X[:, 0] > 0).astype(int)


@pytest.mark.parametrize("cls", [ok.DSGClassifier, ok.DSGRegressor])
def test_n_features_beyond_memory_is_refused_before_allocating(cls):
    X, y = _data()
    est = cls(n_features=10**12, scheduler="sync")
    # 10**12 features x 1 output x 8 bytes x 3 copies = 21.8 TiB
    with pytest.raises(ModelTooLargeError, match=r"n_features=1000000000000 needs 21\.8 TiB "
                                                 r"for the model's coefficients .*Lower "
                                                 r"n_features \(at most n_features=\d+"):
        est.fit(X, y)
    assert not hasattr(est, "coef_")
    with pytest.raises(MemoryError, match="n_features=1000000000000 needs"):
        est.fit(X, y)   # still a MemoryError for callers that catch that


def test_memory_estimate_against_hand_computed_bytes():
    """3 outputs, an averaged iterate, 10 input features, 1000 rows: the model is
    4096 * 3 * 8 bytes held 3 times, twice (589 824 bytes); a step is one 256 x 256
    feature block of a batch plus 10 x 256 random weights (544 768 bytes)."""
    est = ok.DSGClassifier(n_features=4096, block_size=256, batch_size=256)
    need = 4096 * 3 * 8 * 2 * 3 + 8 * 256 * (256 + 10)
    kw = dict(n_outputs=3, n_features_in=10, n_samples=1000, average=True)
    check_fit_memory(est, limit=need, **kw)
    with pytest.raises(ModelTooLargeError, match="n_features=4096 needs 576.0 KiB .*3 "
                                                 "output.*this machine has 1.1 MiB"):
        check_fit_memory(est, limit=need - 1, **kw)
    # a batch larger than the data is the data: batch_size=10**9 on 1000 rows needs no more
    big_batch = ok.DSGClassifier(n_features=256, block_size=256, batch_size=10**9)
    check_fit_memory(big_batch, limit=256 * 8 * 3 + 8 * 256 * (1000 + 10), n_outputs=1,
                     n_features_in=10, n_samples=1000, average=False)
    with pytest.raises(ModelTooLargeError, match=r"batch_size=1000000000 with block_size=256 "
                                                 r"needs 7\.6 GiB .*Lower batch_size"):
        check_fit_memory(big_batch, limit=2**30, n_outputs=1, n_features_in=10,
                         n_samples=4 * 10**6, average=False)


@pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
def test_cli_n_features_in_exponent_notation_beyond_memory(tmp_path):
    store = ok.make_dataset("nonlinear_binary", tmp_path / "data" / "nb.zarr", 200,
                            chunk_size=100, n_features=3, progress=False)
    from ooc_kernels.data.catalog import register_dataset

    register_dataset(tmp_path / "c.yaml", "nb", store)
    out = tmp_path / "m.zarr"
    r = CliRunner().invoke(main, [
        "train", "--catalog", str(tmp_path / "c.yaml"), "--entry", "nb",
        "-p", "n_features=1e12", "--out", str(out), "--scheduler", "sync", "-q"])
    assert r.exit_code != 0
    assert "n_features=1000000000000 needs 21.8 TiB" in r.output, r.output
    assert "Traceback" not in r.output
    assert isinstance(r.exception, SystemExit), repr(r.exception)   # a clean exit, no raise
    assert not out.exists()


def test_online_kernel_ridge_state_beyond_memory_is_refused_before_allocating():
    """200 rows and n_components=300,000: 295,240 Taylor features, two 295,240 x 295,240
    float64 matrices, 1.3 TiB."""
    X = np.random.default_rng(0).normal(size=(200, 3))
    y = X[:, 0]
    est = ok.OnlineKernelRidge(n_components=300_000, bandwidth=1.0, standardize=False,
                               scheduler="sync")
    with pytest.raises(ModelTooLargeError, match=r"n_components=300000 gives a state of "
                                                 r"1\.3 TiB \(basis='taylor': 295240 "
                                                 r"features .*Lower n_components \(at most "
                                                 r"\d+ features fit"):
        est.fit(X, y)
    assert not hasattr(est, "n_samples_seen_")
    with pytest.raises(MemoryError, match="n_components=300000 gives"):
        est.partial_fit(X, y)


def test_online_kernel_ridge_memory_check_against_hand_computed_bytes():
    from ooc_kernels.families.pkawv.online import check_state_memory

    est = ok.OnlineKernelRidge(basis="nystrom-fixed", n_components=1000)
    check_state_memory(est, 1000, limit=2 * 8 * 1000**2)
    with pytest.raises(ModelTooLargeError, match=r"basis='nystrom-fixed': 1000 features, 2 "
                                                 r"matrices .*\(at most 999 features fit"):
        check_state_memory(est, 1000, limit=2 * 8 * 1000**2 - 1)
