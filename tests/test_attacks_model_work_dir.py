"""Where a DSPDC fit writes (``work_dir``) belongs to whoever runs it, never to a model file.

``work_dir`` is a runtime parameter like ``scheduler``: ``save`` never writes it (so any path
type saves), and a file that holds one (files of other library versions hold ``null`` or a
folder) loads with the value dropped, a folder with an ``OocKernelsWarning``.  A loaded model
refit writes nothing in the file's folder.  ``work_dir`` takes every path type the library
takes (``str``, ``bytes``, ``os.PathLike``).
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

import ooc_kernels as ok
from ooc_kernels.exceptions import CheckpointError, OocKernelsWarning

from _tamper import edit_attrs

FAST = dict(alpha=0.05, max_iter=4, tol=None, random_state=0, scheduler="sync",
            progress=False)


def _problem(n=160, p=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, np.where(X @ rng.normal(size=p) > 0, "b", "a")


def _params(path: Path) -> dict:
    return json.loads((path / "zarr.json").read_text())["attributes"]["ooc_kernels"]["params"]


def _checkpoint_params(path: Path) -> dict:
    attrs = json.loads((path / "zarr.json").read_text())["attributes"]
    return attrs["ooc_kernels_checkpoint"]["model"]["params"]


class _BytesPath:
    """An ``os.PathLike`` whose ``__fspath__`` gives bytes (as os and pathlib accept)."""

    def __init__(self, path):
        self.path = os.fsencode(path)

    def __fspath__(self):
        return self.path


def _reference_labels(X, coef, intercept, classes):
    """The labels of a linear classifier from its coefficients, in plain NumPy."""
    return np.where(X @ coef + intercept > 0, classes[1], classes[0])


@pytest.fixture
def saved(tmp_path):
    X, y = _problem()
    clf = ok.DSPDCClassifier(**FAST).fit(X, y)
    clf.save(tmp_path / "m.zarr")
    return tmp_path / "m.zarr", clf, X, y


@pytest.mark.parametrize("exists", [True, False])
@pytest.mark.parametrize("resume", [False, True])
def test_a_model_file_with_a_work_dir_does_not_choose_where_its_refit_writes(
        saved, tmp_path, monkeypatch, exists, resume):
    """An edited file sets work_dir to a folder of the loading machine: the load warns and
    drops it, and the loaded model's refit (a fresh fit, or one with a checkpoint that is then
    resumed) writes nothing in that folder."""
    path, _, X, y = saved
    victim = tmp_path / "victim"
    if exists:
        victim.mkdir()
        (victim / "keep.txt").write_text("mine")

    def aim(meta):                                # the file's work_dir and its fit's store
        meta["params"]["work_dir"] = str(victim)
        meta["fitted"]["config"]["work_store"] = str(victim / "dspdc-0123456789ab-abcdefgh")

    edit_attrs(path, "ooc_kernels", aim)
    # what the folder holds, and when an entry was last made or removed in it
    before = (sorted(p.name for p in victim.iterdir()), victim.stat().st_mtime_ns) \
        if exists else None
    with pytest.warns(OocKernelsWarning, match=r"sets work_dir='.*victim'.*ignored.*"
                                               r"work_dir=None.*set_params\(work_dir="):
        loaded = ok.load(path)
    assert loaded.work_dir is None
    temp = tmp_path / "temp"                      # the system's temporary folder, here
    temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    loaded.set_params(scheduler="sync")
    if resume:
        ck = tmp_path / "ck.zarr"
        loaded.set_params(max_iter=2).fit(X, y, checkpoint=ck)
        loaded.set_params(max_iter=4).fit(X, y, checkpoint=ck, resume=True)
    else:
        loaded.fit(X, y)
    if exists:
        assert (sorted(p.name for p in victim.iterdir()), victim.stat().st_mtime_ns) == before
        assert (victim / "keep.txt").read_text() == "mine"
    else:
        assert not victim.exists()
    if resume:                                    # the checkpoint holds no work_dir either
        assert "work_dir" not in _checkpoint_params(tmp_path / "ck.zarr")
    np.testing.assert_array_equal(
        loaded.predict(X), _reference_labels(X, loaded.coef_, loaded.intercept_,
                                             loaded.classes_))


def test_a_model_file_with_work_dir_null_loads_silently(saved):
    """A file of another library version holds ``"work_dir": null``: it loads without a
    warning and predicts what its coefficients say."""
    path, clf, X, _ = saved
    edit_attrs(path, "ooc_kernels", lambda meta: meta["params"].update(work_dir=None))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = ok.load(path)
    assert loaded.work_dir is None
    np.testing.assert_array_equal(loaded.coef_, clf.coef_)
    np.testing.assert_array_equal(
        loaded.predict(X), _reference_labels(X, clf.coef_, clf.intercept_, clf.classes_))


@pytest.mark.parametrize("make", [
    lambda root: root / "work",                        # pathlib.Path
    lambda root: os.fsencode(root / "work"),           # bytes
    lambda root: _BytesPath(root / "work"),            # os.PathLike giving bytes
    lambda root: str(root / "work"),
])
def test_save_with_any_work_dir_type_writes_no_work_dir_and_loads(tmp_path, make):
    """A fitted DSPDCClassifier with work_dir of any path type saves (no work_dir in the
    file) and loads with work_dir=None, predicting what its coefficients say; a work_dir
    set after the fit does not block the save."""
    X, y = _problem()
    clf = ok.DSPDCClassifier(work_dir=make(tmp_path), **FAST).fit(X, y)
    assert (tmp_path / "work").is_dir() and not any((tmp_path / "work").iterdir())
    clf.save(tmp_path / "m.zarr")
    assert "work_dir" not in _params(tmp_path / "m.zarr")
    assert "scheduler" not in _params(tmp_path / "m.zarr")
    loaded = ok.load(tmp_path / "m.zarr")
    assert loaded.work_dir is None
    np.testing.assert_array_equal(
        loaded.predict(X), _reference_labels(X, clf.coef_, clf.intercept_, clf.classes_))
    clf.set_params(work_dir=make(tmp_path / "elsewhere"))   # where the next fit writes
    clf.save(tmp_path / "again.zarr")
    assert "work_dir" not in _params(tmp_path / "again.zarr")


@pytest.mark.parametrize("kind", ["bytes", "pathlike", "path"])
def test_a_work_dir_of_any_path_type_holds_the_fits_store(tmp_path, kind):
    """``work_dir`` given as bytes, an os.PathLike or a Path: the fit keeps its store in
    that folder (kept there by a checkpoint), and clone/get_params give what was passed."""
    folder = tmp_path / "wörk"
    given = {"bytes": os.fsencode(folder), "pathlike": _BytesPath(folder),
             "path": folder}[kind]
    X, y = _problem()
    est = ok.DSPDCClassifier(work_dir=given, **FAST)
    assert est.get_params()["work_dir"] is given
    copy = clone(est).get_params()["work_dir"]
    assert type(copy) is type(given) and os.fspath(copy) == os.fspath(given)
    est.fit(X, y, checkpoint=tmp_path / "ck.zarr")
    stores = [p.name for p in folder.iterdir()]
    assert len(stores) == 1 and stores[0].startswith("dspdc-")
    np.testing.assert_array_equal(
        est.predict(X), _reference_labels(X, est.coef_, est.intercept_, est.classes_))


def test_a_resume_with_another_work_dir_names_the_fix(tmp_path):
    """The checkpoint records its store's name only; a resume looks for it in its own
    work_dir, and a resume with another work_dir is refused with the fix."""
    X, y = _problem()
    ck = tmp_path / "ck.zarr"
    ok.DSPDCClassifier(work_dir=tmp_path / "a", **dict(FAST, max_iter=2)).fit(
        X, y, checkpoint=ck)
    with pytest.raises(CheckpointError, match=r"Resume with the work_dir of the fit that "
                                              r"wrote the checkpoint"):
        ok.DSPDCClassifier(work_dir=tmp_path / "b", **FAST).fit(X, y, checkpoint=ck,
                                                                 resume=True)
    resumed = ok.DSPDCClassifier(work_dir=tmp_path / "a", **FAST).fit(
        X, y, checkpoint=ck, resume=True)
    assert resumed.n_iter_ == 4


def test_a_checkpoint_names_its_store_only_inside_the_resuming_fits_folder(tmp_path):
    """A checkpoint records its work store; an edited checkpoint that points the store into
    another folder (holding a copy of the store) is resumed from the store inside the
    resuming fit's work_dir, and the other folder is not touched."""
    X, y = _problem()
    ck, work, victim = tmp_path / "ck.zarr", tmp_path / "work", tmp_path / "victim"
    ok.DSPDCClassifier(work_dir=work, **dict(FAST, max_iter=2)).fit(X, y, checkpoint=ck)
    (store,) = work.iterdir()
    shutil.copytree(store, victim / store.name)

    def state():                                  # every entry, and when each last changed
        return victim.stat().st_mtime_ns, sorted(
            (p.relative_to(victim), p.stat().st_mtime_ns) for p in victim.rglob("*"))

    before = state()
    edit_attrs(ck, "ooc_kernels_checkpoint", lambda meta: meta["model"]["fitted"]["config"]
               .update(work_store=str(victim / store.name)))
    resumed = ok.DSPDCClassifier(work_dir=work, **FAST).fit(X, y, checkpoint=ck, resume=True)
    assert resumed.n_iter_ == 4
    assert state() == before


def test_model_and_checkpoint_record_the_work_store_by_its_name_only(tmp_path):
    """A model file and a checkpoint name the fit's work store by its folder name only: no
    folder of the writing machine (its work_dir, its home) goes into a file that may be
    shared, and a resume finds the store by that name in its own work_dir."""
    X, y = _problem()
    work, ck = tmp_path / "private" / "work", tmp_path / "ck.zarr"
    clf = ok.DSPDCClassifier(work_dir=work, **dict(FAST, max_iter=2)).fit(X, y, checkpoint=ck)
    clf.save(tmp_path / "m.zarr")
    (store,) = work.iterdir()
    model = json.loads((tmp_path / "m.zarr" / "zarr.json").read_text())["attributes"]
    checkpoint = json.loads((ck / "zarr.json").read_text())["attributes"]
    for meta in (model["ooc_kernels"], checkpoint["ooc_kernels_checkpoint"]["model"]):
        assert meta["fitted"]["config"]["work_store"] == store.name
        assert str(tmp_path) not in json.dumps(meta)
    resumed = ok.DSPDCClassifier(work_dir=work, **FAST).fit(X, y, checkpoint=ck, resume=True)
    assert resumed.n_iter_ == 4
