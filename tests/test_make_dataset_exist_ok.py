"""``make_dataset(..., exist_ok=True)`` / ``data make --exist-ok``: keep only identical stores."""

from __future__ import annotations

import hashlib

import pytest
from click.testing import CliRunner

from ooc_kernels.cli import main
from ooc_kernels.data import make_dataset, open_zarr_dataset
from ooc_kernels.exceptions import DatasetExistsError

SETTINGS = dict(chunk_size=100, random_state=3, split="train", n_features=5, flip=0.0)


def _snapshot(path):
    """Every file of the store with its bytes' digest and modification time."""
    return {str(p.relative_to(path)): (hashlib.sha256(p.read_bytes()).hexdigest(),
                                       p.stat().st_mtime_ns)
            for p in sorted(path.rglob("*")) if p.is_file()}


def _data(path):
    ds = open_zarr_dataset(path)
    return ds.X.values.tobytes() + ds.y.values.tobytes()   # small stores only


def test_identical_store_is_kept_untouched(tmp_path):
    path = make_dataset("nonlinear_binary", tmp_path / "nb.zarr", 450, progress=False,
                        **SETTINGS)
    before = _snapshot(path)
    # the same settings, with a default parameter written out or left out
    again = make_dataset("nonlinear_binary", tmp_path / "nb.zarr", 450, progress=False,
                         exist_ok=True, chunk_size=100, random_state=3, n_features=5,
                         n_informative=3)
    assert again == path
    assert _snapshot(path) == before                          # nothing rewritten
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nb.zarr"]   # no temporary left
    with pytest.raises(DatasetExistsError, match=r"already exists; pass overwrite=True"):
        make_dataset("nonlinear_binary", tmp_path / "nb.zarr", 450, progress=False,
                     **SETTINGS)                               # exist_ok off: as before


@pytest.mark.parametrize("change, match", [
    (dict(random_state=4), r"random_state: the store has 3, this call 4"),
    (dict(split="test"), r"split: the store has 'train', this call 'test'"),
    (dict(flip=0.1), r"generator_params: the store has \{.*'flip': 0.0.*\}, this call "
                     r"\{.*'flip': 0.1.*\}"),
    (dict(n_features=6), r"shape of X: the store has \(450, 5\), this call \(450, 6\)"),
    (dict(n_samples=451), r"shape of X: the store has \(450, 5\), this call \(451, 5\)"),
    (dict(chunk_size=150), r"chunk_size: the store has 100, this call 150"),
])
def test_other_settings_are_refused_and_the_store_kept(tmp_path, change, match):
    path = make_dataset("nonlinear_binary", tmp_path / "nb.zarr", 450, progress=False,
                        **SETTINGS)
    before = _snapshot(path)
    kwargs = dict(SETTINGS, n_samples=450)
    kwargs.update(change)
    with pytest.raises(DatasetExistsError, match=rf"already exists and holds other data than "
                                                 rf"this call would write \(.*{match}"):
        make_dataset("nonlinear_binary", tmp_path / "nb.zarr", progress=False, exist_ok=True,
                     **kwargs)
    assert _snapshot(path) == before


def test_other_generator_is_refused(tmp_path):
    make_dataset("synthetic_krr_2d", tmp_path / "k.zarr", 100, chunk_size=50, progress=False)
    with pytest.raises(DatasetExistsError, match=r"generator: the store has "
                                                 r"'synthetic_krr_2d', this call "
                                                 r"'nonlinear_binary'"):
        make_dataset("nonlinear_binary", tmp_path / "k.zarr", 100, chunk_size=50,
                     n_features=2, n_informative=1, progress=False, exist_ok=True)


def test_exist_ok_with_overwrite_replaces_only_a_different_store(tmp_path):
    path = make_dataset("nonlinear_binary", tmp_path / "nb.zarr", 450, progress=False,
                        **SETTINGS)
    before = _snapshot(path)
    make_dataset("nonlinear_binary", path, 450, progress=False, exist_ok=True,
                 overwrite=True, **SETTINGS)
    assert _snapshot(path) == before                          # identical: kept
    make_dataset("nonlinear_binary", path, 450, progress=False, exist_ok=True,
                 overwrite=True, **dict(SETTINGS, random_state=9))
    reference = make_dataset("nonlinear_binary", tmp_path / "ref.zarr", 450, progress=False,
                             **dict(SETTINGS, random_state=9))
    assert _data(path) == _data(reference)                    # replaced by the new data


def test_a_folder_that_is_not_a_dataset_is_refused(tmp_path):
    (tmp_path / "x.zarr").mkdir()
    (tmp_path / "x.zarr" / "notes.txt").write_text("mine")
    with pytest.raises(DatasetExistsError, match=r"it is not a dataset store written by "
                                                 r"make_dataset"):
        make_dataset("synthetic_krr_2d", tmp_path / "x.zarr", 10, progress=False,
                     exist_ok=True)
    assert (tmp_path / "x.zarr" / "notes.txt").read_text() == "mine"


def test_cli_data_make_exist_ok(tmp_path):
    runner = CliRunner()
    args = ["data", "make", "synthetic_krr_2d", "--n", "300", "--chunk-size", "100",
            "--out", str(tmp_path / "data"), "--catalog", str(tmp_path / "c.yaml"), "-q"]
    first = runner.invoke(main, args)
    assert first.exit_code == 0, first.output
    store = tmp_path / "data" / "synthetic_krr_2d.zarr"
    before = _snapshot(store)
    refused = runner.invoke(main, args)
    assert refused.exit_code == 1 and "DatasetExistsError" in refused.output
    kept = runner.invoke(main, args + ["--exist-ok"])
    assert kept.exit_code == 0, kept.output
    assert kept.output.strip() == str(store)
    assert _snapshot(store) == before
    other = runner.invoke(main, args + ["--exist-ok", "--seed", "1"])
    assert other.exit_code == 1
    assert "random_state: the store has 0, this call 1" in other.output
    assert _snapshot(store) == before
