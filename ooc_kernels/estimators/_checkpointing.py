"""Checkpoint and exact resume for every estimator's ``fit`` (storage:
:mod:`ooc_kernels.parallel.checkpoint`).

A checkpoint holds what a saved model holds (:mod:`ooc_kernels.estimators.persistence`: the
registered estimator name, JSON hyperparameters, the family's arrays) plus the position of
the next round, the number of epochs asked for and the identity of the dataset.  Every
random number of a fit derives from ``(random_state, epoch, round, chunk)``, so a resumed
fit ends with exactly the model of an uninterrupted one.
"""

from __future__ import annotations

from ooc_kernels._atomic import check_replaceable
from ooc_kernels._version import __version__
from ooc_kernels.estimators.persistence import json_params, model_metadata, restore_model
from ooc_kernels.exceptions import CheckpointMismatchError, ValidationError
from ooc_kernels.parallel.checkpoint import (
    Checkpoint,
    dataset_identity,
    differences,
    write_checkpoint,
)

__all__ = ["CheckpointWriter", "check_checkpoint_target", "resume_position"]


def check_checkpoint_target(path) -> None:
    """Refuse, before a fit starts, a ``checkpoint`` path that holds anything but a
    checkpoint of this library (the fit would replace it with its first checkpoint).

    Raises
    ------
    ForeignPathError
        ``path`` is a folder of other files, a file, a symbolic link or another kind of
        store; the message names it and says to choose another path.
    """
    check_replaceable(path, "checkpoint")


def _meta(estimator, data, position, end_epoch) -> dict:
    meta = model_metadata(estimator)
    meta["base"]["n_epochs_done"] = int(position[0])
    return {"model": meta, "position": {"epoch": int(position[0]), "round": int(position[1])},
            "end_epoch": int(end_epoch), "dataset": dataset_identity(data)}


class CheckpointWriter:
    """Engine callback writing a checkpoint every ``every`` rounds (and at the end)."""

    def __init__(self, estimator, data, path, every: int, end_epoch: int):
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValidationError(
                f"checkpoint_every must be a positive number of rounds, got {every!r}."
            )
        self.estimator, self.data, self.path = estimator, data, path
        self.every, self.end_epoch, self.rounds = every, end_epoch, 0

    def write(self, state, position) -> None:
        self.estimator._state = state
        write_checkpoint(self.path, self.estimator._fitted_arrays(),
                         _meta(self.estimator, self.data, position, self.end_epoch))
        self.estimator._on_checkpoint(state)

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
    model = meta.get("model", {})
    problems = []
    if meta.get("library_version") != __version__:
        problems.append(f"library version: checkpoint written by ooc_kernels "
                        f"{meta.get('library_version')}, this is {__version__}")
    if model.get("estimator") != type(estimator).__name__:
        problems.append(f"estimator: checkpoint has {model.get('estimator')}, this fit is "
                        f"{type(estimator).__name__}")
    if not problems:  # same version and estimator: compare what they record
        may_differ = set(estimator._resumable_params)
        saved = {k: v for k, v in model["params"].items() if k not in may_differ}
        now = {k: v for k, v in json_params(estimator).items() if k not in may_differ}
        problems += differences(saved, now, prefix="hyperparameter ")
        problems += differences(meta["dataset"], dataset_identity(data), prefix="dataset ")
        position = (int(meta["position"]["epoch"]), int(meta["position"]["round"]))
        if position > (int(estimator.max_iter), 0):
            problems.append(f"max_iter: the checkpoint is already at epoch {position[0]}, "
                            f"round {position[1]}, past this fit's "
                            f"max_iter={estimator.max_iter}")
    if problems:
        raise CheckpointMismatchError(
            f"cannot resume from checkpoint {str(path)!r}: " + "; ".join(problems)
            + ". Resume with the same data and hyperparameters, or pass resume=False (or "
            "remove the checkpoint) to start again."
        )
    restore_model(model, ck.arrays, where=str(path), estimator=estimator)
    return int(meta["position"]["epoch"]), int(meta["position"]["round"])
