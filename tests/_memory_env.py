"""The environment of the subprocesses whose memory the out-of-core tests measure.

Resident memory counts what the C allocator keeps, not only what the library holds. glibc
keeps freed buffers of each thread's arena for reuse unless told to return them, so on the
threaded scheduler the resident size of a process drifts up by about one chunk group per
thread that ever ran a task, whatever the data size.  Dask's nanny starts every
distributed worker with ``MALLOC_TRIM_THRESHOLD_=65536`` for this reason (distributed's
``distributed.nanny.pre-spawn-environ``); the tests run the fit in a process configured like
such a worker, so that they measure what the library holds.  docs/memory.md gives the
numbers with and without it.
"""

import os


def worker_env() -> dict:
    """``os.environ`` plus the allocator setting every Dask worker process gets."""
    return dict(os.environ, MALLOC_TRIM_THRESHOLD_="65536")
