"""A fit resumes from its checkpoint after the dataset store and the checkpoint were copied
or moved together (a project folder taken to a scratch disk), and still refuses a store
whose contents differ."""

import shutil

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.data.generators import make_dataset
from ooc_kernels.data.schema import open_zarr_dataset
from ooc_kernels.exceptions import CheckpointMismatchError

_PARAMS = dict(n_features=64, block_size=32, batch_size=16, tol=None, random_state=0,
               scheduler="sync", progress=False)


def _store(folder, random_state=0):
    return make_dataset("nonlinear_binary", folder / "train.zarr", 300, chunk_size=100,
                        random_state=random_state, n_features=3)


@pytest.mark.parametrize("how", ["copy", "move"])
def test_a_fit_resumes_from_a_checkpoint_moved_with_its_store(tmp_path, resumed_at, how):
    project = tmp_path / "project"
    project.mkdir()
    _store(project)
    ok.DSGClassifier(max_iter=1, **_PARAMS).fit(open_zarr_dataset(project / "train.zarr"),
                                                checkpoint=project / "ck.zarr")
    assert resumed_at == []
    there = tmp_path / "scratch" / "project"
    (shutil.copytree if how == "copy" else shutil.move)(project, there)
    est = ok.DSGClassifier(max_iter=2, **_PARAMS)
    est.fit(open_zarr_dataset(there / "train.zarr"), checkpoint=there / "ck.zarr",
            resume=True)
    assert resumed_at == [(1, 0)]           # the second epoch, from the moved checkpoint
    # exact resume: the model of an uninterrupted two-epoch fit on the same rows (NumPy)
    data = open_zarr_dataset(there / "train.zarr")
    X, y = np.asarray(data["X"]), np.asarray(data["y"])
    whole = ok.DSGClassifier(max_iter=2, chunk_size=100, **_PARAMS).fit(X, y)
    np.testing.assert_array_equal(est.decision_function(X), whole.decision_function(X))


def test_a_moved_checkpoint_refuses_a_store_with_other_contents(tmp_path, resumed_at):
    project = tmp_path / "project"
    project.mkdir()
    _store(project)
    ok.DSGClassifier(max_iter=1, **_PARAMS).fit(open_zarr_dataset(project / "train.zarr"),
                                                checkpoint=project / "ck.zarr")
    there = tmp_path / "there"
    there.mkdir()
    shutil.copytree(project / "ck.zarr", there / "ck.zarr")
    _store(there, random_state=1)            # same shape and chunks, other rows
    with pytest.raises(CheckpointMismatchError, match="dataset content"):
        ok.DSGClassifier(max_iter=2, **_PARAMS).fit(open_zarr_dataset(there / "train.zarr"),
                                                    checkpoint=there / "ck.zarr",
                                                    resume=True)
    assert resumed_at == []


def test_a_checkpoint_naming_its_store_by_path_resumes_in_place(tmp_path, resumed_at):
    """A checkpoint whose dataset token names the store by its path (the Dask token of the
    data, as versions without the location-free token recorded it) resumes at that path."""
    from _tamper import edit_attrs, set_at
    from ooc_kernels.data.inputs import as_chunked

    _store(tmp_path)
    ok.DSGClassifier(max_iter=1, **_PARAMS).fit(open_zarr_dataset(tmp_path / "train.zarr"),
                                                checkpoint=tmp_path / "ck.zarr")
    path_token = as_chunked(open_zarr_dataset(tmp_path / "train.zarr")).token
    edit_attrs(tmp_path / "ck.zarr", "ooc_kernels_checkpoint",
               set_at("dataset", "token", value=path_token))
    ok.DSGClassifier(max_iter=2, **_PARAMS).fit(open_zarr_dataset(tmp_path / "train.zarr"),
                                                checkpoint=tmp_path / "ck.zarr", resume=True)
    assert resumed_at == [(1, 0)]
