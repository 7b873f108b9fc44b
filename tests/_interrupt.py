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
