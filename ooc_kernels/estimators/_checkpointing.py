"""Checkpoint and exact resume for the estimators' ``fit`` (see :mod:`ooc_kernels.parallel.checkpoint`).

A resumed fit ends with exactly the model of an uninterrupted one: the checkpoint stores the
model, the seeds and the position of the next round, and every random number of a fit
derives from ``(random_state, epoch, round, chunk)``.
"""

from __future__ import annotations

from ooc_kernels._version import __version__
from ooc_kernels.estimators.persistence import model_metadata, restore_model
from ooc_kernels.exceptions import ValidationError
from ooc_kernels.parallel.checkpoint import (
    Checkpoint,
    CheckpointMismatchError,
    dataset_identity,
    differences,
    write_checkpoint,
)

__all__ = ["CheckpointWriter", "resume_position"]

#: Parameters that may differ between the interrupted and the resumed fit: ``n_epochs``
#: (a larger value continues training; epoch plans depend only on the seed and the epoch).
_MAY_DIFFER = ("n_epochs",)


def _meta(estimator, data, position, n_epochs) -> dict:
    meta = model_metadata(estimator)
    meta["fitted"]["n_epochs_done"] = int(position[0])
    return {"model": meta, "position": {"epoch": int(position[0]), "round": int(position[1])},
            "n_epochs": int(n_epochs), "dataset": dataset_identity(data)}


class CheckpointWriter:
    """Engine callback writing a checkpoint every ``every`` rounds (and at the end)."""

    def __init__(self, estimator, data, path, every: int, n_epochs: int):
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValidationError(
                f"checkpoint_every must be a positive number of rounds, got {every!r}."
            )
        self.estimator, self.data, self.path = estimator, data, path
        self.every, self.n_epochs, self.rounds = every, n_epochs, 0

    def write(self, state, position) -> None:
        self.estimator._state = state
        write_checkpoint(self.path, {"coef": state.coef},
                         _meta(self.estimator, self.data, position, self.n_epochs))

    def __call__(self, state, info) -> None:
        self.rounds += 1
        if self.rounds % self.every == 0:
            self.write(state, info.next_position())


def resume_position(estimator, ck: Checkpoint, data, path) -> tuple[int, int]:
    """Check that ``ck`` belongs to this fit, restore its model, return ``(epoch, round)``.

    Raises
    ------
    CheckpointMismatchError
        Different dataset, hyperparameters, estimator or library version; the message lists
        every difference.
    """
    meta = ck.meta
    model = meta["model"]
    now = model_metadata_like(estimator)
    problems = []
    if meta.get("library_version") != __version__:
        problems.append(f"library version: checkpoint written by ooc_kernels "
                        f"{meta.get('library_version')}, this is {__version__}")
    if model.get("estimator") != type(estimator).__name__:
        problems.append(f"estimator: checkpoint has {model.get('estimator')}, this fit is "
                        f"{type(estimator).__name__}")
    saved = {k: v for k, v in model["params"].items() if k not in _MAY_DIFFER}
    problems += differences(saved, {k: v for k, v in now.items() if k not in _MAY_DIFFER},
                            prefix="hyperparameter ")
    problems += differences(meta["dataset"], dataset_identity(data), prefix="dataset ")
    position = (int(meta["position"]["epoch"]), int(meta["position"]["round"]))
    if position > (int(estimator.n_epochs), 0):
        problems.append(f"n_epochs: the checkpoint is already at epoch {position[0]}, round "
                        f"{position[1]}, past this fit's n_epochs={estimator.n_epochs}")
    if problems:
        raise CheckpointMismatchError(
            f"cannot resume from checkpoint {str(path)!r}: " + "; ".join(problems)
            + ". Resume with the same data and hyperparameters, or pass resume=False (or "
            "remove the checkpoint) to start again."
        )
    restore_model(model, ck.arrays["coef"].astype("float64"), where=str(path),
                  estimator=estimator)
    return int(meta["position"]["epoch"]), int(meta["position"]["round"])


def model_metadata_like(estimator) -> dict:
    """The JSON form of an unfitted estimator's parameters, as saved in model metadata."""
    from ooc_kernels.estimators.persistence import _SKIP_PARAMS, _json_param

    return {k: _json_param(k, v) for k, v in estimator.get_params().items()
            if k not in _SKIP_PARAMS}
