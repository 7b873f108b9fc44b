"""Schema declarations: a dataset is a declared set of named variables with dims.

A :class:`Schema` is a tuple of :class:`Variable` s; a new kind of dataset is a new
declaration (:func:`register_schema`), not new code: the checker
(:func:`ooc_kernels.data.validate_dataset`), the writer
(:func:`ooc_kernels.data.write_chunks`), the generators and
:func:`ooc_kernels.data.inputs.as_chunked` work from it by variable name.  The registered
schemas, :data:`SUPERVISED`, :data:`FACTORIZED` and :data:`TRIPLETS`, are described in
:mod:`ooc_kernels.data.schema` and ``docs/data.md``.

Examples
--------
>>> from ooc_kernels.data.declarations import SCHEMAS
>>> for schema in SCHEMAS.values():
...     print(schema)
supervised: X(sample, feature), y(sample) [to fit]
factorized: U(sample, rank), V(rank, feature) [whole], y(sample) [to fit]
triplets: triplets(triplet, corner), triplet_task(triplet) [optional], X(sample, feature) [whole], y(sample) [whole] [optional]
>>> SUPERVISED["X"].dtype, SUPERVISED["y"].rule("classification")
('float32', ('biuUSO', 'integer'))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

from ..exceptions import ValidationError

__all__ = [
    "SCHEMA_VERSION", "SCHEMA_VERSION_ATTR", "SCHEMA_ATTR", "VARIABLES_ATTR",
    "DECLARATION_KEY", "X_NAME", "Y_NAME", "SAMPLE_DIM", "FEATURE_DIM", "TASKS",
    "Variable", "Schema", "SUPERVISED", "FACTORIZED", "TRIPLETS", "SCHEMAS",
    "get_schema", "register_schema", "infer_task", "make_attrs", "not_a_label",
]

#: Version of the on-disk layout written by this library.
SCHEMA_VERSION = 1
#: Group attribute holding the schema version (stores written by this library).
SCHEMA_VERSION_ATTR = "ooc_kernels_schema_version"
#: Group attribute naming the dataset's schema (optional; default ``"supervised"``).
SCHEMA_ATTR = "ooc_kernels_schema"
#: Attribute mapping schema variables to the dataset's own names, e.g. ``{"X": "features"}``.
VARIABLES_ATTR = "ooc_kernels_variables"
#: Key of a catalog entry's metadata declaring ``schema``, ``variables``, ``task``, ``classes``.
DECLARATION_KEY = "ooc_kernels"
X_NAME = "X"
Y_NAME = "y"
SAMPLE_DIM = "sample"
FEATURE_DIM = "feature"
#: Allowed values of the ``task`` attribute.
TASKS = ("classification", "regression")
_REQUIRED = ("always", "fit", "optional")
#: dtype classes a :class:`Variable` may require instead of one dtype.
_DTYPE_CLASSES = {"integer": "iu", "float": "f"}
_KIND_WORDS = {"b": "bool", "i": "integer", "u": "integer", "f": "float", "c": "complex",
               "U": "string", "S": "bytes", "O": "object"}
_LABELS, _NUMBERS = "biuUSO", "biuf"


@dataclass(frozen=True)
class Variable:
    """One declared variable of a :class:`Schema`.

    Parameters
    ----------
    name : str
        Canonical name (``"X"``); a dataset may hold it under another name, declared.
    dims : tuple of str
        Canonical dims.  For a variable that is not ``whole``, the first is the schema's
        sample axis.
    kinds : str, default "biuf"
        dtype kinds (``np.dtype.kind``) accepted in any dataset.
    dtype : str, optional
        What stores of this library must hold: a dtype (``"float32"``) or a dtype class
        (``"integer"``, ``"float"``).  Checked only when the dataset carries the
        schema-version attribute.
    by_task : mapping, optional
        ``task -> (kinds, dtype)`` replacing ``kinds``/``dtype`` when the task is known.
    whole : bool, default False
        Not chunked along the sample axis: given whole to every task (or gathered by index).
    chunked_along : str, optional
        For a whole variable, the one dim it may be chunked along (others: a single chunk).
    required : {"always", "fit", "optional"}, default "always"
        ``"fit"``: needed to fit, optional for prediction (targets).
    sizes : mapping, optional
        Fixed lengths of some dims (``{"corner": 3}``).
    doc : str
        What the variable holds, for messages.
    """

    name: str
    dims: tuple[str, ...]
    kinds: str = _NUMBERS
    dtype: str | None = None
    by_task: Mapping[str, tuple[str, str | None]] = field(default_factory=dict, hash=False)
    whole: bool = False
    chunked_along: str | None = None
    required: str = "always"
    sizes: Mapping[str, int] = field(default_factory=dict, hash=False)
    doc: str = ""

    def __post_init__(self):
        object.__setattr__(self, "dims", tuple(self.dims))
        object.__setattr__(self, "by_task", MappingProxyType(dict(self.by_task)))
        object.__setattr__(self, "sizes", MappingProxyType(dict(self.sizes)))
        if self.required not in _REQUIRED:
            raise ValueError(f"required={self.required!r} is not one of {list(_REQUIRED)}")
        if not self.dims or (self.chunked_along is not None
                             and (not self.whole or self.chunked_along not in self.dims)):
            raise ValueError(f"variable {self.name!r}: chunked_along must be one of the dims "
                             "of a whole variable")
        for _, dt in [(self.kinds, self.dtype), *self.by_task.values()]:
            if dt is not None and dt not in _DTYPE_CLASSES:
                np.dtype(dt)  # raises TypeError on a bad declaration

    @property
    def single_chunk_dims(self) -> tuple[str, ...]:
        """Dims that must be one chunk (all but the sample axis, or ``chunked_along``)."""
        if not self.whole:
            return self.dims[1:]
        if self.chunked_along is None:
            return ()
        return tuple(d for d in self.dims if d != self.chunked_along)

    def rule(self, task: str | None = None) -> tuple[str, str | None]:
        """``(kinds, dtype)`` for ``task`` (see ``by_task``)."""
        return tuple(self.by_task.get(task, (self.kinds, self.dtype)))

    def __str__(self) -> str:
        return f"{self.name}({', '.join(self.dims)})"


@dataclass(frozen=True)
class Schema:
    """A declared set of variables (see the module docstring).

    Parameters
    ----------
    name : str
    variables : sequence of Variable
        In order: the first variable that is not whole defines the sample chunks.
    sample_dim : str, default "sample"
        The axis that variables which are not ``whole`` are chunked along.
    target : str, optional
        The variable whose dtype gives the task (``"y"``).
    doc : str

    Examples
    --------
    >>> print(FACTORIZED)
    factorized: U(sample, rank), V(rank, feature) [whole], y(sample) [to fit]
    """

    name: str
    variables: tuple[Variable, ...]
    sample_dim: str = SAMPLE_DIM
    target: str | None = None
    doc: str = ""

    def __post_init__(self):
        object.__setattr__(self, "variables", tuple(self.variables))
        names = [v.name for v in self.variables]
        if len(set(names)) != len(names) or not names:
            raise ValueError(f"schema {self.name!r}: variable names must be unique, got {names}")
        for v in self.variables:
            if not v.whole and v.dims[0] != self.sample_dim:
                raise ValueError(f"schema {self.name!r}: variable {v.name!r} is not whole, so "
                                 f"its first dim must be {self.sample_dim!r}")
        if not any(not v.whole for v in self.variables):
            raise ValueError(f"schema {self.name!r} needs a variable along {self.sample_dim!r}")
        if self.target is not None and self.target not in names:
            raise ValueError(f"schema {self.name!r}: target {self.target!r} is not a variable")

    def __getitem__(self, name: str) -> Variable:
        for v in self.variables:
            if v.name == name:
                return v
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(v.name == name for v in self.variables)

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.variables]

    @property
    def dims(self) -> dict[str, tuple[str, ...]]:
        """Canonical dims of every variable (what :class:`ChunkedData` is given)."""
        return {v.name: v.dims for v in self.variables}

    @property
    def sample_variables(self) -> list[Variable]:
        return [v for v in self.variables if not v.whole]

    @property
    def whole_variables(self) -> list[Variable]:
        return [v for v in self.variables if v.whole]

    def required(self, require: Any = "fit") -> set[str]:
        """Names that must be present: ``"fit"``, ``"predict"`` or extra names."""
        if require in ("fit", "predict"):
            levels = ("always", "fit") if require == "fit" else ("always",)
            return {v.name for v in self.variables if v.required in levels}
        extra = {require} if isinstance(require, str) else set(require or ())
        unknown = sorted(extra - set(self.names))
        if unknown:
            raise ValidationError(f"require={unknown} names no variable of the {self.name!r} "
                                  f"schema ({self.names}); pass 'fit', 'predict' or names")
        return {v.name for v in self.variables if v.required == "always"} | extra

    def __str__(self) -> str:
        def tag(v):
            return (" [whole]" if v.whole else "") + {"fit": " [to fit]", "optional": " [optional]"
                                                       }.get(v.required, "")
        return f"{self.name}: " + ", ".join(f"{v}{tag(v)}" for v in self.variables)


def _target(whole: bool = False, required: str = "fit", dims=(SAMPLE_DIM,)) -> Variable:
    return Variable(Y_NAME, dims, kinds=_LABELS + "f", whole=whole, required=required,
                    chunked_along=SAMPLE_DIM if whole else None,
                    by_task={"classification": (_LABELS, "integer"),
                             "regression": (_NUMBERS, "float32")},
                    doc="the target" if not whole else "the labels of the points")


#: ``X(sample, feature)`` + ``y(sample)``.
SUPERVISED = Schema("supervised", (
    Variable(X_NAME, (SAMPLE_DIM, FEATURE_DIM), dtype="float32", doc="the feature matrix"),
    _target(),
), target=Y_NAME, doc="samples and their targets")
#: ``U(sample, rank)`` + ``V(rank, feature)`` (whole) + ``y(sample)``: ``A = U V``.
FACTORIZED = Schema("factorized", (
    Variable("U", (SAMPLE_DIM, "rank"), dtype="float32", doc="the left factor of A = U V"),
    Variable("V", ("rank", FEATURE_DIM), dtype="float32", whole=True,
             doc="the right factor of A = U V, given whole to every task"),
    _target(),
), target=Y_NAME, doc="a data matrix A = U V given by its factors, and targets")
#: ``triplets(triplet, corner=3)`` row indices into ``X(sample, feature)`` (whole).
TRIPLETS = Schema("triplets", (
    Variable("triplets", ("triplet", "corner"), kinds="iu", dtype="integer",
             sizes={"corner": 3},
             doc="(anchor, similar, dissimilar) row indices into X"),
    Variable("triplet_task", ("triplet",), kinds="iu", dtype="integer", required="optional",
             doc="the task (0..T-1) of each triplet, for multi-task metric learning"),
    Variable(X_NAME, (SAMPLE_DIM, FEATURE_DIM), dtype="float32", whole=True,
             chunked_along=SAMPLE_DIM, doc="the points the triplets index"),
    _target(whole=True, required="optional"),
), sample_dim="triplet", doc="similarity triplets over points, for metric learning")

#: Registered schemas by name.
SCHEMAS: dict[str, Schema] = {s.name: s for s in (SUPERVISED, FACTORIZED, TRIPLETS)}


def register_schema(schema: Schema) -> Schema:
    """Register ``schema`` under its name (a new schema is a declaration)."""
    SCHEMAS[schema.name] = schema
    return schema


def get_schema(schema: Schema | str | None = None, attrs: Mapping | None = None) -> Schema:
    """A :class:`Schema` from itself, its name, or a dataset's ``ooc_kernels_schema``
    attribute (default :data:`SUPERVISED`).

    Examples
    --------
    >>> get_schema("factorized").names
    ['U', 'V', 'y']
    """
    if isinstance(schema, Schema):
        return schema
    if schema is None:
        named = (attrs or {}).get(SCHEMA_ATTR)
        return SCHEMAS.get(named, SUPERVISED) if isinstance(named, str) else SUPERVISED
    if isinstance(schema, str) and schema in SCHEMAS:
        return SCHEMAS[schema]
    raise ValidationError(f"unknown schema {schema!r}; registered schemas: {sorted(SCHEMAS)}")


def infer_task(dtype: Any) -> str | None:
    """``"regression"`` for float targets, ``"classification"`` for labels, else None.

    Examples
    --------
    >>> infer_task("float32"), infer_task("int64"), infer_task("<U3")
    ('regression', 'classification', 'classification')
    """
    kind = np.dtype(dtype).kind
    return "regression" if kind == "f" else "classification" if kind in _LABELS else None


def make_attrs(task: str, *, classes: Sequence[Any] | None = None, **provenance: Any) -> dict:
    """Build the group attributes of a dataset written by this library.

    Parameters
    ----------
    task : {"classification", "regression"}
    classes : sequence, optional
        Label values; stored sorted and de-duplicated (omit them to let the estimators find
        the labels in ``y``).
    **provenance
        Free JSON-serialisable attributes (``generator``, ``random_state`` ...).

    Returns
    -------
    dict

    Examples
    --------
    >>> make_attrs("classification", classes=[1, 0], split="train")["classes"]
    [0, 1]
    """
    if task not in TASKS:
        raise ValidationError(f"task={task!r} is not supported; use one of {list(TASKS)}")
    attrs: dict[str, Any] = {SCHEMA_VERSION_ATTR: SCHEMA_VERSION, "task": task}
    if classes is not None:
        if len(classes) == 0:
            raise ValidationError("classes is empty; pass the list of label values or None")
        attrs["classes"] = sorted({_plain(c) for c in classes})
    attrs.update(provenance)
    return attrs


def _plain(value: Any) -> Any:
    """NumPy scalars -> Python scalars (JSON-serialisable attributes)."""
    return value.item() if isinstance(value, np.generic) else value


def not_a_label(value: Any) -> bool:
    """Whether a class label is a number no classifier can hold as a class: a float that is
    NaN, infinite, a fraction or beyond 2**53 (scikit-learn reads such labels as continuous
    targets).  Integers and strings are labels."""
    value = _plain(value)
    return isinstance(value, float) and not (
        value == value and abs(value) <= 2.0**53 and value.is_integer())
