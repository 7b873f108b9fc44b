"""The BSD 3-Clause LICENSE exists, matches pyproject.toml and is shipped in the sdist."""

from __future__ import annotations

import os
import shutil
import tarfile
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The clauses of the BSD 3-Clause License (SPDX: BSD-3-Clause), one phrase each.
BSD3_PHRASES = [
    "BSD 3-Clause License",
    "Copyright (c) 2026, ooc_kernels developers",
    "1. Redistributions of source code must retain the above copyright notice",
    "2. Redistributions in binary form must reproduce the above copyright notice",
    "3. Neither the name of the copyright holder nor the names of its",
    'THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"',
    "EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.",
]


def test_license_file_is_bsd3_as_declared():
    text = (ROOT / "LICENSE").read_text()
    for phrase in BSD3_PHRASES:
        assert phrase in text, phrase
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == {"text": "BSD-3-Clause"}


@pytest.mark.filterwarnings("ignore:Support for .* is still .beta.")  # old setuptools
def test_sdist_contains_the_license(tmp_path):
    """Built offline with the installed setuptools from a copy of the sources."""
    build_meta = pytest.importorskip("setuptools.build_meta")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "ooc_kernels", src / "ooc_kernels",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    cwd = os.getcwd()
    os.chdir(src)
    try:
        name = build_meta.build_sdist(str(tmp_path / "dist"))
    finally:
        os.chdir(cwd)
    with tarfile.open(tmp_path / "dist" / name) as sdist:
        names = sdist.getnames()
        top = names[0].split("/")[0]
        assert f"{top}/LICENSE" in names
        shipped = sdist.extractfile(f"{top}/LICENSE").read().decode()
    assert shipped == (ROOT / "LICENSE").read_text()
