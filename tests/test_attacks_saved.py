"""Attacks on what the library writes: saved models with the newer parts (per-input ARD
widths, ``n_features="auto"``, one-class Nystroem landmarks, the Nystroem dictionary of
``ProjectedKernelRidge``) edited after saving, a disk that fills up in the middle of a save
over an older model, hard and symbolic links at the target, what a user put at the name of
a save's lock file, and target paths no store can
be written at (a file where a folder is expected, a name too long for the temporary written
beside it, no name at all)."""

from __future__ import annotations

import errno
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import zarr

import ooc_kernels as ok
from ooc_kernels import _checksums
from ooc_kernels.exceptions import (ForeignPathError, ModelFormatError, ModelPathError,
                                    ValidationError, WriteFailedError)

sys.path.insert(0, str(Path(__file__).parent))
from _tamper import edit_attrs, set_at  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")
FAST = dict(random_state=0, scheduler="sync", progress=False)
KEY = "ooc_kernels"
RNG = np.random.default_rng(0)
X = RNG.normal(size=(600, 5))
Y = X[:, 0] + X[:, 1] ** 2 > 1


@pytest.fixture(scope="module")
def models():
    """One model of each newer saved form, fitted once."""
    return {
        # per-input widths (saved as config.input_bandwidths) and n_features="auto"
        "ard": ok.DSGClassifier(bandwidth=[0.5, 0.7, 3.0, 9.0, 9.0], max_iter=1, tol=None,
                                **FAST).fit(X, Y),
        "one_class": ok.DSGOneClassSVM(nu=0.1, basis="nystroem", n_features=64,
                                       block_size=32, max_iter=1, tol=None, **FAST).fit(X),
        "pkr": ok.ProjectedKernelRidge(basis="nystrom-fixed", n_components=32,
                                       chunks_per_round=2, chunk_size=200, **FAST)
        .fit(X, X[:, 0]),
    }


def _saved(models, name, tmp_path) -> Path:
    path = tmp_path / f"{name}.zarr"
    models[name].save(path)
    return path


def _scores(model):
    return np.asarray(model.decision_function(X[:50]) if hasattr(model, "decision_function")
                      else model.predict(X[:50]))


def test_the_newer_saved_forms_are_what_this_file_attacks(models):
    ard = models["ard"]
    assert np.ndim(ard.bandwidth_) == 1 and ard.n_features == "auto"
    assert models["one_class"].landmarks_.shape == (64, 5)
    assert models["pkr"].dictionary_ is not None


@pytest.mark.parametrize("name, array", [("ard", "coef"), ("one_class", "landmarks"),
                                         ("pkr", "dictionary"), ("pkr", "gram")])
def test_an_array_edited_in_place_fails_its_checksum(models, tmp_path, name, array):
    path = _saved(models, name, tmp_path)
    stored = zarr.open_array(str(path / array), mode="r+")
    values = np.asarray(stored[...]).copy()
    values.flat[0] += 1.0
    stored[...] = values
    with pytest.raises(ModelFormatError, match=rf"array '{array}' fails its CRC32C checksum"):
        ok.load(path)


BAD_FIELDS = [
    # (keys under fitted, value): a careful editor who reseals the metadata
    (("config", "input_bandwidths"), [1.0, -1.0, 1.0, 1.0, 1.0]),
    (("config", "input_bandwidths"), [1.0, 1.0]),
    (("config", "bandwidth"), 1e308),
    (("config", "bandwidth"), 5e-324),
    (("config", "feature_seed"), "-1"),
    (("config", "feature_seed"), str(2**64)),
    (("config", "batch_size"), [1.0]),
    (("config", "batch_size"), 0),
    (("config", "learning_rate"), "fastest"),
    (("config", "eta0"), -1.0),
    (("config", "t0"), "x"),
    (("config", "shuffle"), 1),
    (("config", "on_invalid"), None),
    (("config", "average"), -1),
    (("config", "class_weight"), [1.0]),
    (("config", "curvature"), 0.0),
    (("config", "feature_budget"), 1.5),
    (("config", "update"), [1.0]),
    (("config", "n_jobs"), 0),
    (("config", "n_jobs"), [2]),
    (("state", "n_blocks_seen"), -1),
    (("state", "n_blocks_seen"), None),
    (("state", "n_blocks_seen"), "x"),
    (("state", "n_iter"), 1.5),
    (("state", "n_avg"), -3),
    (("state", "loss_weight"), -1.0),
]


@pytest.mark.parametrize("keys, value", BAD_FIELDS, ids=lambda v: str(v))
def test_a_resealed_field_of_a_value_no_fit_writes_is_refused_on_load(models, tmp_path, keys,
                                                                       value):
    path = _saved(models, "ard", tmp_path)
    edit_attrs(path, KEY, set_at("fitted", *keys, value=value))
    with pytest.raises(ModelFormatError, match=rf"fitted\.(config|state) has {keys[-1]}="
                                               r"|the metadata's fitted.config"):
        ok.load(path)


@pytest.mark.parametrize("keys, value", [(("config", "bandwidth"), 1e308),
                                         (("config", "batch_size"), [1.0]),
                                         (("state", "n_blocks_seen"), -1)],
                         ids=lambda v: str(v))
def test_the_one_class_model_refuses_the_same_fields(models, tmp_path, keys, value):
    path = _saved(models, "one_class", tmp_path)
    edit_attrs(path, KEY, set_at("fitted", *keys, value=value))
    with pytest.raises(ModelFormatError, match=rf"has {keys[-1]}="):
        ok.load(path)


@pytest.mark.parametrize("value", [1e308, 5e-324, -1.0])
def test_a_resealed_nystroem_width_outside_the_range_is_refused(models, tmp_path, value):
    path = _saved(models, "pkr", tmp_path)
    edit_attrs(path, KEY, set_at("fitted", "bandwidth", value=value))
    with pytest.raises(ModelFormatError, match=r"'bandwidth': a number in \[1e-30, 1e\+30\]"):
        ok.load(path)


@pytest.mark.parametrize("name", ["ard", "one_class", "pkr"])
def test_a_disk_full_in_the_middle_of_a_save_keeps_the_old_model(models, tmp_path,
                                                                 monkeypatch, name):
    path = _saved(models, name, tmp_path)
    before = _scores(ok.load(path))
    written = []

    def fill_up(group, arrays):
        for array, value in arrays.items():
            group.create_array(array, data=np.asarray(value))
            written.append(array)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # full after one array

    monkeypatch.setattr(_checksums, "write_arrays", fill_up)
    with pytest.raises(WriteFailedError, match=rf"could not write the model '.*{path.name}': "
                                               r"No space left on device \(ENOSPC\); nothing "
                                               r"was replaced: the previous model there is "
                                               r"intact") as info:
        models[name].save(path)
    assert info.value.errno == errno.ENOSPC and isinstance(info.value, OSError)
    monkeypatch.undo()
    assert written, "the save must fail part way, after one array was written"
    assert sorted(os.listdir(tmp_path)) == [path.name]       # no temporary left beside it
    np.testing.assert_array_equal(_scores(ok.load(path)), before)


def test_a_hard_link_to_a_file_of_the_model_is_never_written_through(models, tmp_path):
    path = _saved(models, "one_class", tmp_path)
    inside = path / "zarr.json"
    backup = tmp_path / "backup-zarr.json"
    os.link(inside, backup)
    original = backup.read_bytes()
    models["ard"].save(tmp_path / "other.zarr")
    ok.DSGOneClassSVM(nu=0.3, basis="nystroem", n_features=32, block_size=32, max_iter=1,
                      tol=None, **FAST).fit(X).save(path)          # replaces the model
    assert backup.read_bytes() == original                     # the user's link is intact
    assert ok.load(path).nu == 0.3


def test_a_link_at_the_target_of_a_save_is_refused_and_left_alone(models, tmp_path):
    target = _saved(models, "pkr", tmp_path)
    link = tmp_path / "link.zarr"
    link.symlink_to(target, target_is_directory=True)
    with pytest.raises(ModelPathError, match=r"it is a symbolic link"):
        models["ard"].save(link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert isinstance(ok.load(target), ok.ProjectedKernelRidge)


@pytest.mark.parametrize("what", ["a file with content", "a symbolic link", "a folder"])
def test_what_is_at_the_name_of_a_saves_lock_is_refused_and_left_alone(models, tmp_path,
                                                                        what):
    """A save locks ``NAME`` through the empty file ``.NAME.lock``, which it creates and
    removes: a user's file of that name is neither removed nor written, a link there is
    not followed (nothing is created where it leads)."""
    lock = tmp_path / ".m.zarr.lock"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if what == "a file with content":
        lock.write_text("my notes")
    elif what == "a symbolic link":
        lock.symlink_to(elsewhere / "created")
    else:
        lock.mkdir()
    with pytest.raises(ForeignPathError, match=rf"'.*\.m\.zarr\.lock' as the lock of .*: it "
                                               rf"is {what}"):
        models["ard"].save(tmp_path / "m.zarr")
    assert not (tmp_path / "m.zarr").exists() and os.listdir(elsewhere) == []
    if what == "a file with content":
        assert lock.read_text() == "my notes"
    assert lock.is_symlink() if what == "a symbolic link" else lock.exists()


def test_an_empty_lock_left_by_a_dead_writer_is_taken_and_removed(models, tmp_path):
    (tmp_path / ".m.zarr.lock").write_bytes(b"")
    models["ard"].save(tmp_path / "m.zarr")
    assert sorted(os.listdir(tmp_path)) == ["m.zarr"]
    assert isinstance(ok.load(tmp_path / "m.zarr"), ok.DSGClassifier)


def test_a_file_where_a_folder_is_expected_is_refused_before_the_fit(models, tmp_path):
    (tmp_path / "notes").write_text("mine")
    with pytest.raises(ModelPathError, match=r"'.*notes' is a file, not a folder"):
        models["ard"].save(tmp_path / "notes" / "m.zarr")
    with pytest.raises(ForeignPathError, match=r"'.*notes' is a file, not a folder"):
        ok.DSGClassifier(n_features=64, block_size=32, max_iter=1, **FAST).fit(
            X, Y, checkpoint=tmp_path / "notes" / "sub" / "c.zarr")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    with pytest.raises(ModelPathError, match=r"is a symbolic link to nothing"):
        models["ard"].save(tmp_path / "gone" / "m.zarr")
    assert (tmp_path / "notes").read_text() == "mine"
    assert sorted(os.listdir(tmp_path)) == ["gone", "notes"]


@pytest.mark.parametrize("length", [213, 240, 255, 300])
def test_a_name_too_long_for_the_temporary_beside_it_is_refused_before_the_fit(
        models, tmp_path, length):
    name = "m" * length
    with pytest.raises(ValidationError, match=rf"\({length} bytes\) is too long: .*at most "
                                              r"212 bytes"):
        models["ard"].save(tmp_path / name)
    with pytest.raises(ValidationError, match=r"is too long"):
        ok.DSGClassifier(n_features=64, block_size=32, max_iter=1, **FAST).fit(
            X, Y, checkpoint=tmp_path / name)
    assert os.listdir(tmp_path) == []
    with pytest.raises(ModelFormatError, match=r"no model at"):
        ok.load(tmp_path / name)


def test_the_longest_name_accepted_and_unicode_names_save_and_load(models, tmp_path):
    for name in ("m" * 212, "módèl-模型-🙂.zarr", "é" * 106):     # 212 bytes: the limit
        models["pkr"].save(tmp_path / name)
        np.testing.assert_array_equal(_scores(ok.load(tmp_path / name)),
                                      _scores(models["pkr"]))


@pytest.mark.parametrize("target", ["", ".", "..", "sub/..", "a\0b"])
def test_a_path_without_a_name_is_refused(models, tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError, match=r"names no file or folder|NUL character"):
        models["ard"].save(target)
    assert os.listdir(tmp_path) == []


def test_a_relative_path_with_dotdot_saves_where_it_points(models, tmp_path, monkeypatch):
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a" / "b")
    models["pkr"].save("../../up.zarr")
    assert sorted(os.listdir(tmp_path)) == ["a", "up.zarr"]
    assert isinstance(ok.load(tmp_path / "up.zarr"), ok.ProjectedKernelRidge)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_an_os_error_and_leaves_nothing(models, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(PermissionError, match=r"Permission denied"):
            models["ard"].save(folder / "m.zarr")
        assert os.listdir(folder) == []
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


def test_a_file_size_limit_in_a_subprocess_is_the_librarys_error_naming_the_path(tmp_path):
    """A real refusal of the file system (``RLIMIT_FSIZE``: EFBIG) during a dataset write and
    a checkpoint write: the library's error, the path, nothing left behind."""
    import subprocess

    code = (
        "import resource, signal, numpy as np, ooc_kernels as ok\n"
        "X = np.random.default_rng(0).normal(size=(300, 3))\n"
        "est = ok.DSGRegressor(n_features=2048, block_size=256, max_iter=2, tol=None, "
        "random_state=0, scheduler='sync', progress=False)\n"
        "est.fit(X, X[:, 0], checkpoint='ck.zarr', checkpoint_every=1)\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))\n"
        "for write in (lambda: ok.make_dataset('synthetic_krr_2d', 'd.zarr', 100000, "
        "chunk_size=50000, progress=False), lambda: est.set_params(max_iter=4).fit("
        "X, X[:, 0], checkpoint='ck.zarr', checkpoint_every=1, resume=True)):\n"
        "    try:\n"
        "        write()\n"
        "    except Exception as err:\n"
        "        print(type(err).__name__, err.errno, err)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert len(out) == 2, out
    assert out[0].startswith("WriteFailedError 27 [Errno 27] could not write the dataset '")
    assert "d.zarr': File too large (EFBIG); nothing was replaced: nothing is there" in out[0]
    assert out[1].startswith("WriteFailedError 27 [Errno 27] could not write the checkpoint")
    assert "the previous checkpoint there is intact (a re-run resumes from it)" in out[1]
    assert sorted(os.listdir(tmp_path)) == ["ck.zarr"]
