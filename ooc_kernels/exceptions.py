"""The library's exception hierarchy.

Every error raised on bad user input is an :class:`OocKernelsError` that also subclasses
the matching built-in (``ValueError``, ``KeyError``, ``FileExistsError`` ...), so callers can
catch either.  Messages follow one rule: *what is wrong, the offending value, how to fix it*.

Examples
--------
>>> from ooc_kernels.exceptions import SchemaError, OocKernelsError
>>> try:
...     raise SchemaError("variable 'X' has dims ('a',); expected ('sample', 'feature')")
... except ValueError as err:
...     isinstance(err, OocKernelsError)
True
"""

from __future__ import annotations

__all__ = [
    "OocKernelsError",
    "ValidationError",
    "InputTypeError",
    "SchemaError",
    "InvalidDataError",
    "CorruptChunkError",
    "DataChangedError",
    "CatalogError",
    "UnknownEntryError",
    "UntrustedCatalogError",
    "PipelineConfigError",
    "ModelFormatError",
    "DatasetExistsError",
    "WriteFailedError",
    "DivergenceError",
    "ModelTooLargeError",
    "SchedulerLostError",
    "UnresolvedParameterError",
    "InvalidParameterError",
    "PathEscapeError",
    "ForeignPathError",
    "ModelPathError",
    "CheckpointError",
    "CheckpointMismatchError",
    "CheckpointInUseError",
    "WorkStoreInUseError",
    "RegistryError",
    "OocKernelsWarning",
    "StepSizeWarning",
]


class OocKernelsError(Exception):
    """Base class of every error the library raises on purpose."""


class ValidationError(OocKernelsError, ValueError):
    """An argument or input has a wrong value, shape, dtype or type."""


class InvalidParameterError(ValidationError, TypeError):
    """A hyperparameter has a value outside its declared constraints.

    Raised by every estimator's parameter validation with one message format: "The 'alpha'
    parameter of DSGRegressor must be a float in the range [0.0, inf). Got -1 instead."
    """


class InputTypeError(ValidationError, TypeError):
    """An input has values of a type that cannot be used at all (e.g. dicts in X)."""


class SchemaError(ValidationError):
    """A dataset does not follow the ``ooc_kernels`` Zarr schema (variables, dims, dtypes, chunks)."""


class InvalidDataError(ValidationError):
    """Values inside a chunk are unusable (NaN/inf, labels outside the declared classes ...)."""


class CorruptChunkError(InvalidDataError):
    """A chunk of a Zarr store is missing, truncated or fails its checksum.

    The message names the variable, the chunk index, the chunk file, the store and the
    fix (regenerate or restore the store).
    """


class DataChangedError(InvalidDataError):
    """A Zarr store was replaced, or its metadata rewritten, while a fit was reading it.

    Every chunk read checks that the variable's metadata file is still the one that was
    there when the data was opened, so a fit never mixes the rows of two datasets.  The
    message names the store and the variable; re-open the data and re-run the fit on the
    new store, and write new data to another path while a fit reads the old one.
    """


class CatalogError(OocKernelsError, ValueError):
    """An Intake catalog cannot be read or used."""


class UnknownEntryError(CatalogError, KeyError):
    """A catalog has no entry of the requested name."""

    def __str__(self) -> str:  # KeyError would otherwise print the repr of the message
        return str(self.args[0]) if self.args else ""


class PathEscapeError(CatalogError):
    """A catalog entry's data lies outside the catalog's folder and this was not allowed.

    Raised by every function of :mod:`ooc_kernels.data.catalog` (reading and
    :func:`~ooc_kernels.data.catalog.register_dataset`); pass ``allow_outside=True``, a list
    of allowed folders, or ``trusted=True``.
    """


class UntrustedCatalogError(CatalogError):
    """A catalog uses a reader outside the allow-list and was not opened with ``trusted=True``."""


class PipelineConfigError(OocKernelsError, ValueError):
    """A pipeline YAML file is invalid (unknown key, wrong type, missing value)."""


class ModelFormatError(OocKernelsError, ValueError):
    """A saved model is missing, corrupt, or written by an incompatible library version."""


class ForeignPathError(OocKernelsError, FileExistsError):
    """The target of a write exists and is not a store of the same kind that this library wrote.

    Only a store this library wrote and marked as being of the kind being written (a model,
    a checkpoint, a prediction store, a dataset) is ever replaced, and only when the caller
    asked for it; a folder of other files, a plain file, a Zarr store of someone else or a
    symbolic link is never replaced.  Choose another path, or move the existing one aside.
    """


class ModelPathError(ForeignPathError):
    """The target of a save exists and is not a model this library wrote."""


class CheckpointError(ValidationError):
    """A checkpoint cannot be read (corrupt, or not a checkpoint)."""


class CheckpointMismatchError(ValidationError):
    """A checkpoint belongs to another dataset, other hyperparameters or another version."""


class WorkStoreInUseError(OocKernelsError, RuntimeError):
    """A work store (the chunk-local arrays of a fit) is locked by another fit that is
    using it; two fits never share one."""


class CheckpointInUseError(CheckpointError):
    """A checkpoint is being written by another fit right now (it holds the checkpoint's
    lock): wait for that fit to end, or use another checkpoint path."""


class RegistryError(OocKernelsError, KeyError):
    """No estimator or solver is registered under a name (or a name is registered twice)."""

    def __str__(self) -> str:  # KeyError would otherwise print the repr of the message
        return str(self.args[0]) if self.args else ""


class DatasetExistsError(OocKernelsError, FileExistsError):
    """The output path of a write already exists and overwriting was not asked for."""


class WriteFailedError(OocKernelsError, OSError):
    """The file system refused a write of the library (a full disk, a quota, a file size
    limit, a read-only or forbidden folder): the message names the path and says that
    nothing was replaced.  ``errno`` is the file system's."""


class DivergenceError(OocKernelsError, FloatingPointError):
    """A fit produced non-finite coefficients (overflow): the step size is too large for the
    scale of the data (lower ``eta0``, raise ``t0`` or standardize ``X``/``y``)."""


class ModelTooLargeError(ValidationError, MemoryError):
    """Hyperparameters whose model or step would need more memory than the machine has
    (e.g. ``n_features=1e12``): refused before anything is allocated, naming the value, the
    bytes it needs and what to lower."""


class SchedulerLostError(OocKernelsError, ConnectionError):
    """The Dask scheduler a fit ran on went away (killed, closed, unreachable) mid-fit.

    Raised within about a second of the Client noticing, instead of Dask's
    ``FutureCancelledError`` or a wait without end; the message names the scheduler and,
    when the fit writes a checkpoint, the checkpoint to resume from and its position.
    """


class UnresolvedParameterError(OocKernelsError, AttributeError):
    """A value that a fit resolves from its scheduler or data (e.g. the ``K`` of
    ``chunks_per_round="auto"``) was read before any fit: an ``AttributeError`` as well, so
    ``hasattr`` and ``dir`` (which scikit-learn and dask-ml call on unfitted estimators) see
    the value as absent."""


class OocKernelsWarning(UserWarning):
    """Base class of the library's warnings."""


class StepSizeWarning(OocKernelsWarning):
    """A step-size schedule outside the range where the convergence theorems hold."""
