"""DSPDC models written by ooc_kernels 0.2.0 load unchanged; its checkpoints are checked
against the fit that resumes them, and their work stores (versions that name no chunk) are
refused on resume.

Their configuration stores the loss as DSPDC's own id (1: smoothed hinge) and names no loss;
the loss table numbers the smoothed hinge 4 (1 is the hinge).  The fixtures in
``tests/data`` were written by the package of that release.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.exceptions import CheckpointMismatchError, CorruptChunkError, ModelFormatError
from ooc_kernels.losses import LOSS_SMOOTHED_HINGE

from _tamper import edit_attrs

DATA = Path(__file__).parent / "data"


def _saved_config(path: Path) -> dict:
    meta = json.loads((path / "zarr.json").read_text())["attributes"]["ooc_kernels"]
    return meta["fitted"]["config"]


def test_a_model_of_0_2_0_loads_with_its_loss_and_predictions(tmp_path):
    path = DATA / "dspdc_smoothed_hinge_v0.2.0.zarr"
    assert _saved_config(path)["loss_id"] == 1 and "loss" not in _saved_config(path)
    expected = np.load(DATA / "dspdc_smoothed_hinge_v0.2.0_expected.npz")
    clf = ok.load(path)
    assert clf.loss == "smoothed_hinge" and clf._config.loss_id == LOSS_SMOOTHED_HINGE
    assert clf.standardize is False and clf._config.x_scale is None   # raw columns in 0.2.0
    np.testing.assert_array_equal(clf.coef_, expected["coef"])
    np.testing.assert_array_equal(clf.decision_function(expected["X"]), expected["decision"])
    np.testing.assert_array_equal(clf.predict(expected["X"]), expected["labels"])
    clf.save(tmp_path / "again.zarr")                  # saved today: the name and its id
    config = _saved_config(tmp_path / "again.zarr")
    assert (config["loss"], config["loss_id"]) == ("smoothed_hinge", LOSS_SMOOTHED_HINGE)
    again = ok.load(tmp_path / "again.zarr")
    assert again._config == clf._config


def test_a_checkpoint_of_0_2_0_is_refused_on_resume_and_a_fresh_fit_replaces_it(tmp_path):
    """The checkpoint stopped after 2 of 5 epochs; its work store holds each chunk's duals
    as a Zarr array whose checksum covers the values only and names no chunk, so resuming
    it is refused with the fix; a fresh fit on the same path then runs, the same fit on a
    new checkpoint path bit for bit."""
    shutil.copytree(DATA / "dspdc_checkpoint_v0.2.0", tmp_path / "run")
    assert (tmp_path / "run" / "ckpt.zarr" / "zarr.json").is_file()  # the fixture is there
    expected = np.load(tmp_path / "run" / "expected.npz")
    params = dict(loss="smoothed_hinge", alpha=0.1, tol=1e-12, random_state=0,
                  max_iter=5, standardize=False,   # 0.2.0: raw columns,
                  steps="theorem",                 # the theorems' steps and
                  local_passes=1.0)                # the value it recorded
    with pytest.raises(CorruptChunkError,
                       match=r"chunk 0 at version \(1, 0\).*without its chunk's identity.*"
                             r"Delete the work store.*resume=False"):
        ok.DSPDCClassifier(**params).fit(expected["X"], expected["y"],
                                         checkpoint=tmp_path / "run" / "ckpt.zarr",
                                         resume=True)
    clf, reference = ok.DSPDCClassifier(**params), ok.DSPDCClassifier(**params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                # tol=1e-12 is not reached: warns
        clf.fit(expected["X"], expected["y"], checkpoint=tmp_path / "run" / "ckpt.zarr",
                resume=False)
        reference.fit(expected["X"], expected["y"], checkpoint=tmp_path / "new.zarr")
    assert clf.n_iter_ == reference.n_iter_ == 5
    np.testing.assert_array_equal(clf.coef_, reference.coef_)
    np.testing.assert_array_equal(clf.intercept_, reference.intercept_)


def test_a_checkpoint_of_0_2_0_names_the_local_passes_to_resume_with(tmp_path):
    """The checkpoint recorded ``local_passes=1.0``; the default ``"auto"`` is another
    hyperparameter, and the refusal says which value the checkpoint needs."""
    shutil.copytree(DATA / "dspdc_checkpoint_v0.2.0", tmp_path / "run")
    expected = np.load(tmp_path / "run" / "expected.npz")
    clf = ok.DSPDCClassifier(loss="smoothed_hinge", alpha=0.1, tol=1e-12, random_state=0,
                             max_iter=5, standardize=False, steps="theorem")
    with pytest.raises(CheckpointMismatchError,
                       match="hyperparameter local_passes: checkpoint has 1.0, this fit has "
                             "'auto'"):
        clf.fit(expected["X"], expected["y"], checkpoint=tmp_path / "run" / "ckpt.zarr",
                resume=True)


def test_a_checkpoint_of_0_2_0_refuses_a_standardized_resume(tmp_path):
    """0.2.0 solved the raw problem: resuming it as the standardized one is another fit."""
    shutil.copytree(DATA / "dspdc_checkpoint_v0.2.0", tmp_path / "run")
    assert (tmp_path / "run" / "ckpt.zarr" / "zarr.json").is_file()  # the fixture is there
    expected = np.load(tmp_path / "run" / "expected.npz")
    clf = ok.DSPDCClassifier(loss="smoothed_hinge", alpha=0.1, tol=1e-12, random_state=0,
                             max_iter=5)
    with pytest.raises(CheckpointMismatchError,
                       match="hyperparameter standardize: checkpoint has False, this fit has "
                             "True"):
        clf.fit(expected["X"], expected["y"], checkpoint=tmp_path / "run" / "ckpt.zarr",
                resume=True)


@pytest.mark.parametrize("edit, message", [
    ({"loss": "hinge"}, r"loss 'hinge' \(id 1\) is not one of DSPDC's losses"),
    ({"loss_id": 3}, r"loss None \(id 3\) is not one of DSPDC's losses"),
    ({"loss": "smoothed_hinge", "loss_id": 1},
     r"names loss 'smoothed_hinge' with id 1, not its id 4"),
])
def test_a_damaged_loss_entry_is_refused(tmp_path, edit, message):
    path = tmp_path / "m.zarr"
    shutil.copytree(DATA / "dspdc_smoothed_hinge_v0.2.0.zarr", path)
    edit_attrs(path, "ooc_kernels", lambda meta: meta["fitted"]["config"].update(edit))
    with pytest.raises(ModelFormatError, match=message):
        ok.load(path)
