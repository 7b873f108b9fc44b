"""DSGOneClassSVM's ``"auto"`` defaults: ``basis``, ``n_features`` and ``batch_size``.

* The defaults are ``"auto"``; with ``kernel="rbf"`` they fit a Nystrom basis of 256
  landmarks, with any other kernel (or ``kernel_params``) 4,096 random features (whole
  blocks).
* ``batch_size="auto"`` is one batch of 64 up to 64 rows, else ``n_rows // 200`` clipped to
  [4, 64], checked against a table of hand-computed values and in the fitted
  configuration.
* Explicit values are used as given.
* Saved models keep loading unchanged: one saved with explicit settings (what the
  constructor's defaults used to be), one saved with ``"auto"``, and one whose file has no
  ``basis`` parameter (random features).
"""

import inspect

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import InvalidParameterError
from ooc_kernels.families.dsg.one_class_defaults import (auto_batch_size, resolve_basis,
                                                         resolve_n_features)

FAST = dict(random_state=0, scheduler="sync", progress=False)


def _rows(n, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def test_the_defaults_are_auto():
    params = inspect.signature(ok.DSGOneClassSVM).parameters
    assert [params[k].default for k in ("basis", "n_features", "batch_size")] == \
        ["auto", "auto", "auto"]


@pytest.mark.parametrize("n, batch", [(1, 64), (15, 64), (64, 64), (65, 4), (90, 4),
                                      (999, 4), (1000, 5), (2000, 10), (2399, 11),
                                      (12_799, 63), (12_800, 64), (140_000, 64),
                                      (10**9, 64)])
def test_auto_batch_size_is_one_batch_or_rows_over_200_clipped_to_4_and_64(n, batch):
    assert auto_batch_size(n) == batch


def test_auto_resolves_by_kernel():
    assert resolve_basis("auto", "rbf", None) == "nystroem"
    assert resolve_basis("auto", "laplacian", None) == "random"
    assert resolve_basis("auto", "rbf_orthogonal", None) == "random"
    assert resolve_basis("random", "rbf", None) == "random"
    assert resolve_n_features("auto", "nystroem", 32) == 256
    assert resolve_n_features("auto", "random", 256) == 4096
    assert resolve_n_features("auto", "random", 96) == 4032          # 42 whole blocks
    assert resolve_n_features("auto", "random", 5000) == 5000        # one block at least
    assert resolve_n_features(512, "nystroem", 256) == 512


@pytest.mark.parametrize("n, batch", [(40, 64), (300, 4), (2400, 12)])
def test_default_fit_is_nystroem_256_with_the_batch_rule(n, batch):
    X = _rows(n)
    det = ok.DSGOneClassSVM(nu=0.2, max_iter=1, tol=None, **FAST).fit(X)
    assert det.landmarks_.shape == (min(n, 256), 3)
    assert det.n_features_ == 256 and det._config.batch_size == batch
    assert det.dtype_ == ("float64" if n <= 64 else "float32")   # one batch: float64
    assert det.t_ == -(-n // batch)                      # one pass: ceil(n / batch) steps
    assert det.get_params()["basis"] == "auto"


def test_default_fit_with_another_kernel_is_random_4096():
    X = _rows(300)
    det = ok.DSGOneClassSVM(nu=0.2, kernel="laplacian", max_iter=1, tol=None,
                            **FAST).fit(X)
    assert det.landmarks_ is None and det.n_features_ == 4096
    assert det._config.batch_size == 4


def test_explicit_settings_are_used_as_given():
    X = _rows(300)
    det = ok.DSGOneClassSVM(nu=0.2, basis="random", n_features=512, batch_size=64,
                            max_iter=1, tol=None, **FAST).fit(X)
    assert det.landmarks_ is None and det.n_features_ == 512
    assert det._config.batch_size == 64 and det.t_ == 5


def test_other_strings_are_refused():
    with pytest.raises(InvalidParameterError, match=r"'batch_size' parameter of "
                                                    r"DSGOneClassSVM must be"):
        ok.DSGOneClassSVM(batch_size="large", **FAST).fit(_rows(50))
    with pytest.raises(InvalidParameterError, match=r"'n_features' parameter of "
                                                    r"DSGOneClassSVM must be"):
        ok.DSGOneClassSVM(n_features="many", **FAST).fit(_rows(50))


@pytest.mark.parametrize("kw", [dict(basis="random", n_features=512, batch_size=64),
                                dict(), dict(kernel="laplacian")],
                         ids=["explicit", "auto-rbf", "auto-laplacian"])
def test_saved_models_load_unchanged(tmp_path, kw):
    X = _rows(400, seed=1)
    det = ok.DSGOneClassSVM(nu=0.2, max_iter=2, tol=None, **kw, **FAST).fit(X)
    det.save(tmp_path / "m")
    back = ok.load(tmp_path / "m")
    saved = {k: v for k, v in det.get_params().items() if k not in ("scheduler", "progress")}
    assert {k: back.get_params()[k] for k in saved} == saved
    np.testing.assert_array_equal(back.decision_function(X), det.decision_function(X))
    assert (back.landmarks_ is None) == (det.landmarks_ is None)
    assert back._config.batch_size == det._config.batch_size


def test_partial_fit_resolves_auto_on_the_rows_of_its_first_call():
    det = ok.DSGOneClassSVM(nu=0.2, **FAST).partial_fit(_rows(300))
    assert det._config.batch_size == 4 and det.landmarks_.shape == (256, 3)
    det.partial_fit(_rows(3000, seed=2))                 # 3,000 rows alone would take 15
    assert det._config.batch_size == 4 and det.landmarks_.shape == (256, 3)
