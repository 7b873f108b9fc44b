"""Fixtures shared by the test modules."""

import pytest


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
