"""What ``pip install .`` installs covers what the library advertises.

* Dask DataFrame and pandas inputs are supported: ``dask.dataframe`` needs pandas and pyarrow.
* The progress bar of a fit on a ``distributed.Client`` prints the Dask dashboard's address:
  the dashboard needs bokeh (and jinja2), and the page must actually serve.
* A pandas text column in ``X`` is refused with the column's name (as a Dask DataFrame's is).
"""

import re
import tomllib
import urllib.request
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import ooc_kernels as ok
from ooc_kernels.exceptions import ValidationError

ROOT = Path(__file__).resolve().parents[1]


def _installed_by(requirements: list[str]) -> set[str]:
    """Every distribution pip installs for ``requirements`` (no extras of the project),
    followed through the installed distributions' own metadata and their extras."""
    seen: set[tuple[str, frozenset]] = set()
    names: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        key = (name, frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        names.add(name)
        for text in metadata.requires(req.name) or []:
            sub = Requirement(text)
            if sub.marker is None:
                todo.append(sub)
                continue
            # the requirement applies when its marker holds for no extra or one we asked for
            if any(sub.marker.evaluate({"extra": extra}) for extra in ("", *req.extras)):
                todo.append(sub)
    return names


def _main_requirements() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project["dependencies"]


def test_pip_install_dot_brings_dataframes_and_the_dashboard():
    installed = _installed_by(_main_requirements())
    # dask.dataframe (pandas, pyarrow) and the dashboard (bokeh, jinja2), as Dask's
    # own extras name them
    for needed in ("pandas", "pyarrow", "bokeh", "jinja2", "distributed"):
        assert needed in installed, (needed, sorted(installed))


def test_dask_dataframe_imports():
    import dask.dataframe as dd

    ddf = dd.from_dict({"a": [1.0, 2.0, 3.0], "b": [0, 1, 0]}, npartitions=2)
    assert ddf["a"].sum().compute() == 6.0


def test_the_dashboard_the_progress_bar_names_serves_its_pages(capsys):
    distributed = pytest.importorskip("distributed")
    X = np.random.default_rng(0).normal(size=(40, 2))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        ok.DSGRegressor(n_features=64, block_size=16, batch_size=8, max_iter=1, tol=None,
                        random_state=0, progress=True, scheduler=client).fit(X, X[:, 0])
        printed = re.search(r"dashboard: (https?://[^\s\])]+)", capsys.readouterr().err)
        assert printed is not None, "the progress bar printed no dashboard address"
        link = printed.group(1)
        assert link == client.dashboard_link and link.endswith("/status")
        with urllib.request.urlopen(link, timeout=60) as page:
            assert page.status == 200
            assert page.headers.get_content_type() == "text/html"
            html = page.read().decode()
        assert "<title>Dask Diagnostic UI</title>" in html
        # the Bokeh application the page embeds, served by the same server
        script = re.search(r'src="(static/js/bokeh\.min\.js[^"]*)"', html)
        assert script is not None, html[:2000]
        base = link.rsplit("/", 1)[0]
        with urllib.request.urlopen(f"{base}/{script.group(1)}", timeout=60) as js:
            assert js.status == 200
            assert b"Bokeh" in js.read(4096)


def test_a_pandas_text_column_is_named():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"age": [31.0, 45.0, 52.0, 23.0],
                       "smoker": pd.Series(["no", "yes", "no", "no"], dtype="string"),
                       "visits": [1, 3, 2, 0]})
    y = np.array([0, 1, 1, 0])
    expected = (r"X has non-numeric columns: 'smoker' \(string: could not convert string to "
                r"float: 'no'\); the estimators need numbers\. Fix: pass the numeric columns "
                r"only, e.g\. X = df\[numeric_cols\] or X = df\.select_dtypes\('number'\)")
    with pytest.raises(ValidationError, match=expected):
        ok.DSGClassifier(progress=False).fit(df, y)
    with pytest.raises(ValidationError, match=expected):
        ok.DSPDCClassifier(progress=False).fit(df, y)
    # predict names it too
    model = ok.DSGClassifier(n_features=16, block_size=8, max_iter=1, tol=None,
                             progress=False, random_state=0).fit(df[["age", "visits"]], y)
    with pytest.raises(ValidationError, match=expected.replace("'smoker'", "'visits'")):
        model.predict(df[["age", "smoker"]].rename(columns={"smoker": "visits"}))
    # the numeric columns alone, and an object column of numbers, are accepted
    numbers = df[["age", "visits"]].astype({"visits": object})
    model = ok.DSGClassifier(n_features=16, block_size=8, max_iter=1, tol=None,
                             progress=False, random_state=0).fit(numbers, y)
    assert model.predict(numbers).shape == (4,)


def test_a_pandas_text_column_is_named_by_as_chunked():
    pd = pytest.importorskip("pandas")
    from ooc_kernels.data.inputs import as_chunked

    df = pd.DataFrame({"age": [31.0, 45.0], "city": ["Lyon", "Oslo"]})
    with pytest.raises(ValidationError, match=r"X has non-numeric columns: 'city' \(\w+: "
                                              r"could not convert string to float: 'Lyon'\)"):
        as_chunked(df, np.array([0, 1]))
