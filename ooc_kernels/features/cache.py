"""A thread-safe, byte-budgeted LRU cache for regenerated random-feature blocks.

Random-feature blocks are a pure function of their seed (see :mod:`ooc_kernels.features.rbf`),
so caching them is a performance choice, never a semantic one: an evicted block is simply
regenerated the next time it is needed.  The cache is sized in bytes (the sum of ``nbytes``
of the stored arrays), not in entries, because blocks of different shapes share one budget.

The process-wide cache returned by :func:`default_cache` takes its budget from the
environment variable ``OOC_KERNELS_FEATURE_CACHE_MB`` (default 256 MiB) the first time it is
created; :func:`set_cache_budget` changes it at run time.

One budget.  The same number bounds the feature memory of the DSG full phase: a task that
needs working memory for feature parameters (a stacked copy of all blocks, or the tiles of
the tiled full phase, see ``docs/algorithms/dsg_full_phase.md``) holds it with
:meth:`BlockCache.reserve`, which lowers the cache's own limit by as much for as long as the
work runs.  So ``cache.nbytes + reserved <= max_bytes`` whenever the reservations themselves
fit in the budget.

Examples
--------
>>> import numpy as np
>>> from ooc_kernels.features.cache import BlockCache
>>> cache = BlockCache(max_bytes=1024)
>>> cache.put("a", (np.zeros(64),))          # 512 bytes
True
>>> cache.get("a")[0].shape
(64,)
>>> cache.get("missing") is None
True
>>> cache.hits, cache.misses
(1, 1)
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from contextlib import contextmanager
from collections.abc import Callable, Hashable

import numpy as np

from ooc_kernels.exceptions import ValidationError

__all__ = ["CACHE_ENV_VAR", "BlockCache", "default_cache", "set_cache_budget"]

#: Environment variable holding the default cache budget in MiB.
CACHE_ENV_VAR = "OOC_KERNELS_FEATURE_CACHE_MB"
_DEFAULT_MB = 256.0


def _check_budget(max_bytes) -> int:
    try:
        value = int(max_bytes)
    except (TypeError, ValueError):
        raise ValidationError(
            f"cache budget must be a non-negative integer number of bytes; got {max_bytes!r}"
        ) from None
    if value < 0 or value != max_bytes:
        raise ValidationError(
            f"cache budget must be a non-negative integer number of bytes; got {max_bytes!r}"
        )
    return value


class BlockCache:
    """Least-recently-used mapping ``key -> tuple of arrays`` bounded by total ``nbytes``.

    Parameters
    ----------
    max_bytes : int
        Budget in bytes.  ``0`` disables caching (every ``put`` is refused).  An item whose
        own size exceeds the budget is never stored.

    Attributes
    ----------
    hits, misses, evictions : int
        Counters, updated by :meth:`get` / :meth:`get_or_create` and by evictions.
    nbytes : int
        Bytes currently held.
    max_bytes : int
        The budget (settable; lowering it evicts immediately).
    reserved : int
        Bytes of the budget held by :meth:`reserve` for working memory outside the cache.

    Notes
    -----
    All operations take one internal lock, so the cache may be shared by the threads of
    Dask's threaded scheduler.  Stored arrays are marked read-only so that a caller cannot
    corrupt a cached block in place.

    Examples
    --------
    >>> import numpy as np
    >>> c = BlockCache(max_bytes=2 * 8 * 10)   # room for two arrays of 10 float64
    >>> for k in "abc":
    ...     _ = c.put(k, (np.zeros(10),))
    >>> sorted(c.keys()), c.evictions       # "a" was least recently used
    (['b', 'c'], 1)
    """

    def __init__(self, max_bytes: int):
        self._max_bytes = _check_budget(max_bytes)
        self._data: OrderedDict[Hashable, tuple[tuple[np.ndarray, ...], int]] = OrderedDict()
        self._lock = threading.RLock()
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self.nbytes = 0
        self.reserved = 0

    # -- budget ---------------------------------------------------------------------------
    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int) -> None:
        with self._lock:
            self._max_bytes = _check_budget(value)
            self._evict_to(self.limit)

    @property
    def limit(self) -> int:
        """Bytes the cache may hold now: the budget less the reservations (at least 0)."""
        return max(0, self._max_bytes - self.reserved)

    @contextmanager
    def reserve(self, nbytes: int):
        """Hold ``nbytes`` of the budget for working memory outside the cache.

        While the context is open the cache holds at most ``max_bytes - reserved`` bytes
        (evicting least recently used entries at once), so the cache and the working memory
        of the reserving tasks share one budget.

        Examples
        --------
        >>> import numpy as np
        >>> c = BlockCache(max_bytes=1000)
        >>> _ = c.put("a", (np.zeros(100),))          # 800 bytes
        >>> with c.reserve(400):
        ...     print(c.limit, len(c))
        600 0
        >>> c.limit
        1000
        """
        nbytes = _check_budget(nbytes)
        with self._lock:
            self.reserved += nbytes
            self._evict_to(self.limit)
        try:
            yield self
        finally:
            with self._lock:
                self.reserved -= nbytes

    def _evict_to(self, limit: int) -> None:
        while self._data and self.nbytes > limit:
            _, (_, size) = self._data.popitem(last=False)
            self.nbytes -= size
            self.evictions += 1

    # -- mapping operations ---------------------------------------------------------------
    def get(self, key: Hashable):
        """Return the cached tuple for ``key`` (marking it most recently used) or ``None``."""
        with self._lock:
            item = self._data.get(key)
            if item is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return item[0]

    def put(self, key: Hashable, arrays) -> bool:
        """Store ``arrays`` (a tuple of ndarrays) under ``key``; return whether it was stored.

        Items larger than the whole budget are refused (``False``).  Storing evicts least
        recently used entries until the budget holds.
        """
        arrays = tuple(arrays)
        size = int(sum(a.nbytes for a in arrays))
        if size > self.limit:
            return False
        for a in arrays:
            a.flags.writeable = False
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self.nbytes -= old[1]
            self._data[key] = (arrays, size)
            self.nbytes += size
            self._evict_to(self.limit)
            return key in self._data

    def get_or_create(self, key: Hashable, factory: Callable[[], tuple]):
        """Return the cached value of ``key``, computing and storing ``factory()`` on a miss.

        The factory runs outside the lock, so two threads missing the same key at once may
        both compute it (harmless: blocks are deterministic).
        """
        value = self.get(key)
        if value is not None:
            return value
        value = tuple(factory())
        self.put(key, value)
        return value

    def clear(self) -> None:
        """Drop every entry (counters are kept)."""
        with self._lock:
            self._data.clear()
            self.nbytes = 0

    def reset_stats(self) -> None:
        """Zero the ``hits``, ``misses`` and ``evictions`` counters."""
        with self._lock:
            self.hits = self.misses = self.evictions = 0

    def keys(self) -> list:
        """Keys from least to most recently used."""
        with self._lock:
            return list(self._data.keys())

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __repr__(self) -> str:
        return (
            f"BlockCache(max_bytes={self._max_bytes}, nbytes={self.nbytes}, "
            f"reserved={self.reserved}, entries={len(self)}, "
            f"hits={self.hits}, misses={self.misses}, evictions={self.evictions})"
        )


_default: BlockCache | None = None
_default_lock = threading.Lock()


def _budget_from_env() -> int:
    raw = os.environ.get(CACHE_ENV_VAR)
    if raw is None or raw.strip() == "":
        return int(_DEFAULT_MB * 2**20)
    try:
        mb = float(raw)
    except ValueError:
        raise ValidationError(
            f"environment variable {CACHE_ENV_VAR}={raw!r} is not a number; "
            "set it to the feature-cache budget in MiB, e.g. 256"
        ) from None
    if not (mb >= 0 and np.isfinite(mb)):
        raise ValidationError(
            f"environment variable {CACHE_ENV_VAR}={raw!r} must be a non-negative number of MiB"
        )
    return int(mb * 2**20)


def default_cache() -> BlockCache:
    """The process-wide feature-block cache.

    Created on first use with the budget ``OOC_KERNELS_FEATURE_CACHE_MB`` MiB (default 256).

    Examples
    --------
    >>> from ooc_kernels.features.cache import default_cache
    >>> default_cache() is default_cache()
    True
    """
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = BlockCache(_budget_from_env())
    return _default


def set_cache_budget(max_bytes: int) -> BlockCache:
    """Set the byte budget of the process-wide cache (evicting at once if it shrank).

    Examples
    --------
    >>> from ooc_kernels.features.cache import set_cache_budget, default_cache
    >>> old = default_cache().max_bytes
    >>> set_cache_budget(1 << 20).max_bytes
    1048576
    >>> _ = set_cache_budget(old)
    """
    cache = default_cache()
    cache.max_bytes = max_bytes
    return cache
