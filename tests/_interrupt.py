"""Simulated crashes of a fit right after its n-th checkpoint, shared by the resume tests."""

from ooc_kernels.estimators._checkpointing import CheckpointWriter


class _Stop(Exception):
    """The simulated crash."""


def _interrupt_after(monkeypatch, n_writes, error=None):
    """Make the fit raise ``error`` (default: :class:`_Stop`) right after its
    ``n_writes``-th checkpoint."""
    real = CheckpointWriter.write
    count = {"n": 0}

    def write(self, state, position):
        real(self, state, position)
        count["n"] += 1
        if count["n"] == n_writes:
            raise error if error is not None else _Stop(
                "simulated crash right after a checkpoint")

    monkeypatch.setattr(CheckpointWriter, "write", write)


def assert_same_continuations(fits):
    """Two ``(first, more)`` pairs of DSPDC fits, ``first`` certified by its start at the
    set-up and by the rows, ``more`` each one's continuation by two epochs from its
    checkpoint: the same model, ``n_iter_`` 1 and 3, and the continuations' gap histories."""
    import numpy as np

    (a, a_more), (b, b_more) = fits
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.n_iter_ == b.n_iter_ == 1 and a.intercept_ == b.intercept_
    assert a_more.n_iter_ == b_more.n_iter_ == 3
    np.testing.assert_array_equal(a_more.coef_, b_more.coef_)
    assert [(h["passes"], h["primal"], h["dual"]) for h in a_more.gap_history_[1:]] == \
        [(h["passes"], h["primal"], h["dual"]) for h in b_more.gap_history_[1:]]
