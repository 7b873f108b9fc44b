"""A prediction store carries a CRC32C on every chunk of every array, so a damaged chunk
fails to decode when it is read instead of decoding to other predictions."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import xarray as xr
import zarr

import ooc_kernels as ok
from ooc_kernels.evaluation import write_predictions


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ok.exceptions.OocKernelsWarning)
        clf = ok.DSGClassifier(n_features=256, max_iter=1, chunk_size=20, tol=None,
                               random_state=0).fit(X, y)
    times = np.array([f"t{i:03d}" for i in range(60)])
    return clf, xr.DataArray(X, dims=("time", "feature"), coords={"time": times})


def test_every_array_of_a_prediction_store_has_chunk_checksums(tmp_path, fitted):
    clf, X = fitted
    path = write_predictions(clf, X, tmp_path / "p.zarr")
    names = sorted(p.parent.name for p in path.glob("*/zarr.json"))
    assert names == ["class", "prediction", "proba", "time"]
    for name in names:
        codecs = json.loads((path / name / "zarr.json").read_text())["codecs"]
        assert "crc32c" in [c["name"] for c in codecs], (name, codecs)


@pytest.mark.parametrize("name", ["prediction", "proba"])
def test_every_flipped_byte_of_a_prediction_chunk_fails_to_read(tmp_path, fitted, name):
    """Each of the chunk file's bytes flipped in turn: every read fails (without the
    checksum, zstd decoded most flips to other numbers)."""
    clf, X = fitted
    path = write_predictions(clf, X, tmp_path / "p.zarr")
    expected = clf.predict_proba(X.values) if name == "proba" else clf.predict(X.values)
    np.testing.assert_array_equal(xr.open_zarr(path)[name].values, expected)
    chunk = sorted(p for p in (path / name / "c").rglob("*") if p.is_file())[0]
    raw = chunk.read_bytes()
    silent = []
    for i in range(len(raw)):
        flipped = bytearray(raw)
        flipped[i] ^= 0x01
        chunk.write_bytes(bytes(flipped))
        try:
            zarr.open_array(str(path / name), mode="r")[...]
        except Exception:  # noqa: BLE001 - zarr's checksum error (its type is zarr's own)
            continue
        silent.append(i)
    assert silent == []
