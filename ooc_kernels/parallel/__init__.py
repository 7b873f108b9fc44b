"""The only package that drives Dask: rounds over chunked data, tree reductions, schedulers,
checkpoints, progress.

Modules: :mod:`~ooc_kernels.parallel.chunked` (the engine's input, named variables chunked
along samples), :mod:`~ooc_kernels.parallel.plan` (which chunks each round reads),
:mod:`~ooc_kernels.parallel.engine` (the rounds), :mod:`~ooc_kernels.parallel.scheduler`
(where tasks run), :mod:`~ooc_kernels.parallel.checkpoint` (atomic checkpoints) and
:mod:`~ooc_kernels.parallel.sampling` (small row samples).
"""

from ooc_kernels.parallel.chunked import ChunkedData
from ooc_kernels.parallel.engine import RoundInfo, RunResult, run_rounds

__all__ = ["ChunkedData", "RoundInfo", "RunResult", "run_rounds"]
