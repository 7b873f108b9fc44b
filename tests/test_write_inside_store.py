"""No write lands inside a store the library wrote: a model, prediction store, checkpoint,
dataset or metrics file whose path lies inside a model, checkpoint, dataset or prediction
store (``est.save("m.zarr/p.zarr")``, ``ooc-kernels predict --out m.zarr/p.zarr``, through
a link to such a store too) is a ``ForeignPathError`` (``ModelPathError`` for a model)
before any work, and the store is left as it was.  Written there, it would go with the
store the next time the library replaces it: ``est.save("m.zarr")`` over a model
removes everything inside ``m.zarr``, as shown first."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels._atomic import write_json_atomic
from ooc_kernels.evaluation import write_predictions
from ooc_kernels.exceptions import ForeignPathError, ModelPathError

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")

RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 2))
Y = (X[:, 0] > 0).astype(np.int64)
FAST = dict(n_features=256, max_iter=1, tol=None, random_state=0, scheduler="sync")


def _reached(path, tmp_path, through_link: bool):
    """``path`` itself, or a link to it in ``tmp_path`` (``through_link``)."""
    if not through_link:
        return path
    link = tmp_path / "link"
    link.symlink_to(path, target_is_directory=True)
    return link


def _listing(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder)
                  for d, _, files in os.walk(folder) for f in files)


@pytest.fixture()
def model(tmp_path):
    est = ok.DSGClassifier(**FAST).fit(X, Y)
    est.save(tmp_path / "m.zarr")
    return est, tmp_path / "m.zarr"


def test_replacing_a_store_removes_what_lies_inside_it(model, tmp_path):
    """Why: the library replaces its store as a whole, so a user's file inside is lost."""
    est, path = model
    (path / "notes.txt").write_text("mine")
    est.save(path)                          # a model's path: replaced by a new save
    assert not (path / "notes.txt").exists()


@pytest.mark.parametrize("through_link", [False, True])
def test_outputs_inside_a_model_are_refused_before_any_work(model, tmp_path, through_link):
    est, path = model
    where = _reached(path, tmp_path, through_link)
    before = _listing(path)
    writes = {
        "a model": (ModelPathError, lambda: est.save(where / "inner.zarr")),
        "predictions": (ForeignPathError,
                        lambda: write_predictions(est, X, where / "p.zarr", progress=False)),
        "a metrics file": (ForeignPathError,
                           lambda: write_json_atomic(where / "metrics.json", {"r2": 1.0},
                                                     kind="metrics")),
        "a dataset": (ForeignPathError,
                      lambda: ok.make_dataset("nonlinear_binary", where / "d.zarr", 20,
                                              progress=False)),
        "a checkpoint": (ForeignPathError,
                         lambda: ok.DSGClassifier(**FAST).fit(X, Y,
                                                              checkpoint=where / "c.zarr")),
    }
    for what, (error, write) in writes.items():
        with pytest.raises(error, match=rf"lies inside '{path}', a model that ooc_kernels "
                                        r"wrote"):
            write()
        assert _listing(path) == before, what
    assert ok.load(path).predict(X).tolist() == est.predict(X).tolist()


def test_outputs_inside_a_dataset_and_a_checkpoint_are_refused(tmp_path):
    data = ok.make_dataset("nonlinear_binary", tmp_path / "d.zarr", 20, progress=False)
    est = ok.DSGClassifier(**FAST).fit(X, Y, checkpoint=tmp_path / "c.zarr")
    for store, kind in ((data, "dataset"), (tmp_path / "c.zarr", "checkpoint")):
        with pytest.raises(ModelPathError, match=rf"inside '{store}', a {kind} that"):
            est.save(os.path.join(store, "X", "m.zarr"))      # inside one of its arrays
    est.save(tmp_path / "beside.zarr")                          # beside them: written
    assert ok.load(tmp_path / "beside.zarr").n_features_in_ == 2


@pytest.mark.parametrize("metadata", ["[]", "null", "3", '"zarr"'])
def test_a_folder_whose_zarr_json_is_not_an_object_is_no_store(tmp_path, metadata):
    """A user's folder holding a ``zarr.json`` that is JSON but not an object is no store
    of this library: a model saved inside it is written, and a model saved over it is
    refused as a folder that is not a store (not a Python AttributeError)."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "zarr.json").write_text(metadata)
    est = ok.DSGClassifier(**FAST).fit(X, Y)
    est.save(folder / "m.zarr")
    assert ok.load(folder / "m.zarr").predict(X).tolist() == est.predict(X).tolist()
    with pytest.raises(ModelPathError, match=r"refusing to replace .*mine'"):
        est.save(folder)
    assert (folder / "zarr.json").read_text() == metadata


@pytest.mark.parametrize("through_link", [False, True])
def test_a_dspdc_work_dir_inside_a_store_is_refused(model, tmp_path, through_link):
    """A DSPDC fit's work store (the duals of its rows, a folder of its own inside
    ``work_dir``) inside a model would be removed with that model: refused before it is
    written, the model left as it was."""
    import dask.array as da

    _, path = model
    where = _reached(path, tmp_path, through_link)
    before = _listing(path)
    lazy = da.from_array(X, chunks=(20, 2)), da.from_array(Y, chunks=20)
    est = ok.DSPDCClassifier(max_iter=1, tol=None, random_state=0, scheduler="sync",
                             work_dir=where / "work")
    with pytest.raises(ForeignPathError, match=rf"work_dir .* lies inside '{path}', a model "
                                               r"that ooc_kernels wrote"):
        est.fit(*lazy, checkpoint=tmp_path / "c.zarr")
    assert _listing(path) == before
    ok.DSPDCClassifier(max_iter=1, tol=None, random_state=0, scheduler="sync",
                       work_dir=tmp_path / "work").fit(*lazy, checkpoint=tmp_path / "c2.zarr")
    assert any((tmp_path / "work").iterdir())                  # outside every store: used
