"""Progress bars: no warning at import, shown on a terminal and in notebooks, overridable."""

from __future__ import annotations

import os
import subprocess
import sys
import types
import warnings

import pytest

from ooc_kernels import _progress
from ooc_kernels._progress import (
    bar_class,
    in_notebook,
    progress_bar,
    progress_enabled,
    set_progress,
)


def _python(code: str, *flags: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "OOC_KERNELS_PROGRESS"}
    return subprocess.run([sys.executable, *flags, "-c", code], capture_output=True,
                          text=True, env=env, timeout=120)


def test_import_prints_nothing_even_with_warnings_as_errors():
    done = _python("import ooc_kernels, ooc_kernels.cli, ooc_kernels.pipeline", "-W", "error")
    assert done.returncode == 0 and done.stderr == "" and done.stdout == ""


def test_import_in_a_jupyter_process_without_ipywidgets_does_not_warn():
    """tqdm.auto warned 'IProgress not found' when ipykernel was loaded (a notebook)."""
    pytest.importorskip("ipykernel")
    code = ("import sys, ipykernel.zmqshell, ooc_kernels\n"
            "assert 'tqdm.auto' not in sys.modules and 'tqdm.autonotebook' not in sys.modules")
    done = _python(code)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


class _Shell:
    def __init__(self, kernel):
        if kernel:
            self.kernel = object()


@pytest.fixture
def fake_ipython(monkeypatch):
    """Install a fake ``IPython`` module whose ``get_ipython()`` returns what is set."""
    module = types.ModuleType("IPython")
    module.shell = None
    module.get_ipython = lambda: module.shell
    monkeypatch.setitem(sys.modules, "IPython", module)
    return module


@pytest.fixture
def auto(monkeypatch):
    """Automatic choice: nothing forced, no environment variable.  Tests then call
    :func:`_stderr` (pytest's capture replaces ``sys.stderr`` after fixtures run)."""
    monkeypatch.delenv("OOC_KERNELS_PROGRESS", raising=False)
    monkeypatch.setattr(_progress, "_FORCED", None)


def _stderr(monkeypatch):
    """Replace sys.stderr with a recording stream that is not a terminal."""
    stream = _NotATerminal()
    monkeypatch.setattr(sys, "stderr", stream)
    return stream


class _NotATerminal:
    def __init__(self):
        self.text = []

    def write(self, s):
        self.text.append(s)
        return len(s)

    def flush(self):
        pass

    def isatty(self):
        return False


def test_notebook_detection(monkeypatch, fake_ipython):
    fake_ipython.shell = _Shell(kernel=True)           # ZMQInteractiveShell: a kernel
    assert in_notebook() is True
    fake_ipython.shell = _Shell(kernel=False)          # terminal IPython
    assert in_notebook() is False
    fake_ipython.shell = None                          # IPython imported, no shell running
    assert in_notebook() is False

    def broken():
        raise RuntimeError("half-initialised")

    fake_ipython.get_ipython = broken
    assert in_notebook() is False
    monkeypatch.delitem(sys.modules, "IPython")
    assert in_notebook() is False


def test_default_shows_bars_in_a_notebook_and_on_a_terminal_only(monkeypatch, auto):
    _stderr(monkeypatch)
    monkeypatch.setattr(_progress, "in_notebook", lambda: False)
    assert progress_enabled(None) is False             # a pipe or a file: nothing
    monkeypatch.setattr(_progress, "in_notebook", lambda: True)
    assert progress_enabled(None) is True              # a notebook: shown
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    monkeypatch.setattr(_progress, "in_notebook", lambda: False)
    assert progress_enabled(None) is True              # a terminal: shown


@pytest.mark.parametrize("env, forced, expected", [
    ("0", None, False), ("off", None, False), ("1", None, True),
    (None, False, False), ("1", False, False), ("0", True, True),
])
def test_overrides_win_over_the_notebook(monkeypatch, auto, env, forced, expected):
    _stderr(monkeypatch)
    monkeypatch.setattr(_progress, "in_notebook", lambda: True)
    if env is not None:
        monkeypatch.setenv("OOC_KERNELS_PROGRESS", env)
    set_progress(forced)
    try:
        assert progress_enabled(None) is expected
        assert progress_enabled(not expected) is (not expected)   # explicit choice wins
    finally:
        set_progress(None)


def test_bar_class_in_a_notebook(monkeypatch):
    from tqdm.notebook import tqdm as notebook_tqdm
    from tqdm.std import tqdm as text_tqdm

    monkeypatch.setattr(_progress, "in_notebook", lambda: True)
    monkeypatch.setattr(_progress, "_ipywidgets_available", lambda: True)
    assert bar_class() is notebook_tqdm
    monkeypatch.setattr(_progress, "_ipywidgets_available", lambda: False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bar_class() is text_tqdm
    monkeypatch.setattr(_progress, "in_notebook", lambda: False)
    monkeypatch.setattr(_progress, "_ipywidgets_available", lambda: True)
    assert bar_class() is text_tqdm


def test_notebook_without_ipywidgets_gets_a_text_bar_on_stderr(monkeypatch, auto):
    err = _stderr(monkeypatch)
    monkeypatch.setattr(_progress, "in_notebook", lambda: True)
    monkeypatch.setattr(_progress, "_ipywidgets_available", lambda: False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with progress_bar(total=4, desc="chunks-demo", unit="chunk") as bar:
            bar.update(4)
    text = "".join(err.text)
    assert "chunks-demo:" in text and "/4 [" in text      # a tqdm text bar


def test_disabled_bar_writes_nothing(monkeypatch, auto):
    err = _stderr(monkeypatch)
    monkeypatch.setattr(_progress, "in_notebook", lambda: True)
    with progress_bar(total=4, desc="quiet-demo", enabled=False) as bar:
        bar.update(4)
    with progress_bar(4, "positional-demo", enabled=False, unit="x") as bar:  # old signature
        bar.update(1)
    assert err.text == []


@pytest.mark.slow
def test_a_real_kernel_shows_a_text_bar_and_no_warning(tmp_path):
    """In a Jupyter kernel (no ipywidgets here), the default shows a text bar, silently."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    try:
        import ipywidgets  # noqa: F401
        widgets = True
    except ImportError:
        widgets = False
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import ooc_kernels"),
        nbformat.v4.new_code_cell(
            "from ooc_kernels._progress import progress_bar\n"
            "with progress_bar(total=3, desc='kernel-demo') as bar:\n"
            "    bar.update(3)"),
    ])
    env = {k: v for k, v in os.environ.items() if k != "OOC_KERNELS_PROGRESS"}
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        nbclient.NotebookClient(nb, timeout=120, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    first, second = (c.get("outputs", []) for c in nb.cells)
    assert first == []                                  # the import printed nothing
    if widgets:                                         # a widget, not text
        assert any(o.get("output_type") == "display_data" for o in second)
    else:
        streams = [o for o in second if o.get("output_type") == "stream"]
        assert streams and all(o["name"] == "stderr" for o in streams)
        assert "kernel-demo" in "".join(o["text"] for o in streams)
