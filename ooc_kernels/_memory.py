"""The machine's memory, against which hyperparameters that size a model are checked before
anything is allocated: a model that cannot fit is a
:class:`~ooc_kernels.exceptions.ModelTooLargeError` naming the value, the bytes it needs and
what to lower, never NumPy's raw ``MemoryError`` part way through a fit.

Examples
--------
>>> from ooc_kernels._memory import size_text
>>> size_text(512), size_text(3 * 2**30)
('512 bytes', '3.0 GiB')
"""

from __future__ import annotations

import os

__all__ = ["physical_memory", "size_text"]


def physical_memory() -> int | None:
    """Bytes of physical memory of this machine (None where the system does not say)."""
    try:
        pages, page = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None
    return pages * page if pages > 0 and page > 0 else None


def size_text(n_bytes: float) -> str:
    """``n_bytes`` in the largest binary unit below it, up to TiB."""
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n_bytes < 1024 or unit == "TiB":
            return f"{n_bytes:.0f} {unit}" if unit == "bytes" else f"{n_bytes:.1f} {unit}"
        n_bytes /= 1024
    raise AssertionError("unreachable")
