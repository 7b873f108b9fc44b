"""A pipeline replaces only the outputs its own runs wrote.

Attacks: a model the user saved by hand (``est.save("out/model.zarr")``), or another
pipeline's outputs, in the pipeline's ``save.output_dir``.
"""

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

import ooc_kernels as ok
from ooc_kernels.exceptions import ForeignPathError, ModelPathError
from ooc_kernels.pipeline import run_pipeline


def _pipeline(tmp_path, name="tiny", **fit):
    from ooc_kernels.data.catalog import register_dataset

    if not (tmp_path / "cat.yaml").exists():
        register_dataset(tmp_path / "cat.yaml", "nb", tmp_path / "data" / "nb.zarr")
        register_dataset(tmp_path / "cat.yaml", "nb_test", tmp_path / "data" / "nb_test.zarr")
    spec = {
        "name": name,
        "data": {"catalog": "cat.yaml", "train": "nb", "test": "nb_test", "generate": {
            "nb": {"generator": "nonlinear_binary", "n_samples": 300, "chunk_size": 100,
                   "params": {"n_features": 3}},
            "nb_test": {"generator": "nonlinear_binary", "n_samples": 100, "split": "test",
                        "random_state": 1, "chunk_size": 50, "params": {"n_features": 3}}}},
        "model": {"estimator": "DSGClassifier",
                  "params": {"n_features": 64, "block_size": 32, "batch_size": 16,
                             "max_iter": 2, "tol": None, "random_state": 0}},
        "fit": {"checkpoint_every": 1, **fit},
        "save": {"output_dir": "out"},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _digest(folder: Path) -> dict:
    """Every file under ``folder`` by relative path: its SHA-256 (byte for byte)."""
    return {str(f.relative_to(folder)): hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(folder.rglob("*")) if f.is_file()}


def _users_model(path: Path):
    X = np.random.default_rng(0).normal(size=(40, 3))
    est = ok.DSGRegressor(n_features=32, block_size=32, batch_size=8, max_iter=1, tol=None, random_state=0,
                          scheduler="sync", progress=False).fit(X, X[:, 0])
    est.save(path)
    return est, X


def test_a_model_the_user_saved_in_the_output_folder_is_never_replaced(tmp_path):
    mine = tmp_path / "out" / "model.zarr"
    est, X = _users_model(mine)
    before = _digest(mine)
    with pytest.raises(ModelPathError) as info:
        run_pipeline(_pipeline(tmp_path), scheduler="sync", progress=False)
    message = str(info.value)
    assert f"refusing to replace {str(mine)!r}" in message
    assert "no record of a pipeline" in message and "save.output_dir" in message
    assert _digest(mine) == before                               # byte for byte
    assert sorted(os.listdir(tmp_path / "out")) == ["model.zarr"]  # before any work
    assert not (tmp_path / "data").exists()                      # not even the data stage
    np.testing.assert_array_equal(ok.load(mine).predict(X), est.predict(X))


def test_a_pipeline_reruns_over_its_own_outputs_resumed_and_fresh(tmp_path):
    path = _pipeline(tmp_path)
    first = run_pipeline(path, scheduler="sync", progress=False)
    out = tmp_path / "out"
    assert sorted(os.listdir(out)) == [".ooc_kernels_output_folder.json", "checkpoint.zarr",
                                       "metrics.json", "model.zarr", "predictions.zarr"]
    folder_id = json.loads((out / ".ooc_kernels_output_folder.json").read_text())
    assert folder_id["ooc_kernels_file"] == "output-folder"
    owner = {"pipeline": "tiny", "output_folder": folder_id["id"]}
    for store in ("checkpoint.zarr", "model.zarr", "predictions.zarr"):
        attrs = json.loads((out / store / "zarr.json").read_text())["attributes"]
        assert attrs["ooc_kernels_owner"] == owner, store
    assert json.loads((out / "metrics.json").read_text())["ooc_kernels_owner"] == owner
    resumed = run_pipeline(path, scheduler="sync", progress=False)      # resume: true
    fresh = run_pipeline(_pipeline(tmp_path, resume=False), scheduler="sync", progress=False)
    for again in (resumed, fresh):
        assert again["test_accuracy"] == first["test_accuracy"]
    # the user may still replace the pipeline's model by name, and load it
    est, X = _users_model(out / "model.zarr")
    np.testing.assert_array_equal(ok.load(out / "model.zarr").predict(X), est.predict(X))


def test_a_second_pipeline_with_the_same_output_folder_is_refused(tmp_path):
    run_pipeline(_pipeline(tmp_path, name="one"), scheduler="sync", progress=False)
    out = tmp_path / "out"
    before = _digest(out)
    with pytest.raises(ForeignPathError, match="written by the pipeline 'one', not by a run of the pipeline 'two'"):
        run_pipeline(_pipeline(tmp_path, name="two"), scheduler="sync", progress=False)
    assert _digest(out) == before


@pytest.mark.parametrize("name", ["metrics.json", "predictions.zarr", "checkpoint.zarr"])
def test_each_output_of_another_pipeline_is_refused(tmp_path, name):
    """One output of pipeline 'one' copied into the folder of pipeline 'two': refused."""
    import shutil

    run_pipeline(_pipeline(tmp_path, name="one"), scheduler="sync", progress=False)
    other = tmp_path / "other"
    other.mkdir()
    copy = shutil.copytree if name.endswith(".zarr") else shutil.copy2
    copy(tmp_path / "out" / name, other / name)
    spec = yaml.safe_load(_pipeline(tmp_path, name="two").read_text())
    spec["save"]["output_dir"] = "other"
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(spec))
    before = _digest(other)
    with pytest.raises(ForeignPathError, match="by the pipeline 'one'"):
        run_pipeline(path, scheduler="sync", progress=False)
    assert _digest(other) == before and os.listdir(other) == [name]
