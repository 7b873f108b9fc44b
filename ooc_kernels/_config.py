"""The library's Dask configuration defaults, registered with Dask's configuration system.

The defaults are in the packaged ``ooc_kernels/ooc-kernels.yaml``; :func:`register_defaults`
gives them to ``dask.config.update_defaults`` (what ``distributed`` and ``dask-ml`` do with
their own YAML), so ``dask.config.get("ooc-kernels.cluster.chain")`` answers, a value set by
the user (``dask.config.set``, a YAML file in ``~/.config/dask/``, a ``DASK_OOC_KERNELS__...``
environment variable) wins over it, and ``dask.config.refresh()`` keeps it.

The defaults are registered when the library's Dask layer is imported
(:mod:`ooc_kernels.parallel`, which every estimator, dataset and pipeline function uses), and
by ``import ooc_kernels`` when Dask is already imported; ``import ooc_kernels`` alone never
imports Dask.

Examples
--------
>>> from ooc_kernels._config import register_defaults
>>> import dask
>>> register_defaults()
>>> dask.config.get("ooc-kernels.cluster.chain")
8
"""

from __future__ import annotations

import importlib.resources
import threading

__all__ = ["CONFIG_FILE", "defaults", "register_defaults"]

#: The packaged YAML file that holds the defaults (inside the ``ooc_kernels`` package).
CONFIG_FILE = "ooc-kernels.yaml"

_lock = threading.Lock()
_registered = False


def defaults() -> dict:
    """The library's defaults, as read from the packaged YAML file.

    Returns
    -------
    dict
        ``{"ooc-kernels": {...}}``, a fresh copy on every call.
    """
    import yaml

    text = importlib.resources.files("ooc_kernels").joinpath(CONFIG_FILE).read_text("utf-8")
    return yaml.safe_load(text)


def register_defaults() -> None:
    """Give the library's defaults to ``dask.config.update_defaults`` (once per process).

    Values the user has set already (``dask.config.set``, Dask's YAML files, environment
    variables) are kept: they win over defaults.
    """
    global _registered
    with _lock:
        if _registered:
            return
        import dask.config

        dask.config.update_defaults(defaults())
        _registered = True
