"""Checkpoint and exact resume for every estimator's ``fit`` (storage:
:mod:`ooc_kernels.parallel.checkpoint`).

A checkpoint holds what a saved model holds (:mod:`ooc_kernels.estimators.persistence`: the
registered estimator name, JSON hyperparameters, the family's arrays) plus the position of
the next round, the number of epochs asked for and the identity of the dataset.  Every
random number of a fit derives from ``(random_state, epoch, round, chunk)``, so a resumed
fit ends with exactly the model of an uninterrupted one.

The identity of the dataset (:func:`dataset_fingerprint`) is its structure (shapes, dtypes,
chunks, attributes, Dask token) and the fingerprint of what its Zarr stores hold, so a
store regenerated at the same path with the same shape is another dataset.  In the token a
variable that reads one whole Zarr array as it is stored (what ``ok.open_dataset`` and a
catalog give) is named by that fingerprint rather than by its store's path: a store copied
or moved with its checkpoint (a project folder copied to a scratch disk) is the same
dataset, and a fit resumes from the checkpoint there.  For stores
whose chunks carry a CRC32C (every store written by ooc_kernels) that costs one 4-byte read
per chunk file; other Zarr stores are read once, chunk file by chunk file (their stored
bytes, not decoded), when a fit with a checkpoint starts and once more when it resumes.
It is computed once per fit.

Resuming checks the checkpoint before it uses anything in it: the checksums
(:func:`~ooc_kernels.parallel.checkpoint.read_checkpoint`), the form of its metadata, the
position (an epoch this fit can reach, a round of that epoch), and the model through the
checks of :func:`~ooc_kernels.estimators.persistence.restore_model`.
"""

from __future__ import annotations

import contextlib
import copy
import weakref
from pathlib import Path

from ooc_kernels._atomic import check_replaceable, expand_user, path_lock, write_failed
from ooc_kernels._folder_pin import pin, pinning
from ooc_kernels._untrusted import refuse_special_files
from ooc_kernels._version import __version__
from ooc_kernels.estimators._feature_coords import resumed_labels_problem
from ooc_kernels.estimators.persistence import json_params, model_metadata, restore_model
from ooc_kernels.exceptions import (
    CheckpointError,
    CheckpointInUseError,
    CheckpointMismatchError,
    ModelFormatError,
    ValidationError,
)
from ooc_kernels.parallel.checkpoint import (
    START_OVER,
    Checkpoint,
    dataset_identity,
    differences,
    read_checkpoint,
    write_checkpoint,
)

__all__ = ["CheckpointWriter", "check_checkpoint_target", "dataset_fingerprint", "expand_user",
           "holding_checkpoint", "read_resume_checkpoint", "resume_end", "resume_position"]

_FIX = f"remove the checkpoint (or pass {START_OVER}) to start the fit again"
#: The suffix of the lock a fit holds on its checkpoint: ``.NAME.fit-lock`` beside it.
_HOLD = ".fit-lock"

# id(data) -> (weak reference to data, its fingerprint): the writer and the resume check of
# one fit share one computation.  An entry goes when its data is garbage-collected.
_FINGERPRINTS: dict = {}


def dataset_fingerprint(data) -> dict:
    """:func:`~ooc_kernels.parallel.checkpoint.dataset_identity` of ``data`` with the
    fingerprint of its stored contents under ``"content"`` (see the module docstring),
    computed once for a given ``data`` object."""
    from ooc_kernels.data.integrity import content_fingerprint

    key = id(data)
    hit = _FINGERPRINTS.get(key)
    if hit is not None and hit[0]() is data:
        return hit[1]
    content = content_fingerprint({**data.variables, **data.whole})
    found = dict(dataset_identity(data), content=content)
    found["token"] = _location_free_token(data, content)
    ref = weakref.ref(data, lambda _ref, key=key: _FINGERPRINTS.pop(key, None))
    _FINGERPRINTS[key] = (ref, found)
    return found


def _whole_store_read(arr) -> bool:
    """Whether the Dask array ``arr`` reads one whole Zarr array as it is stored and does
    nothing else: the one-layer graph of :func:`ooc_kernels.data.integrity.guard_dask_array`."""
    from ooc_kernels.data.integrity import zarr_sources

    layers = getattr(getattr(arr, "__dask_graph__", lambda: None)(), "layers", None)
    return (layers is not None and list(layers) == [arr.name]
            and arr.name.startswith("checked-") and len(zarr_sources(arr)) == 1)


def _location_free_token(data, content: dict) -> str:
    """``data.token`` with every variable that reads one whole Zarr array
    (:func:`_whole_store_read`) named by the fingerprint of its stored contents (``content``,
    by variable), its chunks and dtype instead of its Dask name (which holds the store's
    path)."""
    import dask.base

    def name(key, arr, other):
        if str(key) in content and _whole_store_read(arr):
            return ("zarr", content[str(key)], [list(c) for c in arr.chunks], str(arr.dtype))
        return other()

    names = {k: name(k, v, lambda v=v: data.identities[v.name]() if v.name in data.identities
                     else v.name) for k, v in data.variables.items()}
    return dask.base.tokenize(sorted(names.items()), sorted(
        (k, name(k, v, lambda v=v: dask.base.tokenize(v))) for k, v in data.whole.items()))


def read_resume_checkpoint(path) -> Checkpoint:
    """The checkpoint a fit resumes from (``read_checkpoint``), after refusing a named
    pipe, a device or a socket in its folder (reading one would wait without end).

    Raises
    ------
    CheckpointError
        Naming the file, or what ``read_checkpoint`` finds wrong.
    """
    refuse_special_files(path, what=f"checkpoint {str(path)!r}", error=CheckpointError,
                         fix=f"remove it (or pass {START_OVER})")
    return read_checkpoint(path)


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


@contextlib.contextmanager
def holding_checkpoint(path, resume: bool):
    """Hold the checkpoint ``path`` for one fit (nothing when ``path`` is None): refuse it
    when it holds anything but a checkpoint (:func:`check_checkpoint_target`, unless the
    fit resumes), then take its lock, ``.NAME.fit-lock`` beside it, for the whole block.

    The lock is :func:`~ooc_kernels._path_lock.path_lock`'s ``flock``, taken without
    waiting: a second fit on the same path, in another process or another thread, is
    refused before it reads or writes anything.  It is let go when the block ends (the fit
    returns or raises) and with the process that holds it (a killed fit's lock file blocks
    nobody).  The checkpoint's folder is pinned for the block (:mod:`ooc_kernels._folder_pin`):
    swapped for a symbolic link (or another folder) during the fit, it is never written
    through.

    Raises
    ------
    CheckpointInUseError
        Another fit holds the checkpoint; the message names it and how to go on.
    ForeignPathError
        ``path`` (when not resuming) or its lock file's name holds something that is not
        the library's; raised by a checkpoint write when the checkpoint's folder was
        swapped since the fit began.
    WriteFailedError
        The file system refuses the lock file (a full disk, a read-only or forbidden
        folder), naming the checkpoint and the system's error.
    """
    if path is None:
        yield
        return
    if not resume:  # before any work: never a user's folder
        check_checkpoint_target(path)
    path = Path(path)
    with contextlib.ExitStack() as stack:
        try:
            lock = stack.enter_context(path_lock(path, suffix=_HOLD, wait=False))
        except OSError as err:   # the hold is the fit's first write: a full or read-only folder
            failed = write_failed(err, path, "checkpoint", path.exists())
            if failed is err:
                raise
            raise failed from err
        if lock is None:
            held = path.with_name(f".{path.name}{_HOLD}")
            raise CheckpointInUseError(
                f"checkpoint {str(path)!r} is in use by another fit, in this process or "
                f"another (that fit holds the lock {str(held)!r}); two fits writing one "
                "checkpoint would overwrite each other's. Wait until that fit ends (and "
                "resume from the checkpoint if it stopped early), or give this fit another "
                "checkpoint path. A parallel search (GridSearchCV with n_jobs) that passes "
                "one checkpoint to every candidate's fit meets this: give each fit its own "
                "path, or none.")
        with pinning():  # the checkpoint's folder swapped during the fit: never written through
            pin(path.parent)
            yield


def _meta(estimator, data, position, end_epoch) -> dict:
    meta = model_metadata(estimator)
    meta["base"]["n_epochs_done"] = int(position[0])
    return {"model": meta, "position": {"epoch": int(position[0]), "round": int(position[1])},
            "end_epoch": int(end_epoch), "dataset": dataset_fingerprint(data)}


class CheckpointWriter:
    """Engine callback writing a checkpoint every ``every`` rounds (and at the end)."""

    def __init__(self, estimator, data, path, every: int, end_epoch: int):
        if not isinstance(every, int) or isinstance(every, bool) or every < 1:
            raise ValidationError(
                f"checkpoint_every must be a positive number of rounds, got {every!r}."
            )
        self.estimator, self.data, self.path = estimator, data, path
        self.every, self.end_epoch, self.rounds = every, end_epoch, 0
        #: ``(epoch, round)`` a resume from the checkpoint at ``path`` starts from: the
        #: last one this writer wrote (set by the fit when it resumed from one).
        self.position = None

    def write(self, state, position) -> None:
        self.estimator._state = state
        write_checkpoint(self.path, self.estimator._fitted_arrays(),
                         _meta(self.estimator, self.data, position, self.end_epoch))
        self.position = tuple(position)
        self.estimator._on_checkpoint(state)

    def resume_hint(self) -> str:
        """How to continue a fit that stopped before its end (for error messages)."""
        if self.position is None:
            return (f"no checkpoint was written yet (the first is written after "
                    f"{self.every} round(s) at {str(self.path)!r}): fit again from the start")
        epoch, rnd = self.position
        return (f"resume from the checkpoint {str(self.path)!r} (epoch {epoch}, round "
                f"{rnd}): fit(..., checkpoint={str(self.path)!r}, resume=True), or "
                "`ooc-kernels train --checkpoint` with the same path")

    def __call__(self, state, info) -> None:
        self.rounds += 1
        if self.rounds % self.every == 0:
            self.write(state, info.next_position())


def lost_scheduler_hint(writer: CheckpointWriter | None, checkpoint, resumed: bool) -> str:
    """How to continue a fit whose scheduler was lost: the checkpoint to resume from (the
    last one written, or the one the fit resumed from), or that there is none.

    Examples
    --------
    >>> lost_scheduler_hint(None, None, False)
    'no checkpoint was in use: fit again from the start (pass checkpoint=PATH to be able to resume a fit)'
    """
    if writer is not None:
        return writer.resume_hint()
    if checkpoint is None:
        return ("no checkpoint was in use: fit again from the start (pass checkpoint=PATH "
                "to be able to resume a fit)")
    if resumed:
        return (f"the checkpoint {str(checkpoint)!r} is unchanged: resume from it again, "
                f"fit(..., checkpoint={str(checkpoint)!r}, resume=True)")
    return f"no checkpoint was written yet at {str(checkpoint)!r}: fit again from the start"


def _position(meta: dict, where: str) -> tuple[int, int]:
    position = meta.get("position")
    if not isinstance(position, dict):
        raise CheckpointError(f"{where}: its metadata has no 'position' mapping (found "
                              f"{position!r}); {_FIX}.")
    out = []
    for key in ("epoch", "round"):
        value = position.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CheckpointError(f"{where}: its position {key} must be an integer >= 0, "
                                  f"found {value!r}; {_FIX}.")
        out.append(value)
    return out[0], out[1]


def resume_end(estimator, meta: dict, where: str) -> int:
    """The epoch a fit resumed from a checkpoint with metadata ``meta`` ends at.

    A checkpoint records the end epoch of the fit that wrote it: ``max_iter`` for a fit from
    scratch, the epochs done before it plus ``max_iter`` for a ``warm_start`` continuation.
    The resumed fit ends ``max_iter`` epochs (the value set now: it may grow) after where
    the writing fit started, as the uninterrupted fit does.  A checkpoint without the entry
    (older versions) started at epoch 0.

    Raises
    ------
    CheckpointError
        ``end_epoch`` or the recorded ``max_iter`` is not an integer, or the recorded end
        lies before the recorded ``max_iter`` (a start before epoch 0).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> est = SimpleNamespace(max_iter=4)
    >>> resume_end(est, {"end_epoch": 6, "model": {"params": {"max_iter": 4}}}, "ck")
    6
    >>> resume_end(est, {"model": {"params": {"max_iter": 4}}}, "ck")
    4
    """
    recorded = meta.get("end_epoch", None)
    params = (meta.get("model") or {}).get("params") or {}
    if recorded is None:
        return int(estimator.max_iter)
    written_max = params.get("max_iter")
    for name, value in (("end_epoch", recorded), ("model.params.max_iter", written_max)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CheckpointError(f"{where}: its {name} must be an integer >= 0, found "
                                  f"{value!r}; {_FIX}.")
    if recorded < written_max:
        raise CheckpointError(f"{where}: its end_epoch {recorded} lies before its max_iter "
                              f"{written_max} (a fit starting before epoch 0); {_FIX}.")
    return recorded - written_max + int(estimator.max_iter)


def _rounds_per_epoch(estimator, model: dict, data, where: str) -> int:
    """Rounds of one epoch of the fit the checkpoint belongs to (its random seed picks the
    held-out chunks of ``early_stopping``)."""
    from ooc_kernels.parallel.plan import plan_epoch

    seed = model.get("base", {}).get("random_seed_") \
        if isinstance(model.get("base"), dict) else None
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise CheckpointError(f"{where}: its model's base.random_seed_ must be an integer "
                              f">= 0, found {seed!r}; {_FIX}.")
    probe = copy.copy(estimator)  # leaves the estimator untouched
    probe.random_seed_ = seed
    k = model["base"].get("chunks_per_round")  # the K the checkpointed fit resolved
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise CheckpointError(f"{where}: its model's base.chunks_per_round must be an "
                                  f"integer >= 1, found {k!r}; {_FIX}.")
        probe.chunks_per_round_ = k
    elif isinstance(getattr(estimator, "chunks_per_round", None), str):
        raise CheckpointError(f"{where}: it records no chunks_per_round, which this fit's "
                              f"chunks_per_round={estimator.chunks_per_round!r} needs to "
                              f"resume the same rounds; {_FIX}.")
    else:  # a checkpoint of an integer chunks_per_round: the parameter is K
        probe.chunks_per_round_ = None
    train, _ = probe._split_validation(data)
    shuffle_chunks = probe._resolve_shuffle_chunks(train)
    return len(plan_epoch(train.n_chunks, chunks_per_round=probe._tasks_per_round,
                          seed=0, epoch=0, shuffle=False, shuffle_chunks=shuffle_chunks))


def resume_position(estimator, ck: Checkpoint, data, path) -> tuple[int, int]:
    """Check that ``ck`` belongs to this fit, restore its model, return ``(epoch, round)``.

    Raises
    ------
    CheckpointMismatchError
        Different dataset (structure or contents), hyperparameters, estimator or library
        version; the message lists every difference.
    CheckpointError
        Metadata that this library does not write: a missing or malformed entry, a position
        outside the fit (a negative epoch, a round past the end of its epoch), a model that
        fails the checks of a loaded model.  The message names it.
    """
    where = f"checkpoint {str(path)!r}"
    meta = ck.meta
    model = meta.get("model")
    if not isinstance(model, dict):
        raise CheckpointError(f"{where}: its metadata has no 'model' mapping (found "
                              f"{model!r}); {_FIX}.")
    for key, node in (("model.params", model.get("params")), ("dataset", meta.get("dataset"))):
        if not isinstance(node, dict):
            raise CheckpointError(f"{where}: its metadata has no {key!r} mapping (found "
                                  f"{node!r}); {_FIX}.")
    position = _position(meta, where)
    problems = []
    if meta.get("library_version") != __version__:
        problems.append(f"library version: checkpoint written by ooc_kernels "
                        f"{meta.get('library_version')}, this is {__version__}")
    if model.get("estimator") != type(estimator).__name__:
        problems.append(f"estimator: checkpoint has {model.get('estimator')!r}, this fit is "
                        f"{type(estimator).__name__}")
    if not problems:  # same version and estimator: compare what they record
        # where the fits run and write (``_runtime_params``) is never compared: a
        # checkpoint's value of them is never used
        may_differ = set(estimator._resumable_params) | set(estimator._runtime_params)
        # a hyperparameter added since the checkpoint was written: the value that gives the
        # behaviour of the version that wrote it (the estimator's ``_absent_params``)
        recorded = {**getattr(estimator, "_absent_params", {}), **model["params"]}
        saved = {k: v for k, v in recorded.items() if k not in may_differ}
        now = {k: v for k, v in json_params(estimator).items() if k not in may_differ}
        problems += differences(saved, now, prefix="hyperparameter ")
        now = dataset_fingerprint(data)
        recorded = meta["dataset"].get("token") if isinstance(meta["dataset"], dict) else None
        if recorded != now["token"] and recorded == data.token:
            now = dict(now, token=recorded)  # a token naming the stores by their path
        problems += differences(meta["dataset"], now, prefix="dataset ")
        problems += resumed_labels_problem(model.get("base"), estimator)
        end = resume_end(estimator, meta, where)
        if position > (end, 0):
            problems.append(f"max_iter: the checkpoint is already at epoch {position[0]}, "
                            f"round {position[1]}, past this fit's "
                            f"max_iter={estimator.max_iter}" + (
                                "" if end == estimator.max_iter else
                                f" (a warm_start continuation ending at epoch {end})"))
    if problems:
        raise CheckpointMismatchError(
            f"cannot resume from checkpoint {str(path)!r}: " + "; ".join(problems)
            + f". Resume with the same data and hyperparameters, or pass {START_OVER} (or "
            "remove the checkpoint) to start again."
        )
    n_rounds = _rounds_per_epoch(estimator, model, data, where)
    if position[1] >= n_rounds:
        raise CheckpointError(
            f"{where}: its position is round {position[1]} of epoch {position[0]}, but an "
            f"epoch of this fit has {n_rounds} rounds (0 to {n_rounds - 1}); {_FIX}."
        )
    done = model.get("base", {}).get("n_epochs_done")
    if done != position[0]:
        raise CheckpointError(
            f"{where}: its position is epoch {position[0]}, but its model has "
            f"{done!r} epochs done; {_FIX}."
        )
    try:
        restore_model(model, ck.arrays, where=where, estimator=estimator)
    except ModelFormatError as err:
        raise CheckpointError(f"cannot resume: {err} Or {_FIX}.") from err
    return position
