"""The only package that drives Dask: rounds over chunked data, tree reductions, schedulers,
checkpoints, progress.

Modules: :mod:`~ooc_kernels.parallel.chunked` (the engine's input, named variables chunked
along samples), :mod:`~ooc_kernels.parallel.plan` (which chunks each round reads),
:mod:`~ooc_kernels.parallel.engine` (the rounds), :mod:`~ooc_kernels.parallel.scheduler`
(where tasks run), :mod:`~ooc_kernels.parallel.checkpoint` (atomic checkpoints) and
:mod:`~ooc_kernels.parallel.sampling` (small row samples).

Importing it registers the library's defaults with Dask's configuration
(:func:`ooc_kernels._config.register_defaults`): the ``ooc-kernels.*`` keys.
"""

from ooc_kernels._config import register_defaults

# the ``ooc-kernels.*`` keys of Dask's configuration (ooc_kernels/ooc-kernels.yaml)
register_defaults()

from ooc_kernels.parallel.chunked import ChunkedData  # noqa: E402
from ooc_kernels.parallel.engine import RoundInfo, RunResult, run_rounds  # noqa: E402

__all__ = ["ChunkedData", "RoundInfo", "RunResult", "run_rounds"]
