"""Where Dask runs the tasks: the library's one scheduler resolver.

A scheduler is ``"sync"``, ``"threads"``, ``"processes"``, the address of a Dask scheduler
(``tcp://host:8786`` or ``tls://host:8786``), a Dask scheduler file (``scheduler_file=``,
the JSON file ``dask scheduler --scheduler-file`` writes), or an already connected
``distributed.Client``.  TLS settings come from a ``distributed.security.Security``
(:func:`make_security` builds one from certificate files) or, when none is given, from Dask's
configuration (``distributed.comm.tls.*`` in ``~/.config/dask/*.yaml`` or ``DASK_CONFIG``).

:func:`check_scheduler` validates a value without contacting anything (hyperparameter
validation uses it); :func:`scheduler_context` is the only place that connects to a remote
scheduler, and it closes what it opened when the block ends.  Inside the block it yields the
value to give ``dask.compute(scheduler=...)``.

A fit that itself runs inside a task of a ``dask.distributed`` worker (a candidate of a
search run through joblib's Dask backend, of dask-ml's ``GridSearchCV``, or a function given
to ``client.submit``) does not send its rounds to the cluster that runs it: every worker
thread could be held by such a fit waiting for chunk tasks that no free thread is left to
run.  When the scheduler it would use is that cluster (``None`` with the worker's Client as
the default, that Client, or its scheduler's address), :func:`scheduler_context` runs the
block on the synchronous scheduler instead: the rounds run one after the other in the task's
own thread, and the model is bit-identical to the same fit anywhere else
(:func:`task_worker` says whether the calling thread runs such a task).

Examples
--------
>>> from ooc_kernels.parallel.scheduler import scheduler_context
>>> import dask
>>> with scheduler_context("sync") as sched:
...     sched, dask.config.get("scheduler")
('sync', 'sync')
>>> check_scheduler("tcp://scheduler:8786")      # checked, not contacted
>>> check_scheduler("gpu")
Traceback (most recent call last):
...
ooc_kernels.exceptions.ValidationError: unknown scheduler 'gpu'; use one of sync, threads, processes, a 'tcp://host:port' or 'tls://host:port' address, a scheduler file, or a distributed.Client.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

import dask

from ooc_kernels._paths import user_path
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.parallel.worker_exit import workers_exit_with_parent

__all__ = ["SCHEDULER_CHOICES", "check_scheduler", "local_scheduler", "make_security",
           "scheduler_context", "task_worker"]

SCHEDULER_CHOICES = ("sync", "threads", "processes")
#: Other names Dask accepts for the local schedulers.
_ALIASES = {"synchronous": "sync", "single-threaded": "sync", "threading": "threads",
            "multiprocessing": "processes"}
_ADDRESS_SCHEMES = ("tcp://", "tls://", "inproc://", "ucx://", "ws://", "wss://")
_UNKNOWN = ("unknown scheduler {spec!r}; use one of sync, threads, processes, a "
            "'tcp://host:port' or 'tls://host:port' address, a scheduler file, or a "
            "distributed.Client.")


def check_scheduler(spec: Any) -> None:
    """Raise :class:`ValidationError` unless ``spec`` is a scheduler value; never connects.

    Accepted: ``None``, ``"sync"``, ``"threads"``, ``"processes"`` (and Dask's aliases), an
    address (``tcp://``, ``tls://`` ...) or a ``distributed.Client``.
    """
    if spec is None or _is_client(spec):
        return
    if not isinstance(spec, str):
        raise ValidationError(_UNKNOWN.format(spec=spec))
    if spec in SCHEDULER_CHOICES or spec in _ALIASES or spec.startswith(_ADDRESS_SCHEMES):
        return
    raise ValidationError(_UNKNOWN.format(spec=spec))


def local_scheduler(spec: Any) -> Any:
    """The ``dask.compute`` argument for a value that needs no connection: ``None``, a
    local scheduler name (aliases normalized) or a ``Client``.

    Raises
    ------
    ValidationError
        An address: it must be connected with :func:`scheduler_context` first.
    """
    check_scheduler(spec)
    if isinstance(spec, str):
        if spec.startswith(_ADDRESS_SCHEMES):
            raise ValidationError(
                f"the scheduler {spec!r} is an address: connect to it with "
                "ooc_kernels.parallel.scheduler.scheduler_context (the estimators do this "
                "around fit and score) or pass a connected distributed.Client."
            )
        return _ALIASES.get(spec, spec)
    return spec


def make_security(ca_file: str | os.PathLike | None = None,
                  cert: str | os.PathLike | None = None,
                  key: str | os.PathLike | None = None, *,
                  require_encryption: bool = True):
    """A ``distributed.security.Security`` for a client of a TLS-secured scheduler.

    Parameters
    ----------
    ca_file : path
        PEM file of the certificate authority that signed the scheduler's certificate (the
        client refuses any other scheduler).
    cert : path
        PEM file of this client's certificate (it may also hold the private key).
    key : path, optional
        PEM file of the client's private key, when it is not inside ``cert``.
    require_encryption : bool, default True
        Refuse unencrypted (``tcp://``) connections.

    Returns
    -------
    distributed.security.Security or None
        ``None`` when no file is given (Dask's configuration then applies).

    Raises
    ------
    ValidationError
        A file is missing, or ``key`` is given without ``cert``, or ``cert`` without
        ``ca_file``.

    Examples
    --------
    >>> make_security() is None
    True
    >>> make_security(cert="client.pem")
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.ValidationError: TLS: a client certificate was given without ...
    """
    if ca_file is None and cert is None and key is None:
        return None
    if ca_file is None:
        raise ValidationError(
            "TLS: a client certificate was given without the certificate authority; pass "
            "the CA file too (--tls-ca-file / ca_file=...) so the scheduler can be verified"
        )
    if cert is None:
        raise ValidationError(
            f"TLS: the CA file {os.fsdecode(ca_file)!r} was given without a client certificate; "
            "Dask's TLS needs one on every connection: pass --tls-cert (and --tls-key if the "
            "key is in a separate file)"
        )
    for what, f in (("CA file", ca_file), ("client certificate", cert), ("client key", key)):
        if f is not None and not user_path(f).is_file():
            raise ValidationError(
                f"TLS: the {what} {os.fsdecode(f)!r} does not exist or is not a file; check the path"
            )
    from distributed.security import Security

    def _s(f):
        return None if f is None else os.fspath(user_path(f))

    return Security(tls_ca_file=_s(ca_file), tls_client_cert=_s(cert),
                    tls_client_key=_s(key), require_encryption=require_encryption)


def _is_client(obj: Any) -> bool:
    try:
        from distributed import Client
    except ImportError:  # pragma: no cover
        return False
    return isinstance(obj, Client)


def task_worker() -> Any:
    """The ``distributed.Worker`` whose task the calling thread runs, or None.

    None outside a task (the client's own threads, a script, Dask's local schedulers), and
    whenever ``distributed`` is not imported (no worker can exist then).

    Returns
    -------
    distributed.Worker or None
        The worker running the calling task.

    Examples
    --------
    >>> task_worker() is None
    True
    """
    if sys.modules.get("distributed") is None:
        return None
    from distributed import get_worker

    try:
        return get_worker()
    except ValueError:  # not inside a task of a worker
        return None


def _scheduler_address(obj: Any) -> str | None:
    """The scheduler address a Client or a Worker talks to (None when it has none)."""
    try:
        return obj.scheduler.address
    except AttributeError:
        return None


def _runs_on_own_cluster(spec: Any) -> bool:
    """Whether ``spec`` would send work to the cluster whose worker runs the calling task.

    ``None`` does when Dask's configuration names no other scheduler (Dask then uses the
    worker's Client); a Client or an address does when its scheduler is the worker's.
    """
    worker = task_worker()
    if worker is None:
        return False
    own = _scheduler_address(worker)
    if spec is None:
        configured = dask.config.get("scheduler", None)
        if configured is None or configured in ("dask.distributed", "distributed"):
            return True
        if _is_client(configured):
            return _scheduler_address(configured) == own
        return False
    if _is_client(spec):
        return _scheduler_address(spec) == own
    return isinstance(spec, str) and own is not None and spec == own


def _configured_in_task() -> Any:
    """Inside a worker's task, the scheduler that Dask's configuration names now (a local
    scheduler's name, or a Client), for the task to keep; None outside a task, or when the
    configuration names none of these.

    Dask's configuration is one per process: in a worker of several threads, another task's
    ``dask.config.set`` block may name ``"sync"`` while this task chooses and give the
    cluster back before this task's rounds run.  A task that deferred to the configuration
    would then send its rounds to the cluster that runs it, and wait for them forever.
    """
    if task_worker() is None:
        return None
    configured = dask.config.get("scheduler", None)
    if isinstance(configured, str) and (configured in SCHEDULER_CHOICES
                                        or configured in _ALIASES):
        return _ALIASES.get(configured, configured)
    return configured if _is_client(configured) else None


_UNSET = object()
#: The scheduler blocks open now (a token and the value of each, in the order they started)
#: and the process's ``scheduler`` setting before the first of them (:func:`_scheduler_set`).
_OPEN: list[tuple[object, Any]] = []
_BEFORE: list[Any] = [_UNSET]
_OPEN_LOCK = threading.Lock()


@contextlib.contextmanager
def _scheduler_set(value: Any) -> Iterator[None]:
    """``dask.config.set(scheduler=value)`` for the block, for blocks of several threads that
    may end in any order.

    Dask's configuration is one per process, and ``dask.config.set`` restores, at a block's
    end, the value it found at its start: two tasks of one worker whose blocks end in the
    other order from the one they started in would leave the second one's setting behind
    (``"sync"`` after a search run on an in-process cluster).  Here, while blocks are open
    the setting is that of the latest one still open, and when the last one ends it is the
    setting from before the first.
    """
    token = object()
    with _OPEN_LOCK:
        if not _OPEN:
            _BEFORE[0] = dask.config.config.get("scheduler", _UNSET)
        _OPEN.append((token, value))
        dask.config.set(scheduler=value)
    try:
        yield
    finally:
        with _OPEN_LOCK:
            _OPEN[:] = [(t, v) for t, v in _OPEN if t is not token]
            if _OPEN:
                dask.config.set(scheduler=_OPEN[-1][1])
            elif _BEFORE[0] is _UNSET:
                dask.config.config.pop("scheduler", None)
            else:
                dask.config.set(scheduler=_BEFORE[0])


@contextlib.contextmanager
def scheduler_context(spec: Any = None, *, security: Any = None,
                      scheduler_file: str | os.PathLike | None = None) -> Iterator[Any]:
    """Make ``spec`` Dask's default scheduler inside the block.

    Parameters
    ----------
    spec : None, "sync", "threads", "processes", "tcp://host:port", "tls://host:port" or a
        ``distributed.Client``
        ``None`` leaves Dask's configuration alone (unless ``scheduler_file`` is given).  An
        address connects a ``distributed.Client`` for the duration of the block (closed
        afterwards); a ``Client`` is used as is (and left open).  Inside a task of a
        ``distributed`` worker, ``None``, a Client or an address that stands for that
        worker's own cluster gives ``"sync"``: the block's work runs in the task's thread
        rather than waiting on the cluster that runs the task; and ``None`` with another
        scheduler configured gives that scheduler itself, so that the task keeps it whatever
        the process's other tasks set later.
    security : distributed.security.Security, optional
        TLS settings passed to the client (see :func:`make_security`).  Without it, a
        ``tls://`` address uses Dask's configuration (``distributed.comm.tls.*``).
    scheduler_file : path, optional
        Connect to the scheduler described by this Dask scheduler file instead of an
        address (``spec`` must then be None).

    Raises
    ------
    ValidationError
        Unknown scheduler, both an address and a scheduler file, TLS settings with a local
        scheduler or a ``tcp://`` address, a missing scheduler file, or no scheduler
        reachable (the message names the address and the fix).
    """
    if scheduler_file is not None:
        if spec is not None:
            raise ValidationError(
                f"both a scheduler ({spec!r}) and a scheduler file ({os.fsdecode(scheduler_file)!r}) "
                "were given; pass only one of them"
            )
        path = user_path(scheduler_file)
        if not path.is_file():
            raise ValidationError(
                f"scheduler file {str(path)!r} does not exist; start the scheduler with "
                "`dask scheduler --scheduler-file PATH` or check the path"
            )
        with _client(str(path), security, scheduler_file=True) as client:
            yield client
        return
    if spec is None:
        if security is not None:
            raise ValidationError(_local_tls_message(None))
        if _runs_on_own_cluster(None):
            with _scheduler_set("sync"):
                yield "sync"
            return
        kept = _configured_in_task()
        if kept is None:
            yield None
            return
        with _scheduler_set(kept):
            yield kept
        return
    check_scheduler(spec)
    if _runs_on_own_cluster(spec):
        with _scheduler_set("sync"):
            yield "sync"
        return
    if _is_client(spec):
        with _scheduler_set(spec):
            yield spec
        return
    if spec in SCHEDULER_CHOICES or spec in _ALIASES:
        if security is not None:
            raise ValidationError(_local_tls_message(spec))
        name = _ALIASES.get(spec, spec)
        with _scheduler_set(name), (workers_exit_with_parent() if name == "processes"
                                    else contextlib.nullcontext()):
            yield name  # a killed process's pool workers end with it (worker_exit)
        return
    if "://" in spec:
        if security is not None and getattr(security, "require_encryption", False) \
                and not spec.startswith("tls://"):
            raise ValidationError(
                f"TLS settings were given but the scheduler address {spec!r} is not "
                "encrypted; use its tls:// address (e.g. 'tls://host:8786')"
            )
        with _client(spec, security) as client:
            yield client
        return
    raise ValidationError(_UNKNOWN.format(spec=spec))  # pragma: no cover - checked above


def _local_tls_message(spec) -> str:
    return (f"TLS settings only apply to a remote Dask scheduler, but the scheduler is "
            f"{spec!r}; pass a tls://host:port address or a scheduler file, or drop the TLS "
            "options")


@contextlib.contextmanager
def _client(target: str, security: Any, *, scheduler_file: bool = False) -> Iterator[Any]:
    from distributed import Client

    where = f"scheduler file {target!r}" if scheduler_file else f"Dask scheduler at {target!r}"
    kwargs = {"scheduler_file": target} if scheduler_file else {"address": target}
    try:
        client = Client(**kwargs, security=security, timeout="20s")
    except (OSError, TimeoutError) as err:
        hint = (" and that the TLS files match the scheduler's certificate authority"
                if security is not None or target.startswith("tls://") else "")
        raise ValidationError(
            f"cannot connect to the {where} ({type(err).__name__}: {err}); check the "
            f"address and that the scheduler is running{hint}."
        ) from err
    try:
        yield client
    finally:
        client.close()
