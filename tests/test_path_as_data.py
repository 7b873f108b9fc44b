"""A Zarr store's path given where data goes (``fit("data.zarr")``, ``predict(path)``,
``evaluate(est, path)``, ``y="label"``) is an ``InputTypeError`` that says to open the
store (``ooc_kernels.data.open_zarr_dataset``) or the catalog entry, not scikit-learn's
'requires y to be passed' or 'could not convert string to float'.  Opening the store as
the message says fits."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.estimators._registry import ESTIMATORS
from ooc_kernels.evaluation import evaluate
from ooc_kernels.exceptions import InputTypeError

pytestmark = pytest.mark.filterwarnings("ignore::ooc_kernels.exceptions.StepSizeWarning")

FAST = dict(n_features=256, max_iter=1, tol=None, random_state=0, scheduler="sync")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "nb.zarr"
    ok.make_dataset("nonlinear_binary", path, 60, chunk_size=20, progress=False)
    return path


@pytest.mark.parametrize("name", ESTIMATORS.names())
@pytest.mark.parametrize("kind", [str, pathlib.Path])
def test_fit_on_a_path_says_to_open_the_store(store, name, kind):
    with pytest.raises(InputTypeError, match=r"X is (str|PosixPath) '.*nb\.zarr', not "
                                             r"data; .*ooc_kernels\.data\.open_zarr_data"):
        est = ESTIMATORS.get(name)()
        two = name == "DSGDensityRatio"          # fit(X_p, X_q): two samples
        est.fit(kind(store), kind(store)) if two else est.fit(kind(store))


def test_predict_score_evaluate_and_y_on_a_path(store):
    data = ok.data.open_zarr_dataset(store)     # what the message says to do
    clf = ok.DSGClassifier(**FAST).fit(data)
    assert clf.n_features_in_ == data["X"].shape[1]
    for call in (lambda: clf.predict(str(store)), lambda: clf.score(str(store), None),
                 lambda: evaluate(clf, str(store))):
        with pytest.raises(InputTypeError, match="open_zarr_dataset"):
            call()
    with pytest.raises(InputTypeError, match=r"y is str 'label', not data"):
        ok.DSGClassifier(**FAST).fit(np.zeros((4, 2)), "label")
