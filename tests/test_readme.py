"""The README's code blocks run one after another, as written, on a fresh copy of the repo.

The test extracts every fenced ``bash`` and ``python`` block of README.md, in order, and runs
it in a temporary folder laid out like a fresh clone (README, ``pipelines/``,
``catalogs/examples.yaml``, no data).  It runs the README's own text, changed only by:

* ``SUBSTITUTIONS`` (below): smaller sample counts and features, so it takes seconds, and no
  virtual environment creation or ``pip install`` (the test runs in the already installed
  environment, linked as ``.venv``).  The same size substitutions are applied to the copy of
  ``pipelines/quickstart.yaml`` so the README's datasets match the main job's, as they do
  at full size.  Each substitution must apply at least once, so a README that changes
  under it makes this test fail instead of silently running something else.
* ``SKIPPED``: the exact blocks and lines that are not run, each with the reason (the test
  suite itself; remote schedulers).  Each must be present in the README.

Everything else must exit with status 0, so a README step that breaks fails this test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: ``(pattern, replacement, why)``, applied with ``re.sub`` to every block that is run and to
#: the copy of pipelines/quickstart.yaml.  Counts must stay equal between the README's
#: Python example, its ``data make`` line and the quickstart pipeline (``exist_ok``).
SUBSTITUTIONS = [
    (r"python3 -m venv \.venv && \.venv/bin/pip install (\.|\"\.\[test\]\") && ", "",
     "the environment is already installed (no network, no time for pip)"),
    (r"\b200_?000\b", "1500", "200,000 training samples -> 1,500"),
    (r"\b20_?000\b", "300", "20,000 test samples -> 300"),
    (r"\b8192\b", "512", "8,192 random features -> 512"),
]

#: Blocks (by the line that follows their README marker) and lines not run, with why.
SKIPPED = {
    "<!-- test-command -->": "the test suite itself (this test is part of it)",
    "ooc-kernels run pipelines/quickstart.yaml --data-root . --scheduler tcp://scheduler:8786":
        "needs a remote Dask scheduler (tcp://)",
    "ooc-kernels run pipelines/quickstart.yaml --data-root . --scheduler tls://scheduler:8786 \\\n"
    "    --tls-ca-file ca.pem --tls-cert client.pem --tls-key client-key.pem":
        "needs a remote Dask scheduler with TLS certificates (tls://)",
}

_FENCE = re.compile(r"(<!--[^\n]*-->\n)?```(bash|python)\n(.*?)```", re.DOTALL)


def readme_blocks(text: str) -> list[tuple[str, str]]:
    """``(language, code)`` of every fenced bash/python block not skipped, in order."""
    blocks = []
    for marker, language, code in _FENCE.findall(text):
        if marker.strip() in SKIPPED:
            continue
        for line in SKIPPED:
            code = code.replace(line + "\n", "")
        blocks.append((language, code))
    return blocks


def _substitute(text: str, used: dict) -> str:
    for pattern, replacement, _ in SUBSTITUTIONS:
        text, n = re.subn(pattern, replacement, text)
        used[pattern] += n
    return text


def test_skipped_parts_and_substitutions_are_in_the_readme():
    text = README.read_text()
    for part in SKIPPED:
        assert part in text, f"SKIPPED names {part!r}, which the README no longer has"
    remaining = "".join(code for _, code in readme_blocks(text))
    assert "tcp://" not in remaining and "tls://" not in remaining


def test_readme_runs_in_order_on_a_fresh_copy(tmp_path):
    text = README.read_text()
    repo = tmp_path / "clone"
    repo.mkdir()
    shutil.copy(README, repo / "README.md")
    shutil.copytree(ROOT / "pipelines", repo / "pipelines")
    (repo / "catalogs").mkdir()
    shutil.copy(ROOT / "catalogs" / "examples.yaml", repo / "catalogs" / "examples.yaml")
    (repo / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    used = {pattern: 0 for pattern, _, _ in SUBSTITUTIONS}
    quickstart = repo / "pipelines" / "quickstart.yaml"
    quickstart.write_text(_substitute(quickstart.read_text(), used))

    env = {k: v for k, v in os.environ.items() if not k.startswith("OOC_KERNELS")}
    env.update(OOC_KERNELS_PROGRESS="0",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]))
    blocks = readme_blocks(text)
    assert [language for language, _ in blocks] == ["bash", "python", "bash"]
    for i, (language, code) in enumerate(blocks):
        code = _substitute(code, used)
        command = (["bash", "-e", "-o", "pipefail", "-c", code] if language == "bash"
                   else [sys.executable, "-c", code])
        done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, (
            f"README block {i} ({language}) failed with status {done.returncode}:\n{code}\n"
            f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}")
    unused = [pattern for pattern, n in used.items() if n == 0]
    assert not unused, f"substitutions that no longer match the README: {unused}"

    # what the steps promise is there
    for path in ("outputs/quickstart/model.zarr", "outputs/quickstart/metrics.json",
                 "catalogs/data/digits_deformed.zarr", "catalogs/data/digits_deformed_test.zarr",
                 "runs/digits.ckpt.zarr", "models/digits.zarr", "catalogs/mine.yaml",
                 "runs/d.ckpt.zarr", "models/d.zarr", "preds.zarr"):
        assert (repo / path).exists(), path
    import ooc_kernels as ok

    assert ok.open_dataset(repo / "catalogs" / "examples.yaml",
                           "digits_deformed").sizes["sample"] == 1500
    # the train line's -p values reach the model (3 epochs, the size after substitution)
    model = ok.load(repo / "models" / "d.zarr")
    assert model.get_params()["max_iter"] == 3 and model.get_params()["n_features"] == 512
    # the Python example trains the main job's model (its comment quotes the main job's
    # score): the same test accuracy, to the last digit, and the numbers the benchmarks
    # page quotes for these sizes (tests/test_doc_numbers.py)
    import json

    example = ok.load(repo / "models" / "digits.zarr")
    main_job = json.loads((repo / "outputs" / "quickstart" / "metrics.json").read_text())
    test = ok.open_dataset(repo / "catalogs" / "examples.yaml", "digits_deformed_test")
    assert example.score(test) == main_job["test_accuracy"]
    assert f"test accuracy **{main_job['test_accuracy']:.4f}**" in \
        (ROOT / "docs" / "benchmarks.md").read_text()


if __name__ == "__main__":  # pragma: no cover - print what would run
    for language, code in readme_blocks(README.read_text()):
        print(f"--- {language}\n{code}")
    sys.exit(pytest.main([__file__]))
