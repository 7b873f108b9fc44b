"""Resident memory of the current process, for the benchmark scripts (Linux ``/proc``).

``VmHWM`` (the peak) is reset by ``exec``; ``getrusage``'s ``ru_maxrss`` is not: Linux
carries it over from the process that spawned this one, so a parent that wrote a large
store would set a child's figure.  The scripts import this module as a sibling
(``python benchmarks/<script>.py`` puts ``benchmarks/`` on ``sys.path``).
"""

from __future__ import annotations

import resource
from pathlib import Path


def status_bytes(field: str) -> int:
    """``VmRSS``, ``VmHWM`` ... of this process in bytes (``/proc/self/status``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def peak_rss_mb() -> float:
    """This process's peak resident memory in MiB: ``VmHWM``, or ``ru_maxrss`` where there
    is no ``/proc``."""
    try:
        return status_bytes("VmHWM") / 2 ** 20
    except (OSError, RuntimeError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
