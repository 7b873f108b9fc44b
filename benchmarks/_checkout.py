"""Import another version of the library, shared by the benchmark scripts (run from
``benchmarks/``)."""

from __future__ import annotations

import sys
from pathlib import Path


def use_checkout(path: str | None) -> None:
    """Import ``ooc_kernels`` from the checkout at ``path`` (another version of the library)
    instead of the installed one: its folder goes first on ``sys.path`` and an editable
    install's import hook is set aside.  Call it before anything imports ``ooc_kernels``."""
    if not path:
        return
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
    sys.path.insert(0, str(Path(path).resolve()))


def use_checkout_of_argv(argv: list[str]) -> None:
    """:func:`use_checkout` of the folder after ``--checkout`` in ``argv`` (a script's
    command line), if any."""
    use_checkout(next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--checkout"),
                      None))
