"""Sphinx configuration of the API reference (``docs/sphinx``).

Build it from the repository root::

    python -m sphinx -b html -W --keep-going docs/sphinx docs/_build/html

Nothing in the reference is written by hand except ``index.rst`` and ``cli.rst``: when the
builder starts, :func:`write_api_pages` writes ``generated/*.rst`` from what the package holds
*now*:

- the public modules, found with :func:`pkgutil.walk_packages` (a module or package whose
  dotted name has a component starting with ``_`` is private and skipped), so a module that
  is added, renamed or removed needs no edit here;
- the estimator classes, listed by the estimator registry
  (:func:`ooc_kernels.estimators.available_estimators`), so a new family appears by itself;
- the top-level names, from ``ooc_kernels.__all__``.

Every object is documented once, in the module that defines it (or, for a name defined in a
private module, in the public package that exports it); a package page links to the names it
re-exports from its public submodules.  Estimator classes are documented on the estimator
page under their top-level names (``ooc_kernels.DSGClassifier``).

Docstrings are parsed by numpydoc; a parse problem that numpydoc only reports as a Python
warning (an unknown section, say) is turned into a Sphinx warning, so ``-W`` fails on it.
Nothing is downloaded: intersphinx is not used.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import warnings
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parents[1]
if (_ROOT / "ooc_kernels" / "__init__.py").is_file():  # a checkout: document this tree
    sys.path.insert(0, str(_ROOT))

import ooc_kernels  # noqa: E402

PACKAGE = "ooc_kernels"
GENERATED = "generated"  # under the source directory; rewritten at every build

# -- project ------------------------------------------------------------------------------
project = "ooc_kernels"
author = "ooc_kernels developers"
copyright = "ooc_kernels developers"
release = ooc_kernels.__version__
version = ".".join(release.split(".")[:2])

# -- general ------------------------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx_click",
]
root_doc = "index"
exclude_patterns = ["_build"]
templates_path: list[str] = []
default_role = "obj"  # `name` in a docstring is a cross-reference, as in NumPy's docs
# Not nitpicky by default (intersphinx is off, so every numpy/dask/xarray type in a
# signature would be a broken link).  `-n` checks the package's own cross-references: the
# patterns below leave out external targets and private ones.
nitpicky = False
nitpick_ignore_regex = [
    (r"py:.*", r"(?!ooc_kernels\.)\w+\..*"),  # dotted, outside the package
    (r"py:.*", r".*(^|\.)_[^.]*(\..*)?"),  # private (a component starting with _)
    (r"py:.*", r".*\s.*"),  # not a Python name (`ooc-kernels run` and the like)
]

# -- autodoc / autosummary ----------------------------------------------------------------
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autodoc_default_options = {"show-inheritance": True}
autosummary_generate = False  # the pages are written by write_api_pages, not by autosummary

# -- numpydoc -----------------------------------------------------------------------------
numpydoc_show_class_members = False  # autodoc documents the members
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True

# -- html ---------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"ooc_kernels {release} API reference"
html_static_path: list[str] = []
html_show_sourcelink = False


# -- the generated pages ------------------------------------------------------------------
def _is_private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def public_modules() -> list[str]:
    """Dotted names of the package's public modules and subpackages, sorted."""
    names = {PACKAGE}
    # onerror: a package that fails to import is still listed, and autodoc then reports
    # the import error as a warning (an error with -W) instead of it vanishing silently
    for info in pkgutil.walk_packages(ooc_kernels.__path__, PACKAGE + ".",
                                      onerror=lambda n: None):
        if not _is_private(info.name):
            names.add(info.name)
    return sorted(names)


def _exported(module) -> dict[str, object]:
    """The names autodoc documents for ``module`` (its ``__all__``, else what it defines)."""
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, obj in vars(module).items() if not n.startswith("_")
                 and getattr(obj, "__module__", None) == module.__name__]
    out = {}
    for name in names:
        try:
            out[name] = getattr(module, name)
        except AttributeError:
            continue  # autodoc reports a broken __all__ itself
    return out


def _estimator_classes() -> dict[str, type]:
    """The registered estimator classes by name; {} (and a warning) if the registry fails."""
    try:
        from ooc_kernels.estimators import available_estimators, get_estimator

        return {name: get_estimator(name) for name in available_estimators()}
    except Exception as err:  # noqa: BLE001 - reported as a warning: an error with -W
        _logger().warning("the estimator registry could not be read: %s: %s",
                          type(err).__name__, err, type="ooc_kernels")
        return {}


def _logger():
    from sphinx.util import logging

    return logging.getLogger(__name__)


def _home(name: str, obj, module_name: str, modules: dict) -> str | None:
    """The public module, other than ``module_name``, that documents ``obj``; None: none."""
    candidates = []
    defined = getattr(obj, "__module__", None)
    if isinstance(defined, str) and defined != module_name and defined in modules:
        candidates.append(defined)
    # constants have no __module__: look for them in the public submodules
    candidates += [m for m in modules if m.startswith(module_name + ".")]
    for other in candidates:
        mod = modules[other]
        if mod is not None and _exported(mod).get(name, _MISSING) is obj:
            return other
    return None


_MISSING = object()


def _title(text: str, char: str = "=") -> list[str]:
    return [text, char * len(text), ""]


def _module_page(name: str, module, modules: dict, estimators: dict[str, type]) -> str:
    lines = _title(f"``{name}``")
    if module is None:  # failed to import: let autodoc report it
        return "\n".join(lines + [f".. automodule:: {name}", ""])
    exclude, estimator_links, links = [], [], []
    estimator_ids = {id(cls) for cls in estimators.values()}
    for member, obj in _exported(module).items():
        if id(obj) in estimator_ids:
            exclude.append(member)
            estimator_links.append(f"- :class:`~{PACKAGE}.{obj.__name__}`")
            continue
        home = _home(member, obj, name, modules)
        if home is not None:
            exclude.append(member)
            links.append(f"- :obj:`~{home}.{member}` (from :mod:`{home}`)")
    lines += [f".. automodule:: {name}", "   :members:"]
    if exclude:
        lines.append(f"   :exclude-members: {', '.join(exclude)}")
    lines.append("")
    if estimator_links:
        lines += [".. rubric:: Estimator classes", "",
                  "Documented on :doc:`estimators`:", ""] + estimator_links + [""]
    if links:
        lines += [".. rubric:: Re-exported names", ""] + links + [""]
    subs = [m for m in modules if m.startswith(name + ".") and "." not in m[len(name) + 1:]]
    if subs:
        lines += [".. rubric:: Submodules", ""] + [f"- :mod:`{m}`" for m in subs] + [""]
    return "\n".join(lines)


def _top_level_page(estimators: dict[str, type]) -> str:
    lines = _title(f"Top level: ``{PACKAGE}``")
    lines += [f".. automodule:: {PACKAGE}", "   :no-members:", ""]
    lines += ["The names below are imported on first use; the estimator classes are listed on",
              ":doc:`estimators`.", ""]
    listed = [n for n in ooc_kernels.__all__ if n in estimators]
    if listed:  # documented once, on the estimators page
        lines += [".. rubric:: Estimators", ""]
        lines += [f"- :class:`{PACKAGE}.{n}`" for n in listed] + [""]
    for name in ooc_kernels.__all__:
        if name.startswith("__") or name in estimators:
            continue
        obj = getattr(ooc_kernels, name)
        directive = "autoexception" if inspect.isclass(obj) and issubclass(obj, BaseException) \
            else "autoclass" if inspect.isclass(obj) else "autofunction" if callable(obj) \
            else "autodata"
        lines += [f".. {directive}:: {PACKAGE}.{name}", ""]
    return "\n".join(lines)


def _estimators_page(estimators: dict[str, type]) -> str:
    lines = _title("Estimators")
    lines += ["The estimator classes of the estimator registry, as listed by",
              ":func:`ooc_kernels.estimators.available_estimators` when this page was built.",
              "Each is importable from the top level (``from ooc_kernels import DSGClassifier``).",
              ""]
    lines += [".. autosummary::", ""] + [f"   ~{PACKAGE}.{n}" for n in estimators] + [""]
    for name, cls in estimators.items():
        # inherited members too (fit, predict ... come from the base classes); those of
        # scikit-learn's classes are dropped by _skip_foreign_member
        lines += [f".. autoclass:: {PACKAGE}.{name}", "   :members:", "   :inherited-members:", "",
                  f"   Defined in :mod:`{cls.__module__}`.", ""]
    return "\n".join(lines)


def _modules_page(modules: dict) -> str:
    lines = _title("Modules")
    lines += ["Every public module of the package (found when this page was built).", ""]
    lines += [".. toctree::", "   :maxdepth: 1", ""]
    lines += [f"   {m}" for m in modules if m != PACKAGE] + [""]
    return "\n".join(lines)


def write_api_pages(app) -> None:
    """Write ``generated/*.rst`` under the source directory (``builder-inited``)."""
    out = Path(app.srcdir) / GENERATED
    out.mkdir(exist_ok=True)
    modules = {}
    for name in public_modules():
        try:
            modules[name] = importlib.import_module(name)
        except Exception as err:  # noqa: BLE001 - autodoc reports it again, with the traceback
            _logger().warning("module %s failed to import: %s: %s", name,
                              type(err).__name__, err, type="ooc_kernels")
            modules[name] = None
    estimators = _estimator_classes()
    pages = {"ooc_kernels": _top_level_page(estimators),
             "estimators": _estimators_page(estimators),
             "modules": _modules_page(modules)}
    for name, module in modules.items():
        if name != PACKAGE:
            pages[name] = _module_page(name, module, modules, estimators)
    for old in out.glob("*.rst"):  # pages of modules that no longer exist
        if old.stem not in pages:
            old.unlink()
    for name, text in pages.items():
        path = out / f"{name}.rst"
        if not path.is_file() or path.read_text() != text:  # keep incremental builds cheap
            path.write_text(text)


# -- numpydoc parse problems as Sphinx warnings ---------------------------------------------
def _check_numpydoc(app, what, name, obj, options, lines) -> None:
    """Re-parse the docstring and report numpydoc's Python warnings as Sphinx warnings.

    Module docstrings are plain reStructuredText (numpydoc leaves them alone), so only the
    docstrings of functions, classes and their members are checked.
    """
    if what == "module":
        return
    from numpydoc.docscrape import NumpyDocString

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            NumpyDocString("\n".join(lines))
        except Exception as err:  # noqa: BLE001 - numpydoc itself raises it again
            caught.append(warnings.WarningMessage(str(err), UserWarning, "", 0))
    if not caught:
        return
    try:
        source = inspect.getsourcefile(inspect.unwrap(obj)) or "?"
    except (TypeError, OSError):
        source = "?"
    for w in caught:
        _logger().warning("numpydoc cannot parse the docstring of %s (%s): %s", name, source,
                          w.message, location=app.env.docname, type="numpydoc")


# -- members: the package's own code only ---------------------------------------------------
def _skip_foreign_member(app, what, name, obj, skip, options):
    """Skip class members that scikit-learn adds (metadata routing, ``get_params`` ...).

    Their docstrings refer to scikit-learn's own labels and glossary, which are undefined
    here; the reference documents this package's code only.
    """
    if what not in ("class", "exception"):
        return None
    target = obj.fget if isinstance(obj, property) and obj.fget is not None else obj
    module = getattr(target, "__module__", None)
    if isinstance(module, str) and not module.startswith(PACKAGE):
        return True
    return None


# -- cross-references through the package's namespaces -------------------------------------
def _import_dotted(dotted: str):
    """The object named ``dotted`` (a name under the package only); _MISSING: none."""
    if dotted != PACKAGE and not dotted.startswith(PACKAGE + "."):
        return _MISSING
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return _MISSING
        return obj
    return _MISSING


_SHORT_INDEX: dict[int, tuple[int, dict[str, list[str]]]] = {}


def _documented_as(domain, obj, short: str) -> tuple[str, object] | None:
    """A documented full name of ``obj`` and its entry (objects are matched by identity)."""
    if inspect.ismodule(obj):
        entry = domain.modules.get(obj.__name__)
        return (obj.__name__, entry) if entry is not None else None
    objects = domain.objects
    size, index = _SHORT_INDEX.get(id(objects), (-1, {}))
    if size != len(objects):
        index = {}
        for fullname in objects:
            index.setdefault(fullname.rsplit(".", 1)[-1], []).append(fullname)
        _SHORT_INDEX[id(objects)] = (len(objects), index)
    for fullname in index.get(short, []):
        entry = objects[fullname]
        if not getattr(entry, "aliased", False) and _import_dotted(fullname) is obj:
            return fullname, entry
    return None


def _resolve_through_namespaces(app, env, node, contnode):
    """Resolve a Python cross-reference Sphinx could not find by importing its target.

    A docstring may name an object by the name it has where the docstring is (an exception
    imported into the module, ``ooc_kernels.data.write_chunks`` re-exported by a package);
    the target is looked up in the referring module's namespace and linked to where that
    object is documented.  Targets outside the package are left alone.
    """
    if node.get("refdomain") != "py":
        return None
    target = node.get("reftarget", "")
    if not target or " " in target:
        return None
    target = target.lstrip(".~")
    modname, clsname = node.get("py:module"), node.get("py:class")
    candidates = [target]
    if modname:
        candidates.insert(0, f"{modname}.{target}")
        if clsname:
            candidates.insert(0, f"{modname}.{clsname}.{target}")
    try:
        from sphinx.util.nodes import make_refnode

        domain = env.get_domain("py")
        for candidate in candidates:
            obj = _import_dotted(candidate)
            if obj is _MISSING:
                continue
            found = _documented_as(domain, obj, target.rsplit(".", 1)[-1])
            if found is None:
                return None
            fullname, entry = found
            return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id,
                                contnode, fullname)
    except Exception:  # noqa: BLE001 - an unresolved link is never worth a failed build
        return None
    return None


def setup(app):
    app.connect("builder-inited", write_api_pages)
    app.connect("autodoc-skip-member", _skip_foreign_member)
    app.connect("missing-reference", _resolve_through_namespaces)
    app.connect("autodoc-process-docstring", _check_numpydoc, priority=100)  # before numpydoc
    return {"parallel_read_safe": True, "parallel_write_safe": True}
