"""Timers around a DSG fit's set-up, for the benchmarks of its width decision.

:func:`watch_setup` wraps ``auto_ard`` (the one-width / per-input decision) and the
estimators' ``_initialize`` so that each fit leaves, in the dict it is given, the
decision's leave-one-out scores, its CPU seconds and the set-up's CPU seconds.
"""

from __future__ import annotations

import time


def watch_setup(seen: dict, digits: int | None = None) -> None:
    """Record every later DSG fit's ``scores``, ``decision_cpu_seconds`` and
    ``setup_cpu_seconds`` in ``seen`` (rounded to ``digits`` when given; 4 for scores)."""
    from ooc_kernels.families.dsg import _ard
    from ooc_kernels.families.dsg import estimators as dsg

    real_auto, real_init = _ard.auto_ard, dsg._DSGEstimator._initialize

    def rounded(value, places):
        return value if digits is None else round(value, places)

    def auto_ard(*a, **k):
        start = time.process_time()
        out = real_auto(*a, **k)
        seen.update(scores={key: rounded(v, 4) for key, v in out[1].items()},
                    decision_cpu_seconds=rounded(time.process_time() - start, digits))
        return out

    def initialize(self, *a, **k):
        start = time.process_time()
        try:
            return real_init(self, *a, **k)
        finally:
            seen["setup_cpu_seconds"] = rounded(time.process_time() - start, digits)

    _ard.auto_ard, dsg._DSGEstimator._initialize = auto_ard, initialize
