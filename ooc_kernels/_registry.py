"""Registries by name, filled by the modules that define what they hold.

A family's package (``ooc_kernels/families/<name>/``) names, in ``__registers__``, the modules
that register its solver and its estimators when imported.  A :class:`Registry` imports every
public module (or subpackage) of its package, and the modules each names in
``__registers__``, the first time a name is looked up (or listed), so the code that reads a registry (persistence, checkpoints,
``ok.load``, the pipeline runner, the command line, the contract suite) never names a family.

Examples
--------
>>> from ooc_kernels._registry import Registry
>>> shapes = Registry("shape", package=None)
>>> shapes.register("square", 4)
>>> shapes.get("square"), shapes.names()
(4, ['square'])
>>> shapes.get("circle")
Traceback (most recent call last):
...
ooc_kernels.exceptions.RegistryError: unknown shape 'circle'; registered: ['square']
>>> with shapes.temporarily("triangle", 3):
...     shapes.names()
['square', 'triangle']
>>> shapes.names()
['square']
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ooc_kernels.exceptions import RegistryError

__all__ = ["Registry", "lazy_exports"]


class Registry:
    """Objects registered under unique names, with discovery of the registering modules.

    Parameters
    ----------
    kind : str
        What is registered (used in messages: "estimator", "solver").
    package : str or None
        Dotted name of the package whose public modules register entries when imported (a
        subpackage may list further modules to import in its ``__registers__``); None: no
        discovery.
    """

    def __init__(self, kind: str, package: str | None):
        self.kind = kind
        self.package = package
        self._entries: dict[str, Any] = {}
        self._discovered = package is None
        # another thread waits for a discovery under way; the discovering thread's own
        # nested lookups (from the modules it imports) return at once
        self._discovery_lock = threading.RLock()
        self._discovering = False

    def register(self, name: str, obj: Any) -> None:
        """Register ``obj`` under ``name``; a second, different object is an error."""
        if not isinstance(name, str) or not name:
            raise RegistryError(f"a {self.kind} name must be a non-empty string, got {name!r}")
        old = self._entries.get(name)
        if old is not None and old is not obj and _qualname(old) != _qualname(obj):
            raise RegistryError(
                f"{self.kind} {name!r} is registered twice ({_qualname(old)} and "
                f"{_qualname(obj)}); give the new one another name"
            )
        self._entries[name] = obj

    @contextlib.contextmanager
    def temporarily(self, name: str, obj: Any) -> Iterator[Any]:
        """Register ``obj`` under ``name`` for the duration of a ``with`` block only.

        For code that must be found by name while it runs but stay unknown to everything
        else (an example family used by some tests): on leaving the block the name is
        removed, or given back to the object it held before.

        Raises
        ------
        RegistryError
            ``name`` is taken by a different object (as :meth:`register`).

        Examples
        --------
        >>> reg = Registry("shape", package=None)
        >>> with reg.temporarily("square", 4) as obj:
        ...     reg.get("square") == obj
        True
        >>> "square" in reg
        False
        """
        had, old = name in self._entries, self._entries.get(name)
        self.register(name, obj)
        try:
            yield obj
        finally:
            if had:
                self._entries[name] = old
            else:
                self._entries.pop(name, None)

    def _discover(self) -> None:
        if self._discovered:
            return
        with self._discovery_lock:
            if self._discovered or self._discovering:
                return
            self._discovering = True
            try:
                pkg = importlib.import_module(self.package)
                for info in pkgutil.iter_modules(pkg.__path__):
                    if not info.name.startswith("_"):
                        module = importlib.import_module(f"{self.package}.{info.name}")
                        # a package names the modules that register its entries (its
                        # __init__ stays cheap to import: they are imported only here)
                        for name in getattr(module, "__registers__", ()):
                            importlib.import_module(name)
                self._discovered = True
            finally:
                self._discovering = False

    def get(self, name: str) -> Any:
        """The object registered under ``name``.

        Raises
        ------
        RegistryError
            Nothing is registered under ``name`` (the message lists the registered names).
        """
        if name not in self._entries:
            self._discover()
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise RegistryError(
                f"unknown {self.kind} {name!r}; registered: {self.names()}"
            ) from None

    def names(self) -> list[str]:
        """Sorted registered names (after discovery)."""
        self._discover()
        return sorted(self._entries)

    def items(self) -> Iterator[tuple[str, Any]]:
        """``(name, object)`` pairs, sorted by name (after discovery)."""
        for name in self.names():
            yield name, self._entries[name]

    def __contains__(self, name: object) -> bool:
        self._discover()
        return name in self._entries


def _qualname(obj: Any) -> str:
    target = obj if isinstance(obj, type) else type(obj)
    return f"{target.__module__}.{target.__qualname__}"


def lazy_exports(package: str, public: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) importing ``public`` names on first use.

    Parameters
    ----------
    package : str
        The package's dotted name (its ``__name__``).
    public : dict
        Name -> submodule (relative to ``package``) that defines it.

    Examples
    --------
    >>> getattr_ = lazy_exports("ooc_kernels.families.dsg", {"DSGRegressor": "estimators"})
    >>> getattr_("DSGRegressor").__name__
    'DSGRegressor'
    """

    def __getattr__(name: str) -> Any:
        if name in public:
            value = getattr(importlib.import_module(f"{package}.{public[name]}"), name)
            setattr(sys.modules[package], name, value)  # later lookups are plain reads
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
