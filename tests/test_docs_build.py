"""The API reference (``docs/sphinx``) builds with warnings as errors and holds the public API.

The build runs as the command a user runs (``python -m sphinx -b html -W --keep-going``), in a
fresh process, on a copy of ``docs/sphinx`` in a temporary directory (the pages written at
build time never touch the checkout).  It fails on any docutils or Sphinx warning, on a
docstring numpydoc cannot parse (``conf.py`` turns numpydoc's own warnings into Sphinx
warnings) and on a public module that fails to import (autodoc's warning).  Nothing is
downloaded: the configuration uses no intersphinx inventory.
"""

from __future__ import annotations

import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx", reason="the docs extra is not installed (pip install -e .[docs])")
pytest.importorskip("numpydoc")
pytest.importorskip("sphinx_click")

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "docs" / "sphinx"

pytestmark = pytest.mark.slow


def _public_modules() -> list[str]:
    import ooc_kernels

    names = ["ooc_kernels"]
    for info in pkgutil.walk_packages(ooc_kernels.__path__, "ooc_kernels.",
                                      onerror=lambda name: None):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """Build the reference once; returns (completed process, html directory)."""
    tmp = tmp_path_factory.mktemp("docs")
    src, html = tmp / "src", tmp / "html"
    shutil.copytree(SOURCE, src, ignore=shutil.ignore_patterns("generated", "_build"))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-E", "-q",
           "-j", "1", "-d", str(tmp / "doctrees"), str(src), str(html)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return proc, html


def _ids(page: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8")))


def test_build_has_no_warnings(build):
    proc, html = build
    assert proc.returncode == 0, (
        f"sphinx-build exited with {proc.returncode}:\n{proc.stderr[-8000:]}")
    assert not re.search(r"\b(WARNING|ERROR|SEVERE|CRITICAL):", proc.stderr), proc.stderr[-8000:]
    assert (html / "index.html").is_file()


def test_every_public_module_has_a_page(build):
    proc, html = build
    assert proc.returncode == 0, proc.stderr[-8000:]
    for name in _public_modules():
        page = html / "generated" / f"{name}.html"
        assert page.is_file(), f"no page for {name}"
        if name != "ooc_kernels":  # the top-level page documents the package itself
            assert f"module-{name}" in _ids(page), f"{name} is not documented on its page"


def test_key_objects_are_documented(build):
    proc, html = build
    assert proc.returncode == 0, proc.stderr[-8000:]
    import ooc_kernels
    from ooc_kernels import exceptions
    from ooc_kernels.estimators import available_estimators

    top = _ids(html / "generated" / "ooc_kernels.html")
    estimators = _ids(html / "generated" / "estimators.html")
    names = available_estimators()
    for name in ooc_kernels.__all__:   # every public name, estimators on their own page
        if not name.startswith("__"):
            assert f"ooc_kernels.{name}" in (estimators if name in names else top), name
    assert "ooc_kernels.open_dataset" in top

    # the estimator section is generated from the registry: every family is there
    assert {"DSGClassifier", "DSGRegressor"} <= set(names)
    for name in names:
        for member in ("", ".fit", ".predict"):
            assert f"ooc_kernels.{name}{member}" in estimators, name + member
    assert "ooc_kernels.DSGClassifier.predict_proba" in estimators
    # scikit-learn's own members (metadata routing) are left to scikit-learn's docs
    assert not any("_request" in i or "get_params" in i for i in estimators)

    errors = _ids(html / "generated" / "ooc_kernels.exceptions.html")
    for name in exceptions.__all__:
        assert f"ooc_kernels.exceptions.{name}" in errors, name

    assert "ooc_kernels.estimators.base.ChunkedEstimator" in _ids(
        html / "generated" / "ooc_kernels.estimators.base.html")
    assert "ooc_kernels.data.catalog.open_dataset" in _ids(
        html / "generated" / "ooc_kernels.data.catalog.html")


def test_cli_page_lists_every_command(build):
    proc, html = build
    assert proc.returncode == 0, proc.stderr[-8000:]
    from ooc_kernels.cli import main

    text = (html / "cli.html").read_text(encoding="utf-8")
    assert "ooc-kernels" in text
    for name in main.commands:
        assert re.search(rf">\s*{re.escape(name)}\s*<", text), f"command {name!r} missing"
