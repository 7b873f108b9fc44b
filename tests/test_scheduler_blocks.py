"""The scheduler that :func:`~ooc_kernels.parallel.scheduler.scheduler_context` sets for a
block, for blocks of several threads at once (two fits in the threads of one worker): Dask's
configuration is one per process, so the blocks may end in any order, and when the last one
ends the process's setting is the one from before the first."""

from __future__ import annotations

import threading

import dask
import pytest

from ooc_kernels.parallel.scheduler import scheduler_context

_MISSING = object()


def _interleaved(first: str, second: str):
    """Thread A opens a block naming ``first``, thread B one naming ``second``; A's block
    ends first, then B's.  Returns the settings seen: inside B once A's block ended, and
    after both."""
    a_open, b_open, a_done = threading.Event(), threading.Event(), threading.Event()
    seen = {}
    errors = []

    def a():
        try:
            with scheduler_context(first):
                a_open.set()
                assert b_open.wait(10)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            a_done.set()

    def b():
        try:
            assert a_open.wait(10)
            with scheduler_context(second):
                b_open.set()
                assert a_done.wait(10)
                seen["inside"] = dask.config.get("scheduler", None)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and not any(t.is_alive() for t in threads)
    seen["after"] = dask.config.config.get("scheduler", _MISSING)
    return seen


@pytest.mark.parametrize("first, second", [("sync", "sync"), ("sync", "threads"),
                                           ("threads", "sync")])
def test_blocks_that_end_out_of_order_leave_the_setting_from_before(first, second):
    before = dask.config.config.get("scheduler", _MISSING)
    seen = _interleaved(first, second)
    assert seen["inside"] == second  # the block still open keeps its scheduler
    assert seen["after"] is before or seen["after"] == before


def test_a_setting_of_the_caller_is_given_back_after_out_of_order_blocks():
    with dask.config.set(scheduler="processes"):
        seen = _interleaved("sync", "threads")
        assert seen == {"inside": "threads", "after": "processes"}
    assert dask.config.get("scheduler", None) != "processes"


def test_nested_blocks_of_one_thread_set_and_give_back_in_turn():
    before = dask.config.config.get("scheduler", _MISSING)
    with scheduler_context("threads") as outer:
        assert outer == dask.config.get("scheduler") == "threads"
        with scheduler_context("synchronous") as inner:
            assert inner == dask.config.get("scheduler") == "sync"
        assert dask.config.get("scheduler") == "threads"
    assert dask.config.config.get("scheduler", _MISSING) is before or \
        dask.config.config.get("scheduler", _MISSING) == before
