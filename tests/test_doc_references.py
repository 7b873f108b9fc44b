"""What the Markdown guides name exists: exceptions, environment variables, links and anchors.

The guides (``README.md`` and ``docs/**/*.md``) are read as a newcomer reads them: every
``...Error``/``...Warning`` they name is a class of the library, of Python or of the
dependency the page names; every ``OOC_KERNELS_*`` variable is one the package reads and
every ``DASK_OOC_KERNELS__*`` variable sets a registered ``ooc-kernels.*`` key; every
relative link leads to a file and every ``#anchor`` to a heading of the target page (GitHub's
anchor rules).  ``docs/bad_input.md`` draws the library's exception hierarchy: it has every
class of :mod:`ooc_kernels.exceptions`, each under its real parent.  Every citation of a
paper's specification (``docs/specs``) in the guides, docstrings, comments, benchmarks and
tests names a file that is there, by its repository path, and every section, table row or
pitfall it cites exists in that file; the specifications' own ``§`` references resolve.
Text only, no fit.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import re
from pathlib import Path

import pytest

from ooc_kernels import exceptions

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PACKAGE_SOURCE = "\n".join(p.read_text() for p in (ROOT / "ooc_kernels").rglob("*.py"))

#: Exceptions and warnings of dependencies that the guides name, with their module.
FOREIGN = {
    "ConvergenceWarning": "sklearn.exceptions",
    "ParserError": "yaml.parser",
    "JSONDecodeError": "json",
    "GroupNotFoundError": "zarr.errors",
    "FutureCancelledError": "distributed.client",
}


def _library_classes() -> dict[str, type]:
    return {name: obj for name, obj in vars(exceptions).items()
            if inspect.isclass(obj) and obj.__module__ == exceptions.__name__
            and issubclass(obj, (exceptions.OocKernelsError, exceptions.OocKernelsWarning))}


def _outside_code(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)


def test_every_exception_class_is_exported():
    assert set(_library_classes()) == set(exceptions.__all__)


def test_bad_input_draws_the_whole_hierarchy_with_each_class_under_its_parent():
    text = (ROOT / "docs" / "bad_input.md").read_text()
    tree = re.search(r"^```\n(OocKernelsError\n.*?)^```", text, re.M | re.S)
    assert tree, "docs/bad_input.md no longer draws the hierarchy in a code block"
    stack: list[tuple[int, str]] = []   # (column of the name, name) of the open branches
    parents: dict[str, str | None] = {}
    builtin_bases: dict[str, str] = {}
    for line in tree.group(1).splitlines():
        found = re.search(r"([A-Z]\w+(?:Error|Warning))(?: \((\w+)\))?", line)
        if not found or (found.start() and not line[:found.start()].endswith("── ")):
            continue   # a description's continuation line
        col, name = found.start(), found.group(1)
        while stack and stack[-1][0] >= col:
            stack.pop()
        parents[name] = stack[-1][1] if stack else None
        stack.append((col, name))
        if found.group(2):
            builtin_bases[name] = found.group(2)
    classes = _library_classes()
    assert set(parents) == set(classes), sorted(set(classes) ^ set(parents))
    for name, parent in parents.items():
        own = [b.__name__ for b in classes[name].__bases__ if b.__name__ in classes]
        assert (own[0] if own else None) == parent, (name, parent, own)
    for name, base in builtin_bases.items():
        assert getattr(builtins, base) in classes[name].__mro__, (name, base)


def test_every_exception_the_guides_name_exists():
    for page in PAGES:
        for name in set(re.findall(r"\b[A-Z][A-Za-z]+(?:Error|Warning)\b", page.read_text())):
            if hasattr(exceptions, name) or isinstance(getattr(builtins, name, None), type):
                continue
            assert name in FOREIGN, f"{page.relative_to(ROOT)} names {name}: no such class"
            assert hasattr(importlib.import_module(FOREIGN[name]), name), name


def test_every_environment_variable_the_guides_name_is_read():
    import dask

    from ooc_kernels._config import register_defaults

    register_defaults()   # what importing the library's Dask layer does

    for page in PAGES:
        text = page.read_text()
        for name in set(re.findall(r"(?<![A-Z_])OOC_KERNELS_[A-Z_]+[A-Z]", text)):
            assert f'"{name}"' in PACKAGE_SOURCE, f"{page.relative_to(ROOT)}: {name} unread"
        for name in set(re.findall(r"DASK_OOC_KERNELS__[A-Z_]+[A-Z]", text)):
            key = "ooc-kernels." + name[len("DASK_OOC_KERNELS__"):].lower().replace("__", ".")
            assert dask.config.get(key, default=None) is not None, (page.name, name, key)


def _slug(heading: str) -> str:
    heading = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return heading.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set(re.findall(r'<a (?:name|id)="([^"]+)"', page.read_text()))
    for heading in re.findall(r"^#+\s+(.*)$", _outside_code(page.read_text()), re.M):
        slug = _slug(heading)
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


#: TeX math, ``$$...$$`` or ``$...$`` on one line: ``[a](b)`` inside it is not a link.
MATH = re.compile(r"\$\$.*?\$\$|(?<![\\$\w])\$(?![\s$])[^$\n]+?(?<![\s\\])\$(?!\w)", re.S)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_lead_to_files_and_headings(page):
    text = MATH.sub("", _outside_code(page.read_text()))
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.relative_to(ROOT)} links to {target}: no such file"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), (
                f"{page.relative_to(ROOT)} links to {target}: no such heading in {dest.name}")


# -- citations of the papers' specifications (docs/specs) ----------------------------------
SPECS = ROOT / "docs" / "specs"
#: Where specifications are cited: the guides, the package, the benchmarks and the tests.
CITING = [ROOT / "README.md",
          *(p for p in sorted((ROOT / "docs").rglob("*.md")) if p.parent != SPECS),
          *(p for d in ("ooc_kernels", "benchmarks", "tests")
            for p in sorted((ROOT / d).rglob("*.py")))]
#: A path that ends in ``specs/<name>.md``.
CITATION = re.compile(r"[\w./-]*specs/(\w+)\.md")
#: One cited place: a section (``§2.4``, ``section 2.4``, a bare ``2.4``), a table row
#: (``row 6.1a``, or any number with a letter), a numbered pitfall (``pitfall 13``) or a
#: labelled one (``P14``, ``Q4``).
_REF = (r"(?:§\s*|sections?\s+|pitfalls?\s+|(?:table\s+)?rows?\s+)?"
        r"(?:\d+(?:\.\d+)*[a-z]?|[PQ]\d+)\b")
_SEP = r"(?:\s*,\s*(?:and\s+)?|\s+and\s+|\s*[-–]\s*|\s+to\s+|\s+\()"
#: A place cited in "the spec" without naming the file (``spec 2.4``, ``the spec's P14``).
UNNAMED = re.compile(r"\bspec(?:'s)?\s+(?:§\s*|sections?\s+|pitfall\s+|table\s+)?(?:\d|[PQ]\d)",
                     re.I)
#: What follows a citation: closing backticks or a Markdown link target, then the places.
_CITED = re.compile(rf"(?:`+|\]\([^)\s]*\))*\s*(?:,\s*)?({_REF}(?:{_SEP}{_REF})*)")


def _spec_places(name: str) -> dict[str, set[str]]:
    """The citable places of ``docs/specs/<name>.md``: heading numbers, table rows, pitfalls."""
    text = _outside_code((SPECS / f"{name}.md").read_text())
    headings = set(re.findall(r"^#+\s+(\d+(?:\.\d+)*)\.?\s", text, re.M))
    rows = set(re.findall(r"^\|\s*(\d+(?:\.\d+)*[a-z]?)\b", text, re.M))
    labels = set(re.findall(r"^\s*[-*]\s+\*\*([PQ]\d+)\b", text, re.M))
    numbered: set[str] = set()
    pitfalls = re.search(r"^#+\s+[\d.]*\s*Pitfalls.*?(?=^#+\s|\Z)", text, re.M | re.S)
    if pitfalls:
        numbered = set(re.findall(r"^(\d+)\.\s", pitfalls.group(0), re.M))
    return {"section": headings, "row": rows, "label": labels, "pitfall": numbered}


def _check_places(cited: str, places: dict[str, set[str]]) -> list[str]:
    """The places of ``cited`` (one list of references) that the specification lacks.

    A bare number is of the kind the last keyword named: ``rows 6.2, 6.3`` are two rows.
    """
    missing, named = [], "section"
    for ref in re.finditer(_REF, cited):
        token = ref.group(0)
        value = re.search(r"(\d+(?:\.\d+)*[a-z]?|[PQ]\d+)\b$", token).group(1)
        if re.match(r"pitfall", token):
            named = "pitfall"
        elif re.match(r"(?:table\s+)?rows?\b", token):
            named = "row"
        elif re.match(r"§|section", token):
            named = "section"
        if re.match(r"[PQ]\d", value):
            kind = "label"
        elif value[-1].isalpha():
            kind = "row"
        else:
            kind = named
        if value not in places[kind]:
            missing.append(f"{kind} {value}")
    return missing


def _citations(path: Path):
    """``(line, path as written, is a link target, spec name, cited places)`` of a file."""
    text = path.read_text()
    for found in CITATION.finditer(text):
        line = text.count("\n", 0, found.start()) + 1
        link = text[max(0, found.start() - 2):found.start()] == "]("
        after = _CITED.match(text, found.end())
        yield line, found.group(0), link, found.group(1), after.group(1) if after else ""


def test_no_guide_or_module_cites_a_file_outside_the_repository():
    """A clone holds everything the docs and docstrings cite: no ``../shared/...`` design
    file or specification."""
    outside = re.compile(r"\.\./shared/|shared/(?:DESIGN|STYLE)\.md")
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "ooc_kernels").rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]
    found = [f"{f.relative_to(ROOT)}:{f.read_text().count(chr(10), 0, m.start()) + 1}"
             for f in files for m in outside.finditer(f.read_text())]
    assert not found, found


def test_the_specifications_are_in_the_repository():
    assert {p.name for p in SPECS.glob("*.md")} >= {
        "README.md", "dsg.md", "dsg_old_coords.md", "dspdc.md", "pkawv.md"}


def test_every_specification_citation_names_a_file_and_sections_that_exist():
    """``docs/specs/<name>.md`` as written (a Markdown link: its target from the page)."""
    problems, count = [], 0
    for path in CITING:
        if path == Path(__file__).resolve():
            continue
        for line, written, link, name, cited in _citations(path):
            count += 1
            where = f"{path.relative_to(ROOT)}:{line}: {written}"
            target = (path.parent / written).resolve() if link else ROOT / written
            if target != SPECS / f"{name}.md" or not target.is_file():
                problems.append(f"{where} is not the repository path docs/specs/{name}.md"
                                + (" (from this page)" if link else ""))
                continue
            for place in _check_places(cited, _spec_places(name)):
                problems.append(f"{where} cites {place}: no such place in it")
        for found in UNNAMED.finditer(path.read_text()):
            problems.append(f"{path.relative_to(ROOT)}: {found.group(0)!r} names no file: "
                            "cite docs/specs/<name>.md")
    assert count > 40, f"only {count} citations found: is the pattern still right?"
    assert not problems, "\n".join(problems)


#: ``§N.M`` of a specification that names a section of the paper, not of itself.
_PAPER_SECTION = re.compile(r"(?:\[[AB]\]'?s?|paper(?:'s)?)\s+$")


@pytest.mark.parametrize("name", ["dsg", "dsg_old_coords", "dspdc", "pkawv"])
def test_the_references_inside_a_specification_resolve(name):
    """A bare ``§N.M`` (and a range ``§N.M–N.K``) is a heading of the same file; a section
    of the paper is written ``[A] §4``, ``paper §4.1``; ``pitfall P5`` is a labelled pitfall."""
    text = (SPECS / f"{name}.md").read_text()
    places = _spec_places(name)
    missing = []
    for ref in re.finditer(r"§\s*(\d+(?:\.\d+)*)(?:\s*[–-]\s*(\d+(?:\.\d+)*))?", text):
        if _PAPER_SECTION.search(text[max(0, ref.start() - 12):ref.start()]):
            continue
        missing += [n for n in ref.groups() if n and n not in places["section"]]
    for label in re.findall(r"(?:pitfalls?\s+|see\s+|\()([PQ]\d+)\b", text):
        if label not in places["label"]:
            missing.append(label)
    assert not missing, f"docs/specs/{name}.md refers to {missing}: not in it"


def _docstring_yaml(doc: str) -> dict:
    import textwrap

    import yaml

    after = doc.split("Example (``pipelines/quickstart.yaml``)::\n", 1)[1]
    block = after.strip("\n").split("\n\n", 1)[0]   # the literal block, up to a blank line
    return yaml.safe_load(textwrap.dedent(block))


def test_the_pipeline_module_shows_the_quickstart_file_as_it_is():
    import yaml

    from ooc_kernels import pipeline

    shown = _docstring_yaml(pipeline.__doc__)
    assert shown == yaml.safe_load((ROOT / "pipelines" / "quickstart.yaml").read_text())


def _readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_chooser_names_every_registered_estimator():
    from ooc_kernels.estimators import available_estimators

    section = _readme_section("Which estimator")
    for name in available_estimators():
        assert f"`ok.{name}`" in section, name


def test_the_readme_names_every_key_of_a_pipeline_file_with_its_default():
    from ooc_kernels.pipeline import PipelineSpec

    section = _readme_section("Which estimator")
    pipeline = section[section.index("A pipeline file"):]
    for stage, field in PipelineSpec.model_fields.items():
        assert f"`{stage}`" in pipeline, stage
        inner = getattr(field.annotation, "model_fields", {})
        for key, sub in inner.items():
            if sub.is_required() or key == "generate":
                assert f"`{key}`" in pipeline, f"{stage}.{key}"
            elif isinstance(sub.default, bool):
                assert f"`{key}: {str(sub.default).lower()}`" in pipeline, f"{stage}.{key}"
            elif isinstance(sub.default, (int, str)):
                shown = (f"`{key}: {sub.default}`", f"`{sub.default}`")
                assert any(s in pipeline for s in shown), f"{stage}.{key} = {sub.default!r}"


def test_the_kernel_benchmark_script_of_dsg_kernels_md_runs(tmp_path):
    import subprocess
    import sys

    text = (ROOT / "docs" / "algorithms" / "dsg_kernels.md").read_text()
    after = text.split("Save it as `bench_dsg.py`", 1)[1]
    script = re.search(r"```python\n(.*?)```", after, re.S).group(1)
    (tmp_path / "bench_dsg.py").write_text(script)
    run = subprocess.run([sys.executable, "bench_dsg.py", "256", "8", "64", "64", "1"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "chunk_update ratio" in run.stdout
