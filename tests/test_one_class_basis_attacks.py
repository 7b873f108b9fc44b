"""Attacks on saved DSGOneClassSVM models with a Nystrom basis (``basis="nystroem"``):
edited landmarks or basis metadata (the checksums catch an edit; a careful editor who
reseals the metadata meets the basis' own checks), a model written before ``basis``
existed, saving over folders and through links."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

import ooc_kernels as ok
from ooc_kernels.exceptions import ForeignPathError, ModelFormatError, ModelPathError

sys.path.insert(0, str(Path(__file__).parent))
from _tamper import edit_attrs, set_at  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
FAST = dict(random_state=0, scheduler="sync", progress=False)
KEY = "ooc_kernels"


@pytest.fixture(scope="module")
def fitted():
    X = np.random.default_rng(0).normal(size=(300, 3))
    det = ok.DSGOneClassSVM(nu=0.2, basis="nystroem", n_features=32, block_size=32,
                            max_iter=2, tol=None, **FAST).fit(X)
    return det, X


def _saved(fitted, tmp_path):
    det, _ = fitted
    det.save(tmp_path / "m")
    return tmp_path / "m"


@pytest.mark.parametrize("keys, value, match", [
    (("fitted", "basis", "rcond"), 0.5, r"the metadata fails its CRC32C checksum"),
    (("fitted", "basis", "n_components"), 31, r"the metadata fails its CRC32C checksum"),
])
def test_an_edit_of_the_basis_metadata_fails_its_checksum(fitted, tmp_path, keys, value,
                                                           match):
    path = _saved(fitted, tmp_path)
    edit_attrs(path, KEY, set_at(*keys, value=value), seal=False)
    with pytest.raises(ModelFormatError, match=match):
        ok.load(path)


@pytest.mark.parametrize("keys, value, drop, match", [
    (("fitted", "basis", "rcond"), 1.5, False, r"the basis metadata is .*rcond': 1.5"),
    (("fitted", "basis", "rcond"), "0.1", False, r"the basis metadata is .*'0.1'"),
    (("fitted", "basis", "kind"), "random", False, r"the basis metadata is .*'random'"),
    (("fitted", "basis", "n_components"), 31, False, r"the landmarks give a basis of 32 "
                                                     r"features, the metadata says 31"),
    (("fitted", "basis"), None, True, r"only one of the basis metadata and the landmarks"),
    (("params", "basis"), "random", False, r"basis='random' but landmarks"),
])
def test_resealed_basis_metadata_that_disagrees_is_refused(fitted, tmp_path, keys, value,
                                                           drop, match):
    path = _saved(fitted, tmp_path)
    edit_attrs(path, KEY, set_at(*keys, value=value, drop=drop))
    with pytest.raises(ModelFormatError, match=match):
        ok.load(path)


def test_landmarks_of_another_shape_or_dtype_fail_their_checksum(fitted, tmp_path):
    path = _saved(fitted, tmp_path)
    group = zarr.open_group(str(path), mode="r+")
    L = group["landmarks"][...]
    del group["landmarks"]
    group.create_array("landmarks", data=np.ascontiguousarray(L[:, :2]))
    with pytest.raises(ModelFormatError, match=r"landmarks"):
        ok.load(path)


def test_a_model_saved_before_the_basis_existed_loads_with_random_features(tmp_path):
    """A model written before ``basis`` had no such parameter and no basis metadata."""
    X = np.random.default_rng(1).normal(size=(200, 3))
    det = ok.DSGOneClassSVM(nu=0.2, basis="random", n_features=64, block_size=32,
                            max_iter=1, tol=None, **FAST).fit(X)
    det.save(tmp_path / "old")
    meta = zarr.open_group(str(tmp_path / "old"), mode="r").attrs[KEY]
    assert "basis" not in meta["fitted"] and meta["params"]["basis"] == "random"
    edit_attrs(tmp_path / "old", KEY, set_at("params", "basis", drop=True))
    back = ok.load(tmp_path / "old")
    assert back.basis == "random" and back.landmarks_ is None
    np.testing.assert_array_equal(back.decision_function(X), det.decision_function(X))
    np.testing.assert_array_equal(back.predict(X), det.predict(X))


def test_a_loaded_model_scores_and_refits_as_the_fitted_one(fitted, tmp_path):
    det, X = fitted
    back = ok.load(_saved(fitted, tmp_path))
    np.testing.assert_array_equal(back.score_samples(X), det.score_samples(X))
    # the landmarks are the model's: a refit from the loaded parameters draws the same
    again = ok.DSGOneClassSVM(**back.get_params()).fit(X)
    np.testing.assert_array_equal(again.landmarks_, det.landmarks_)
    np.testing.assert_array_equal(again.decision_function(X), det.decision_function(X))


def test_saving_over_a_folder_that_is_not_a_model_is_refused_and_keeps_it(fitted, tmp_path):
    det, _ = fitted
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(ForeignPathError, match=r"(?i)not .*model|model"):
        det.save(mine)
    assert (mine / "notes.txt").read_text() == "mine"
    assert sorted(os.listdir(mine)) == ["notes.txt"]


def test_saving_over_a_model_replaces_it(fitted, tmp_path):
    det, X = fitted
    other = ok.DSGOneClassSVM(nu=0.2, n_features=64, block_size=32, max_iter=1, tol=None,
                              **FAST).fit(X)
    other.save(tmp_path / "m")
    det.save(tmp_path / "m")
    back = ok.load(tmp_path / "m")
    np.testing.assert_array_equal(back.landmarks_, det.landmarks_)


def test_a_link_to_a_model_loads_but_is_never_replaced_by_a_save(fitted, tmp_path):
    det, X = fitted
    real = _saved(fitted, tmp_path)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    np.testing.assert_array_equal(ok.load(link).landmarks_, det.landmarks_)
    with pytest.raises(ModelPathError, match=r"it is a symbolic link \(a link is never "
                                             r"followed, replaced or removed\)"):
        det.save(link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    np.testing.assert_array_equal(ok.load(real).landmarks_, det.landmarks_)
