"""Fixtures shared by the test modules."""

import os

import pytest

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

# The suite runs on two processes (README) whose parallel kernels each start a team of
# OpenMP threads: more threads than cores.  GNU OpenMP's default spinning at the end of
# every parallel region then burns the core the partner thread waits for; sleeping at once
# costs the tests nothing (docs/threads.md, "On a shared machine").  Read by the runtime
# when numba loads it, at the first parallel kernel; it changes no value.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture
def resumed_at(monkeypatch):
    """The positions (epoch, round) the fits of the test resumed from, in order."""
    from ooc_kernels.estimators import _checkpointing

    seen, real = [], _checkpointing.resume_position

    def spy(*args, **kwargs):
        seen.append(real(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(_checkpointing, "resume_position", spy)
    return seen


@pytest.fixture(scope="session")
def dask_client():
    """A ``distributed`` cluster of 2 single-threaded worker processes, shared by the tests
    that check results on a real cluster (started once per session).

    Not the default Client (``set_as_default=False``): the tests that use it pass it as the
    ``scheduler``; every other test keeps Dask's local schedulers, whatever ran before it."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster, set_as_default=False) as client:
        yield client


# --------------------------------------------------------------------------- run alone
# README's test command runs the suite on two processes (pytest-xdist).  The tests below
# wait on wall-clock deadlines for other processes (writers that must start together, a
# pipeline killed at a given epoch, a scheduler or worker that must be seen lost within a
# few seconds): each runs alone, with the machine to itself as in a one-process run, while
# the other test process waits between two of its tests.  Every other test holds the lock
# shared, so two of them run side by side.
ALONE = {
    "tests/test_safety.py::test_concurrent_writers_never_mix":
        "3 writer processes must start within 60 s",
    "tests/test_safety.py::test_failed_write_waits_for_pending_zarr_writes_before_cleaning_up":
        "a writer process must start within 60 s",
    "tests/test_checkpoint.py::test_sigkill_then_same_command_resumes_to_the_uninterrupted_model":
        "a pipeline process killed at a given epoch, deadlines of 240 s and 300 s",
    "tests/test_dspdc.py::test_sigkill_then_resume_gives_the_uninterrupted_dspdc_model":
        "a pipeline process killed at a given epoch, deadlines of 240 s and 300 s",
    "tests/test_cli_pipeline.py::test_run_interrupted_by_a_real_sigint":
        "a pipeline process interrupted mid-fit, deadline of 120 s",
    "tests/test_scheduler_loss.py::test_a_lost_scheduler_is_a_library_error_naming_the_checkpoint":
        "a scheduler closed mid-fit must be seen lost within its timeouts",
    "tests/test_scheduler_loss.py::test_a_lost_scheduler_without_a_checkpoint_says_so":
        "a lost scheduler must be reported within 10 s",
    "tests/test_worker_loss.py::test_killing_a_worker_mid_fit_gives_the_undisturbed_model":
        "a worker process killed mid-round",
    "tests/test_cluster_rounds.py::test_a_failing_callback_stops_the_run_and_cancels_the_queued_rounds":
        "the cancelled rounds must leave the cluster within its deadline",
}


def pytest_collection_modifyitems(config, items):
    """Mark the :data:`ALONE` tests; a name there that its collected file does not define is
    an error (a renamed test would otherwise lose the mark silently)."""
    modules = {}
    for item in items:
        name = item.nodeid.split("[")[0]
        if name in ALONE:
            item.add_marker(pytest.mark.alone(reason=ALONE[name]))
        module = getattr(item, "module", None)
        if module is not None:
            modules[item.nodeid.split("::")[0]] = module
    missing = [name for name in ALONE
               if name.split("::")[0] in modules
               and not hasattr(modules[name.split("::")[0]], name.split("::")[1])]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py ALONE names tests that do not exist: "
                                f"{missing}; rename or remove them there")


@pytest.fixture(autouse=True)
def _alone_or_side_by_side(request, tmp_path_factory):
    """Under pytest-xdist, hold the lock file shared by the test processes: exclusively for
    a test marked ``alone``, shared for every other test.  Without xdist, or where
    ``fcntl`` is missing (Windows), nothing is locked."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None or fcntl is None:
        yield
        return
    # every worker's base folder (pytest-N/popen-gwK) sits in the session's shared folder
    lock_path = tmp_path_factory.getbasetemp().parent / "alone.lock"
    alone = request.node.get_closest_marker("alone") is not None
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
