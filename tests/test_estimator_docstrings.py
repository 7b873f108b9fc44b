"""Every registered estimator documents itself: a class docstring of its own that numpydoc
reads, every constructor parameter listed under Parameters, and a runnable example.

A class body that starts with a concatenated string (``\"\"\"...\"\"\" + DOC``) has no
docstring at all (Python keeps only a plain string literal); this check catches it.
"""

import inspect

import pytest

from ooc_kernels.estimators._registry import available_estimators, get_estimator

docscrape = pytest.importorskip("numpydoc.docscrape")


def _problems(cls) -> list[str]:
    if not cls.__dict__.get("__doc__"):
        return ["no docstring of its own"]
    doc = docscrape.ClassDoc(cls)
    names = set()
    for param in doc["Parameters"]:
        names.update(n.strip() for n in param.name.split(","))
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    problems = [f"parameter {p!r} not documented" for p in params if p not in names]
    if ">>>" not in "\n".join(doc["Examples"]):
        problems.append("no example")
    return problems


@pytest.mark.parametrize("name", available_estimators())
def test_every_constructor_parameter_is_documented_with_an_example(name):
    assert _problems(get_estimator(name)) == []


def test_the_check_sees_a_docstring_that_is_not_one():
    class Concatenated:
        "Parameters\n----------\nalpha : float\n" + "\nExamples\n--------\n>>> 1\n1\n"

        def __init__(self, alpha=1.0):
            self.alpha = alpha

    class Partial:
        """An estimator.

        Parameters
        ----------
        alpha : float
        """

        def __init__(self, alpha=1.0, beta=2.0):
            self.alpha, self.beta = alpha, beta

    assert _problems(Concatenated) == ["no docstring of its own"]
    assert _problems(Partial) == ["parameter 'beta' not documented", "no example"]


@pytest.mark.parametrize("name", available_estimators())
def test_every_estimator_documents_the_feature_labels_it_records(name):
    """Every estimator records ``feature_coords_`` from labelled xarray input (the shared
    input path of ``ChunkedEstimator``), so every one lists it under Attributes."""
    doc = docscrape.ClassDoc(get_estimator(name))
    names = {n.strip() for attr in doc["Attributes"] for n in attr.name.split(",")}
    assert "feature_coords_" in names
