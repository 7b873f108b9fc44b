"""The one checker behind every schema: all problems of a dataset, from metadata alone.

:func:`check_arrays` reads the dims, shapes, dtypes and chunks of named arrays (an xarray
Dataset's variables, DataArrays, the arrays of a Zarr group) and checks them against a
:class:`~ooc_kernels.data.declarations.Schema`: missing variables (listing what the dataset
has), dims, dtype kinds, chunks along a dim that must be one chunk, sample chunks that
differ, lengths, empty dims and the library's attributes when present.  Every problem is
collected and one :class:`~ooc_kernels.exceptions.SchemaError` lists them, each with the fix
that works for the input (:class:`~ooc_kernels.data._fixes.Context`).  It never reads array
data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..exceptions import SchemaError
from . import _fixes as fix
from ._fixes import Context
from .declarations import (
    _DTYPE_CLASSES,
    _KIND_WORDS,
    SAMPLE_DIM,
    SCHEMA_ATTR,
    SCHEMA_VERSION,
    SCHEMA_VERSION_ATTR,
    SCHEMAS,
    TASKS,
    VARIABLES_ATTR,
    Schema,
    Variable,
    _plain,
    get_schema,
    infer_task,
    not_a_label,
)

__all__ = ["ArrayInfo", "Resolved", "check_arrays"]


class ArrayInfo(NamedTuple):
    """The metadata the checker reads: dims, shape, dtype and chunks (None: in memory)."""

    dims: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: np.dtype
    chunks: tuple[tuple[int, ...], ...] | None

    @classmethod
    def of(cls, obj: Any, dims: Sequence[str] | None = None) -> ArrayInfo:
        """From an xarray object, a Dask or NumPy array (``dims`` for plain arrays)."""
        dims = tuple(map(str, getattr(obj, "dims", None) or dims or ()))
        chunks = getattr(obj, "chunks", None)
        if isinstance(chunks, Mapping):  # an xarray Dataset's chunks: not an array
            raise TypeError("ArrayInfo.of needs one array")
        if chunks is not None and not isinstance(obj, np.ndarray):
            chunks = tuple(tuple(int(c) for c in cs) for cs in chunks)
        else:
            chunks = None
        return cls(dims, tuple(int(n) for n in obj.shape), np.dtype(obj.dtype), chunks)


class Resolved(NamedTuple):
    """What the checker found: ``names`` (schema variable -> dataset variable, those
    present), ``dims`` (canonical dim -> dataset dim), ``library`` (strict rules) and
    ``task`` (given, valid, or None)."""

    names: dict[str, str]
    dims: dict[str, str]
    library: bool
    task: str | None


def _dtype_words(kinds: str, dtype: str | None) -> str:
    if dtype in _DTYPE_CLASSES:
        return f"an {dtype} dtype" if dtype[0] in "aeiou" else f"a {dtype} dtype"
    if dtype is not None:
        return f"dtype {dtype}"
    words = list(dict.fromkeys(_KIND_WORDS[k] for k in kinds if k in _KIND_WORDS))
    text = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
    return f"{'an' if text[0] in 'aeiou' else 'a'} {text} dtype"


def _dtype_ok(dt: np.dtype, kinds: str, dtype: str | None) -> bool:
    if dtype in _DTYPE_CLASSES:
        return dt.kind in _DTYPE_CLASSES[dtype]
    if dtype is not None:
        return dt == np.dtype(dtype)
    return dt.kind in kinds


def _short(chunks: tuple[int, ...]) -> str:
    if len(chunks) <= 6:
        return str(chunks)
    return f"({', '.join(map(str, chunks[:3]))}, ..., {chunks[-1]}) [{len(chunks)} chunks]"


class _Checker:
    """Collects every problem of one dataset (see :func:`check_arrays`)."""

    def __init__(self, schema, arrays, attrs, listed, require, variables, ctx):
        self.schema, self.arrays, self.attrs = schema, arrays, dict(attrs or {})
        self.listed, self.ctx = listed, ctx
        self.required = schema.required(require)
        self.declared = variables if variables is not None else self.attrs.get(VARIABLES_ATTR)
        self.library = SCHEMA_VERSION_ATTR in self.attrs
        self.problems: list[str] = []
        self.names: dict[str, str] = {}
        self.dims: dict[str, str] = {}
        self.dim_source: dict[str, str] = {}  # the variable that named each dim
        self.transposed: set[str] = set()  # variables whose dims look transposed
        self.task: str | None = None

    def problem(self, text: str) -> None:
        self.problems.append(text)

    def label(self, name: str) -> str:
        user = self.names.get(name, name)
        return f"variable {user!r}" if user == name else f"variable {user!r} ({name})"

    def run(self) -> Resolved:
        self.check_attrs()
        self.check_declaration()
        present = []
        for v in self.schema.variables:
            user = self.names[v.name]
            if user not in self.arrays:
                if v.name in self.required:
                    self.missing(v, user)
                continue
            info = self.arrays[user]
            if self.check_dims(v, info):
                present.append((v, info))
            self.check_dtype(v, info)
        reported: set[str] = set()
        for v, info in present:
            self.check_sizes(v, info, reported)
        self.check_lengths(present)
        self.check_sample_chunks(present)
        names = {v.name: self.names[v.name] for v in self.schema.variables
                 if self.names[v.name] in self.arrays}
        return Resolved(names, dict(self.dims), self.library, self.task)

    # --- attributes and declaration ------------------------------------------------------
    def check_attrs(self) -> None:
        a, ctx = self.attrs, self.ctx
        if SCHEMA_VERSION_ATTR in a:
            version = a[SCHEMA_VERSION_ATTR]
            if isinstance(version, bool) or not isinstance(version, (int, np.integer)):
                self.problem(f"dataset attribute {SCHEMA_VERSION_ATTR!r} must be an int, found "
                             f"{version!r}; set it to {SCHEMA_VERSION}: "
                             + fix.attribute(ctx, SCHEMA_VERSION_ATTR, str(SCHEMA_VERSION),
                                             optional=False))
            elif not 1 <= int(version) <= SCHEMA_VERSION:
                self.problem(f"unsupported schema version {SCHEMA_VERSION_ATTR}={version!r}; "
                             f"this version of ooc_kernels reads versions 1..{SCHEMA_VERSION}: "
                             "upgrade ooc_kernels or rewrite the dataset")
        named = a.get(SCHEMA_ATTR)
        if named is not None and named != self.schema.name:
            self.problem(f"dataset attribute {SCHEMA_ATTR!r} is {named!r}, but the dataset is "
                         f"read with the {self.schema.name!r} schema; pass schema={named!r} "
                         f"(registered schemas: {sorted(SCHEMAS)})")
        if "task" in a:
            if a["task"] in TASKS:
                self.task = a["task"]
            else:
                self.problem(f"dataset attribute 'task' must be one of {list(TASKS)}, found "
                             f"{a['task']!r}; " + fix.attribute(ctx, "task", repr(TASKS[0])))
        if "classes" in a:
            classes = a["classes"]
            if isinstance(classes, (str, bytes)) or not isinstance(classes, Iterable) \
                    or len(list(classes)) == 0:
                self.problem(f"dataset attribute 'classes' must be the non-empty list of label "
                             f"values, found {classes!r}; "
                             + fix.attribute(ctx, "classes", "[0, 1, ...]"))
            else:
                classes = [_plain(c) for c in classes]
                try:
                    good = sorted(set(classes))
                except TypeError:
                    good = None
                if classes != good:
                    self.problem(f"dataset attribute 'classes' must be sorted and unique, found "
                                 f"{classes!r}; " + fix.attribute(ctx, "classes",
                                                                  repr(good or [0, 1, ...])))
                odd = [c for c in classes if not_a_label(c)]
                if odd:
                    self.problem(f"dataset attribute 'classes' must be labels, integers or "
                                 f"strings, found {odd[0]!r} in {classes!r}; a label is not a "
                                 "fraction, infinite, NaN or beyond 2**53; "
                                 + fix.attribute(ctx, "classes", "[0, 1, ...]"))

    def check_declaration(self) -> None:
        self.names = {n: n for n in self.schema.names}
        decl = self.declared
        if decl is None:
            return
        if not isinstance(decl, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in decl.items()):
            self.problem(f"the variable declaration must map the schema's variables to the "
                         f"dataset's, found {decl!r}; {fix.declaration(self.ctx)}")
            return
        unknown = sorted(set(decl) - set(self.schema.names))
        if unknown:
            self.problem(f"the variable declaration {dict(decl)!r} names {unknown}, which the "
                         f"{self.schema.name!r} schema does not have (its variables: "
                         f"{self.schema.names}); {fix.declaration(self.ctx)}")
        self.names.update({k: v for k, v in decl.items() if k in self.schema})

    # --- one variable --------------------------------------------------------------------
    def missing(self, v: Variable, user: str) -> None:
        have = {n: self.arrays[n].dims for n in self.listed if n in self.arrays}
        used = set(self.names.values())   # variable names of the declaration, no data
        candidates = [n for n, d in have.items() if len(d) == len(v.dims) and n not in used]
        need = (f"the dataset needs a {len(v.dims)}-D variable {v.name!r} {v.dims}"
                if user == v.name else
                f"the {len(v.dims)}-D variable declared for {v.name!r} is not in the dataset")
        names = list(have)[:12]
        more = f" and {len(have) - 12} more" if len(have) > 12 else ""
        shown = {n: have[n] for n in names}
        stack = ""
        if len(v.dims) == 2 and not candidates:   # one 1-D variable per feature?
            columns = [n for n, d in have.items() if len(d) == 1 and n not in used]
            dim = have[columns[0]][0] if columns else None
            columns = [n for n in columns if have[n] == (dim,)]
            if len(columns) >= 2:
                stack = "; " + fix.stack(self.ctx, v.name, columns, dim)
        self.problem(f"{self.label(v.name)}: expected a data variable ({v.doc}), found "
                     f"variables {names}{more} (dims {shown}); {need}: "
                     + fix.missing(self.ctx, v.name, candidates, v.name == self.schema.target)
                     + stack)

    def check_dims(self, v: Variable, info: ArrayInfo) -> bool:
        user = self.names[v.name]
        if self.library:
            if info.dims != v.dims:
                self.problem(f"{self.label(v.name)}: expected dims {v.dims}, found dims "
                             f"{info.dims}; {fix.dims(self.ctx, user, v.dims, info.dims)}")
                return False
            self.dims.update({d: d for d in v.dims})
            return True
        if len(info.dims) != len(v.dims):
            self.problem(f"{self.label(v.name)}: expected {len(v.dims)} dims {v.dims}, found "
                         f"dims {info.dims}; {fix.dims(self.ctx, user, v.dims, info.dims)}")
            return False
        if info.dims != v.dims and sorted(info.dims) == sorted(v.dims) \
                and not any(c in self.dim_source for c in v.dims):
            # the schema's own dim names in another order (X as 'feature' x 'sample'): read
            # by position, the features would be taken for the samples (a variable whose
            # dims another one named already gets the message below, which names that one)
            self.problem(f"{self.label(v.name)}: expected dims {v.dims}, found dims "
                         f"{info.dims}, the same names in another order; "
                         f"{fix.dims(self.ctx, user, v.dims, info.dims)}")
            return False
        inverse = {u: c for c, u in self.dims.items()}
        expected = tuple(self.dims.get(c, u if inverse.get(u, c) == c else c)
                         for c, u in zip(v.dims, info.dims))
        if expected != info.dims:
            shared = sorted({self.names[self.dim_source[c]] for c in v.dims
                             if c in self.dim_source})
            why = f", shared with {', '.join(map(repr, shared))}" if shared else ""
            remedy = (self.transposed_source(v, info)
                      or fix.dims(self.ctx, user, expected, info.dims))
            self.problem(f"{self.label(v.name)}: expected dims {expected} (its dims by "
                         f"position{why}), found dims {info.dims}; {remedy}")
            return False
        for c, u in zip(v.dims, info.dims):
            self.dims.setdefault(c, u)
            self.dim_source.setdefault(c, v.name)
        return True

    def transposed_source(self, v: Variable, info: ArrayInfo) -> str | None:
        """The fix when ``v``'s dims are those of the variable that named them, in another
        order (``X`` given as features x samples, ``y`` along the samples): transpose that
        variable, not ``v``.  None when that is not the case."""
        sources = {self.dim_source[c] for c in v.dims if c in self.dim_source}
        if len(sources) != 1:
            return None
        source = next(s for s in self.schema.variables if s.name == sources.pop())
        have = [self.dims[c] for c in source.dims]
        order = list(have)
        for c, u in zip(v.dims, info.dims):
            if c not in source.dims or u not in have:
                return None
            i, j = source.dims.index(c), order.index(u)
            order[i], order[j] = order[j], order[i]
        if order == have:
            return None
        name = self.names[source.name]
        self.transposed.add(source.name)
        return (f"the dims of {name!r} look transposed ({tuple(have)}): "
                + fix.dims(self.ctx, name, tuple(order), tuple(have)))

    def check_dtype(self, v: Variable, info: ArrayInfo) -> None:
        task, suffix = None, ""
        if v.name == self.schema.target:
            task = self.task or infer_task(info.dtype)
            suffix = f" for task={task!r}" if task else ""
        kinds, dtype = v.rule(task)
        strict = dtype if self.library else None
        if _dtype_ok(info.dtype, kinds, strict):
            return
        user = self.names[v.name]
        integer = strict == "integer" or ("f" not in kinds and "i" in kinds)
        to = strict if strict not in (None, *_DTYPE_CLASSES) else \
            ("int32" if integer else "float32")
        how = (fix.dtype(self.ctx, user, to, "encode labels as integers, e.g.")
               if integer and v.name == self.schema.target else fix.dtype(self.ctx, user, to))
        self.problem(f"{self.label(v.name)}: expected {_dtype_words(kinds, strict)}{suffix}, "
                     f"found {info.dtype}; {how}")

    def check_sizes(self, v: Variable, info: ArrayInfo, reported: set[str]) -> None:
        user = self.names[v.name]
        zero = [c for c, n in zip(v.dims, info.shape) if n == 0]
        if zero and not set(zero) <= reported:
            reported.update(zero)
            self.problem(f"{self.label(v.name)}: expected at least one "
                         f"{' and one '.join(v.dims)}, found shape {info.shape}; "
                         f"{fix.empty(self.ctx)}")
        for c, n in v.sizes.items():
            i = v.dims.index(c)
            if info.shape[i] != n:
                self.problem(f"{self.label(v.name)}: expected length {n} along "
                             f"{info.dims[i]!r}, found {info.shape[i]}; "
                             f"{fix.size(self.ctx, user, info.dims[i], n)}")
        if info.chunks is None or v.name in self.transposed:
            return  # a transposed variable: its chunks are judged once it is transposed
        for c in v.single_chunk_dims:
            i = v.dims.index(c)
            if len(info.chunks[i]) > 1:
                self.problem(f"{self.label(v.name)}: expected a single chunk along "
                             f"{info.dims[i]!r}, found {len(info.chunks[i])} chunks "
                             f"{_short(info.chunks[i])}; "
                             f"{fix.one_chunk(self.ctx, user, info.dims[i], i)}"
                             f"{self.rows_along_second_dim(v, info, i)}")

    def rows_along_second_dim(self, v: Variable, info: ArrayInfo, i: int) -> str:
        """For a 2-D variable chunked along its second dim ``i`` but in one chunk along its
        first (the sample axis), which is the shorter: the other fix, when the rows are
        along the second dim (``X`` given as features x samples, e.g. a DataArray with its
        dims in the other order and no ``y`` to tell), a transpose.  "" otherwise."""
        if (len(v.dims) != 2 or v.whole or i != 1 or len(info.chunks[0]) != 1
                or info.shape[0] >= info.shape[1]):
            return ""
        user = self.names[v.name]
        have = tuple(info.dims)
        return (f"; but if the samples are along {have[1]!r} ({user!r} holds "
                f"{info.shape[0]} x {info.shape[1]} values, {have[0]!r} x {have[1]!r}: it "
                f"looks transposed), {fix.dims(self.ctx, user, (have[1], have[0]), have)}")

    # --- across variables ----------------------------------------------------------------
    def check_lengths(self, present) -> None:
        first: dict[str, tuple[str, int]] = {}
        self.bad_length: set[str] = set()
        for v, info in present:
            for c, n in zip(v.dims, info.shape):
                if c not in first:
                    first[c] = (v.name, n)
                    continue
                other, m = first[c]
                if n == m:
                    continue
                self.bad_length.add(v.name)
                what = "samples" if c == SAMPLE_DIM else f"entries along {self.dims[c]!r}"
                self.problem(f"{self.label(v.name)}: expected {m} {what} (the length of "
                             f"{self.names[other]!r}), found {n}; "
                             f"{fix.length(self.ctx, self.names[other], self.names[v.name])}")

    def check_sample_chunks(self, present) -> None:
        ref = None
        for v, info in present:
            if v.whole or info.chunks is None or v.name in self.bad_length:
                continue
            if ref is None:
                ref = (v, info.chunks[0])
                continue
            if info.chunks[0] != ref[1]:
                first = self.names[ref[0].name]
                self.problem(f"{self.label(v.name)}: expected the same sample chunks as "
                             f"{first!r} {_short(ref[1])}, found {_short(info.chunks[0])}; "
                             + fix.sample_chunks(self.ctx, self.names[v.name], first,
                                                 self.dims.get(self.schema.sample_dim,
                                                               self.schema.sample_dim)))


def _raise(problems: list[str], ctx: Context) -> None:
    if not problems:
        return
    if len(problems) == 1:
        err = SchemaError(problems[0])
    else:
        lines = "\n".join(f"  {i}. {p}" for i, p in enumerate(problems, 1))
        err = SchemaError(f"{ctx.where} has {len(problems)} problems:\n{lines}")
    err.problems = list(problems)
    raise err


def check_arrays(arrays: Mapping[str, Any], schema: Schema | str | None = None, *,
                 attrs: Mapping | None = None, require: Any = "fit",
                 variables: Mapping[str, str] | None = None, context: Any = None,
                 listed: Sequence[str] | None = None) -> Resolved:
    """Check named arrays' metadata against ``schema``; raise every problem at once.

    The generic checker behind :func:`validate_dataset`, for inputs that are not a Dataset
    (xarray DataArrays, the arrays of a Zarr group).

    Parameters
    ----------
    arrays : mapping of str to ArrayInfo or array
        The dataset's variables by name (xarray objects carry their dims; give plain
        arrays as :class:`ArrayInfo`).
    schema, require, variables, context
        See :func:`validate_dataset`.
    attrs : mapping, optional
        The dataset's attributes.
    listed : sequence of str, optional
        The names to list when a variable is missing (default: all of ``arrays``).

    Returns
    -------
    Resolved

    Examples
    --------
    >>> import dask.array as da, xarray as xr
    >>> X = xr.DataArray(da.zeros((6, 4), chunks=(3, 2)), dims=("time", "channel"))
    >>> check_arrays({"X": X}, require="predict", context="dataarray")
    Traceback (most recent call last):
    ...
    ooc_kernels.exceptions.SchemaError: variable 'X': expected a single chunk along 'channel', found 2 chunks (2, 2); rechunk with X = X.chunk({'channel': -1})
    """
    schema = get_schema(schema, attrs)
    ctx = Context.of(context)
    infos = {str(k): a if isinstance(a, ArrayInfo) else ArrayInfo.of(a)
             for k, a in arrays.items()}
    checker = _Checker(schema, infos, attrs, list(listed if listed is not None else infos),
                       require, variables, ctx)
    resolved = checker.run()
    _raise(checker.problems, ctx)
    return resolved
