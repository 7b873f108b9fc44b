"""The package's imports flow one way (the layers of docs/architecture.md) and form no circle.

Every ``import`` of every module is read from its source (module level and inside
functions).  A module may import only modules of its own layer or of the layers listed
before it, and no modules import each other in a circle (not even through imports inside
functions, where a circle such as estimators -> persistence -> checkpointing -> estimators
is easy to miss).  Importing the package, or the numba kernels, must stay cheap.
"""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ooc_kernels"

#: Layers in import order: a module may import its own layer and those before it.
LAYERS = [
    ("base", {"ooc_kernels.exceptions", "ooc_kernels._version", "ooc_kernels._seeds",
              "ooc_kernels._checks", "ooc_kernels._atomic", "ooc_kernels._blas",
              "ooc_kernels._params", "ooc_kernels._progress", "ooc_kernels._registry",
              "ooc_kernels._chunk_store", "ooc_kernels._checksums", "ooc_kernels._saved_fields",
              "ooc_kernels._untrusted", "ooc_kernels._config",
              "ooc_kernels._capabilities", "ooc_kernels._threads", "ooc_kernels._memory",
              "ooc_kernels._fsync", "ooc_kernels._moments", "ooc_kernels._paths",
              "ooc_kernels._path_lock", "ooc_kernels._output_owner",
              "ooc_kernels._store_meta", "ooc_kernels._folder_pin"}),
    ("_jit", {"ooc_kernels._jit"}),
    ("features", {"ooc_kernels.features"}),
    ("losses", {"ooc_kernels.losses"}),
    ("parallel", {"ooc_kernels.parallel"}),
    ("data", {"ooc_kernels.data"}),
    ("estimators", {"ooc_kernels.estimators"}),
    ("families", {"ooc_kernels.families"}),
    ("evaluation", {"ooc_kernels.evaluation"}),
    ("pipeline", {"ooc_kernels.pipeline"}),
    ("interfaces", {"ooc_kernels.cli", "ooc_kernels.testing"}),
]


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _layer(module: str) -> int:
    for index, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return index
    raise AssertionError(f"module {module} is in no layer: add it to LAYERS")


def _imports(module: str, path: Path) -> list[tuple[str, int, bool]]:
    """(imported ooc_kernels module, line, at module level) of every import in ``path``."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names = [prefix] + [f"{prefix}.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            if name == "ooc_kernels" or name.startswith("ooc_kernels."):
                found.append((name, node.lineno, id(node) in top_level))
    return found


def _resolve(name: str, modules: dict) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def test_every_import_goes_down_the_layers():
    modules = _modules()
    bad = []
    for module, path in sorted(modules.items()):
        if module == "ooc_kernels":  # the facade re-exports lazily from every layer
            continue
        mine = _layer(module)
        for name, line, _ in _imports(module, path):
            target = _resolve(name, modules)
            if target in (None, "ooc_kernels"):
                continue
            if _layer(target) > mine:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} "
                           f"({LAYERS[mine][0]}) imports {target} ({LAYERS[_layer(target)][0]})")
    assert not bad, "imports against the layer order:\n" + "\n".join(bad)


def _circles(modules: dict) -> list[list[str]]:
    """Circles of imports (module level or inside functions) between modules."""
    graph = {m: set() for m in modules}
    for module, path in modules.items():
        if module == "ooc_kernels":  # the lazy facade
            continue
        for name, _, _top in _imports(module, path):
            target = _resolve(name, modules)
            if target not in (None, module, "ooc_kernels"):
                # a package's own modules may import it back (its __init__ runs first)
                if not module.startswith(target + "."):
                    graph[module].add(target)
    state, stack, circles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                circles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return circles


def test_no_import_circle():
    circles = _circles(_modules())
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_checker_sees_a_violation(tmp_path):
    """The walker itself: a feature map importing a family's estimator is reported."""
    fake = tmp_path / "mod.py"
    fake.write_text("def f():\n    from ooc_kernels.families.dsg.estimators import DSGClassifier\n")
    name, line, top = _imports("ooc_kernels.features.fake", fake)[0]
    assert _resolve(name, _modules()) == "ooc_kernels.families.dsg.estimators"
    assert _layer("ooc_kernels.families.dsg.estimators") > _layer("ooc_kernels.features.fake")
    assert (line, top) == (2, False)


@pytest.mark.parametrize("statement, absent", [
    ("import ooc_kernels", ["dask", "numba", "xarray", "zarr", "sklearn", "intake"]),
    ("import ooc_kernels.families.dsg.kernels, ooc_kernels._jit.rows", ["dask", "xarray", "zarr"]),
    ("import ooc_kernels.families.dsg.solver", ["dask", "xarray", "zarr", "intake"]),
])
def test_imports_stay_cheap(statement, absent):
    code = (f"import sys; {statement}; "
            f"print([m for m in {absent!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]", f"{statement} imported {out.stdout.strip()}"


def test_the_attribute_the_integrity_guard_reads_is_the_schema_attribute():
    from ooc_kernels.data.integrity import WRITTEN_BY_LIBRARY_ATTR
    from ooc_kernels.data.schema import SCHEMA_VERSION_ATTR

    assert WRITTEN_BY_LIBRARY_ATTR == SCHEMA_VERSION_ATTR


FAMILIES = PACKAGE / "families"


def _family_of(module: str) -> str | None:
    """The family a module belongs to (``ooc_kernels.families.<name>...``), else None."""
    parts = module.split(".")
    if parts[:2] == ["ooc_kernels", "families"] and len(parts) > 2 and \
            (FAMILIES / parts[2]).is_dir():
        return parts[2]
    return None


def _public_names(family: str) -> set[str]:
    """The names a family's package exports (its ``__all__``, read from its source)."""
    tree = ast.parse((FAMILIES / family / "__init__.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id in ("__all__", "_PUBLIC") for t in node.targets):
            names |= {c.value for c in ast.walk(node.value)
                      if isinstance(c, ast.Constant) and isinstance(c.value, str)}
    return names


def _package_uses(module: str, path: Path, mine: str | None) -> list[str]:
    """Names of another family's package that are not among its exports: ``from
    ooc_kernels.families.<f> import _name``, and ``alias._name`` where ``alias`` is bound
    to the package (``import ooc_kernels.families.<f> as alias``, ``from
    ooc_kernels.families import <f>``)."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    aliases, bad = {}, []

    def family_package(name: str) -> str | None:
        family = _family_of(name)
        return family if family is not None and name.count(".") == 2 else None

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for a in node.names:
                if family_package(f"{prefix}.{a.name}"):  # the package bound to a name
                    aliases[a.asname or a.name] = family_package(f"{prefix}.{a.name}")
                    continue
                family = family_package(prefix)
                if family is None or family == mine or a.name == "*":
                    continue
                submodule = (FAMILIES / family / a.name).is_dir() or \
                    (FAMILIES / family / f"{a.name}.py").is_file()
                if not submodule and a.name not in _public_names(family):
                    bad.append(f"{path.name}:{node.lineno}: {module} imports {a.name} from "
                               f"{prefix}, which does not export it")
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname and family_package(a.name):
                    aliases[a.asname] = family_package(a.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            family = aliases.get(node.value.id)
            if family is not None and family != mine and \
                    node.attr not in _public_names(family):
                bad.append(f"{path.name}:{node.lineno}: {module} reads {node.value.id}."
                           f"{node.attr}, which {family} does not export")
    return bad


def _internal_uses(module: str, path: Path) -> list[str]:
    """The places where ``module`` imports or names another family's internals: any module
    of ``ooc_kernels.families.<name>`` below the family's package itself (imported, or
    named in a string or a docstring, with or without the leading ``ooc_kernels``), and
    any name of the family's package that the package does not export."""
    mine = _family_of(module)
    modules = _modules()
    bad = []
    for name, line, _ in _imports(module, path):
        name = _resolve(name, modules) or name  # "package.Name" is the package
        family = _family_of(name)
        if family is not None and family != mine and name.count(".") > 2:
            bad.append(f"{path.name}:{line}: {module} imports {name}")
    bad += _package_uses(module, path, mine)
    for line_no, text in enumerate(path.read_text().splitlines(), 1):
        for family in re.findall(r"(?<![\w-])families[./](\w+)[./]\w", text):
            if family != mine and (FAMILIES / family).is_dir():
                bad.append(f"{path.name}:{line_no}: {module} names {family}'s internals")
    return bad


def test_no_module_outside_a_family_names_its_internals():
    """Outside ``ooc_kernels/families/<name>/``, a family is reached through its package (the
    names it exports) or the registries, never through one of its modules."""
    families = [p.name for p in FAMILIES.iterdir() if (p / "__init__.py").is_file()]
    assert {"dsg", "dspdc"} <= set(families)
    bad = []
    for module, path in sorted(_modules().items()):
        bad += _internal_uses(module, path)
    assert not bad, "a family's internals named outside it:\n" + "\n".join(bad)


@pytest.mark.parametrize("source, module", [
    ("from ooc_kernels.families.dsg.solver import DSGAlgorithm\n", "ooc_kernels.evaluation"),
    ("def f():\n    import ooc_kernels.families.dspdc.kernels\n", "ooc_kernels.parallel.fake"),
    ("X = 'ooc_kernels.families.dsg.estimators'\n", "ooc_kernels.cli"),
    ("from ooc_kernels.families.dsg.kernels import dsg_predict\n",
     "ooc_kernels.families.dspdc.fake"),
    ("from ..dsg._common import DSGModelMixin\n", "ooc_kernels.families.pkawv.fake"),
    ("import importlib\nm = importlib.import_module('ooc_kernels.families.dspdc._work')\n",
     "ooc_kernels.estimators.fake"),
    ('"""Use ``families/dsg/_common.py``\'s mixin."""\n', "ooc_kernels.features.fake"),
    ('"""See :mod:`families.dspdc._work`."""\n', "ooc_kernels.cli"),
    ("from ooc_kernels.families.dsg import _PUBLIC\n", "ooc_kernels.evaluation"),
    ("from ooc_kernels.families import dsg\nx = dsg.solver\n", "ooc_kernels.pipeline"),
    ("import ooc_kernels.families.dspdc as d\nx = d._work\n", "ooc_kernels.families.dsg.fake"),
])
def test_the_family_rule_sees_a_violation(tmp_path, source, module):
    fake = tmp_path / "mod.py"
    fake.write_text(source)
    assert _internal_uses(module, fake)


@pytest.mark.parametrize("source, module", [
    ("from ooc_kernels.families.dsg import DSGClassifier\n", "ooc_kernels.evaluation"),
    ("from ooc_kernels.families.dsg.kernels import dsg_predict\n",
     "ooc_kernels.families.dsg.solver"),
    ("from ooc_kernels.families import SOLVERS\n", "ooc_kernels.testing._algorithms"),
    ("from ooc_kernels.families import dsg\nx = dsg.DSGRegressor\n", "ooc_kernels.pipeline"),
    ("import ooc_kernels.families.pkawv as p\nx = p.OnlineKernelRidge\n", "ooc_kernels.cli"),
    ('"""Each family: ``families/<name>/solver.py``."""\n', "ooc_kernels.estimators.fake"),
])
def test_the_family_rule_allows_a_family_package_and_its_own_modules(tmp_path, source, module):
    fake = tmp_path / "mod.py"
    fake.write_text(source)
    assert _internal_uses(module, fake) == []
