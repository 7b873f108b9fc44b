"""Choosing where Dask runs the tasks, for the command line and pipelines.

Examples
--------
>>> from ooc_kernels.parallel.scheduling import scheduler_context
>>> import dask
>>> with scheduler_context("sync"):
...     dask.config.get("scheduler")
'sync'
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import dask

from ooc_kernels.exceptions import ValidationError

__all__ = ["scheduler_context", "SCHEDULER_CHOICES"]

SCHEDULER_CHOICES = ("sync", "threads", "processes")


@contextlib.contextmanager
def scheduler_context(spec: Any, *, security: Any = None) -> Iterator[Any]:
    """Make ``spec`` Dask's default scheduler inside the block.

    Parameters
    ----------
    spec : None, "sync", "threads", "processes", "tcp://host:port", "tls://host:port"
        ``None`` leaves Dask's configuration alone.  An address connects a
        ``distributed.Client`` for the duration of the block (closed afterwards).
    security : distributed.security.Security, optional
        TLS settings passed to the client for ``tls://`` addresses.
    """
    if spec is None:
        yield None
        return
    if not isinstance(spec, str):
        raise ValidationError(f"scheduler must be a string, got {spec!r}.")
    if spec in SCHEDULER_CHOICES:
        with dask.config.set(scheduler=spec):
            yield spec
        return
    if "://" in spec:
        from distributed import Client

        try:
            client = Client(spec, security=security, timeout="20s")
        except OSError as err:
            raise ValidationError(
                f"cannot connect to the Dask scheduler at {spec!r} ({err}); check the "
                "address and that the scheduler is running."
            ) from err
        try:
            yield client
        finally:
            client.close()
        return
    raise ValidationError(
        f"unknown scheduler {spec!r}; use one of {', '.join(SCHEDULER_CHOICES)} or a "
        "'tcp://host:port' address."
    )
