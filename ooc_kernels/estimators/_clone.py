"""scikit-learn's ``clone`` for the chunked estimators: runtime parameters are shared.

A ``distributed.Client`` given as ``scheduler`` is a connection: it cannot be deep-copied
(and a copy would be another connection), so a clone uses the same one; that is what lets
``GridSearchCV`` and ``cross_val_score`` run on a cluster.  Everything else is what
scikit-learn's own ``clone`` makes: the other parameters cloned, and the state it carries
over besides them, the metadata requests (``set_fit_request(sample_weight=True)``, which
``Pipeline`` and ``GridSearchCV`` read on their clones), ``set_output``'s configuration and
the callbacks.

Examples
--------
>>> import sklearn
>>> from sklearn.base import clone
>>> from ooc_kernels import DSGRegressor
>>> with sklearn.config_context(enable_metadata_routing=True):
...     est = DSGRegressor(scheduler="sync").set_fit_request(sample_weight=True)
...     clone(est).get_metadata_routing().fit.requests["sample_weight"]
True
"""

from __future__ import annotations

from sklearn.base import clone

__all__ = ["clone_sharing"]

#: Attributes besides the parameters that scikit-learn's ``clone`` copies (deep copies).
_COPIED = ("_metadata_request", "_sklearn_output_config")


def clone_sharing(estimator, shared=("scheduler",)):
    """An unfitted copy of ``estimator`` as scikit-learn's ``clone`` makes it, with the
    parameters named in ``shared`` passed as they are instead of cloned."""
    params = estimator.get_params(deep=False)
    kept = {name: params.pop(name) for name in shared if name in params}
    twin = type(estimator)(**{k: clone(v, safe=False) for k, v in params.items()}, **kept)
    for attr in _COPIED:
        if hasattr(estimator, attr):
            setattr(twin, attr, clone(getattr(estimator, attr), safe=False))
    if hasattr(estimator, "_skl_callbacks"):  # shared by reference, as scikit-learn does
        twin._skl_callbacks = estimator._skl_callbacks
    return twin
