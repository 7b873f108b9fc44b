"""The only package that imports Dask: chunked inputs, rounds, tree reductions, progress."""

from ooc_kernels.parallel.chunked import ChunkedData, as_chunked
from ooc_kernels.parallel.engine import RoundInfo, RunResult, resolve_scheduler, run_rounds

__all__ = ["ChunkedData", "as_chunked", "RoundInfo", "RunResult", "resolve_scheduler",
           "run_rounds"]
