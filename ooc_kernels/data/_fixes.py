"""Where a dataset came from, and the fix that works for it, for the schema checker.

A dataset can reach the checker as an xarray ``Dataset`` the caller holds (fix it in memory:
``ds.chunk({...})``, ``ds["X"] = ds.X.astype(...)``), as a store on disk (opened by
:func:`~ooc_kernels.data.open_zarr_dataset` or a catalog entry, which raise before the caller
holds anything: rewrite the store, set its attributes on disk, declare its names), or as
arrays (Dask arrays: ``X.rechunk({1: -1})``; xarray DataArrays: ``X.chunk({"time": -1})``).
:class:`Context` names the case; the functions below word each fix for it.

Examples
--------
>>> from ooc_kernels.data._fixes import Context, one_chunk
>>> one_chunk(Context(), "X", "feature", 1)
"rechunk with ds.chunk({'feature': -1})"
>>> one_chunk(Context("dask"), "X", "feature", 1)
'rechunk with X = X.rechunk({1: -1})'
>>> one_chunk(Context("dataarray"), "X", "channel", 1)
"rechunk with X = X.chunk({'channel': -1})"
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

__all__ = ["Context", "CONTEXT_KINDS"]

#: How a dataset reached the checker (see :class:`Context`).
CONTEXT_KINDS = ("xarray", "store", "catalog", "dask", "dataarray")

_REWRITE = ".drop_encoding().to_zarr(NEW_PATH)"


@dataclass(frozen=True)
class Context:
    """How a dataset reached the checker, so that each fix is one that works for it.

    Parameters
    ----------
    kind : {"xarray", "store", "catalog", "dask", "dataarray"}, default "xarray"
        ``"xarray"``: a Dataset the caller holds in memory (lazy or not); ``"store"``: a
        Zarr store opened from ``path``; ``"catalog"``: catalog entry ``entry`` reading the
        store ``path``; ``"dask"`` / ``"dataarray"``: arrays passed as ``X``, ``y`` ...
    path : str, optional
        The store.
    entry : str, optional
        The catalog entry.
    catalog : str, optional
        The catalog file holding ``entry``.
    """

    kind: str = "xarray"
    path: str | None = None
    entry: str | None = None
    catalog: str | None = None

    def __post_init__(self):
        if self.kind not in CONTEXT_KINDS:
            raise ValueError(f"context kind {self.kind!r} is not one of {list(CONTEXT_KINDS)}")

    @classmethod
    def of(cls, value: Any) -> Context:
        """A :class:`Context` from None (``"xarray"``), a kind, or a store path."""
        if value is None:
            return cls()
        if isinstance(value, Context):
            return value
        if isinstance(value, str) and value in CONTEXT_KINDS:
            return cls(value)
        if isinstance(value, (str, bytes, os.PathLike)):
            return cls("store", path=os.fsdecode(os.fspath(value)))
        raise TypeError(f"context must be a Context, one of {list(CONTEXT_KINDS)} or a "
                        f"store path, got {value!r}")

    @property
    def on_disk(self) -> bool:
        return self.kind in ("store", "catalog")

    @property
    def arrays(self) -> bool:
        return self.kind in ("dask", "dataarray")

    @property
    def where(self) -> str:
        """The dataset in words, for the head of a message with several problems."""
        if self.kind == "catalog":
            return f"catalog entry {self.entry!r} (store {self.path!r})"
        if self.kind == "store":
            return f"the store {self.path!r}"
        if self.arrays:
            return "the arrays"
        return "the dataset"

    def _store(self) -> str:
        return repr(self.path) if self.path else "PATH"

    def rewrite(self, ops: str) -> str:
        """How to rewrite the store with ``ops`` applied to the opened Dataset."""
        tail = " and point the entry at NEW_PATH" if self.kind == "catalog" else ""
        return f"rewrite the store: xr.open_zarr({self._store()}){ops}{_REWRITE}{tail}"


def ref(ctx: Context, name: str) -> str:
    """The expression for variable ``name``: ``ds.X``, ``ds['my var']``, or the argument."""
    if ctx.arrays:
        return name
    return f"ds.{name}" if name.isidentifier() else f"ds[{name!r}]"


def _declare(ctx: Context, pairs: dict[str, str]) -> str:
    """How to declare which dataset variables hold the schema's variables."""
    py = "{" + ", ".join(f"{k!r}: {v!r}" for k, v in pairs.items()) + "}"
    yml = "{" + ", ".join(f"{k}: {v}" for k, v in pairs.items()) + "}"
    meta = f"the entry's metadata ooc_kernels: {{variables: {yml}}}"
    if ctx.kind == "catalog":
        cat = ctx.catalog or "CATALOG"
        entry = ctx.entry or "ENTRY"
        opts = " ".join(f"--var {k}={v}" for k, v in pairs.items())
        return (f"declare the names in {meta}: ooc-kernels catalog declare {cat} {entry} "
                f"{opts} (Python: ooc_kernels.data.declare_dataset({cat!r}, {entry!r}, "
                f"variables={py})), or name them for one command (train, evaluate, predict "
                f"{opts}; a pipeline's data.variables: {yml}; open_dataset(..., "
                f"variables={py}))")
    if ctx.kind == "store":
        return (f"declare the names: open_zarr_dataset({ctx._store()}, variables={py}), or "
                f"in a catalog entry's metadata ooc_kernels: {{variables: {yml}}}")
    return f"declare the names: ds.attrs['ooc_kernels_variables'] = {py}"


def missing(ctx: Context, name: str, candidates: list[str], target: bool) -> str:
    """Fix for a schema variable the dataset does not have."""
    cand = candidates[0] if len(candidates) == 1 else "NAME"
    if ctx.arrays:
        return f"pass {name}"
    declare = _declare(ctx, {name: cand})
    if ctx.on_disk:
        return declare
    rename = f"ds = ds.rename({{{cand!r}: {name!r}}})"
    if target:
        return (f"add the targets as ds[{name!r}], name them ({rename}), {declare}, or pass "
                "them separately as y; prediction inputs need none (require_y=False)")
    return f"name it ({rename}) or {declare}"


def stack(ctx: Context, name: str, columns: list[str], dim: str) -> str:
    """Fix for a dataset of one 1-D variable per feature and no 2-D variable ``name``."""
    line = (f"ds[{name!r}] = ds[{columns!r}].to_array('feature').transpose({dim!r}, "
            "'feature')")
    opened = f"ds = xr.open_zarr({ctx._store()}); " if ctx.on_disk else ""
    return (f"its 1-D variables along {dim!r} ({', '.join(map(repr, columns))}) look like one "
            f"feature each: stack them into {name}, e.g. {opened}{line}")


def dims(ctx: Context, name: str, expected: tuple, found: tuple) -> str:
    """Fix for a variable with other dimensions than expected."""
    if len(expected) != len(found):
        what = "one value per sample" if len(expected) == 1 else f"{len(expected)} dims"
        return f"give {name} {what} {tuple(expected)} (select or reshape it)"
    if sorted(map(str, expected)) == sorted(map(str, found)):
        if ctx.on_disk:
            return ctx.rewrite(f".transpose{tuple(expected)!r}".replace(",)", ")"))
        if ctx.arrays:
            return f"transpose it: {name} = {name}.transpose{tuple(expected)!r}"
        return f"transpose it: ds[{name!r}] = {ref(ctx, name)}.transpose{tuple(expected)!r}"
    renames = {f: e for f, e in zip(found, expected) if f != e}
    if ctx.on_disk:
        return ctx.rewrite(f".rename({renames!r})")
    if ctx.arrays:
        return f"rename them: {name} = {name}.rename({renames!r})"
    return (f"rename or transpose, e.g. ds.rename({renames!r})"
            f".transpose{tuple(expected)!r}".replace(",)", ")"))


def dtype(ctx: Context, name: str, to: str, verb: str = "convert with") -> str:
    """Fix for a variable of the wrong dtype."""
    if ctx.on_disk:
        return (f"rewrite the store with {name!r} as {to}: ds = xr.open_zarr({ctx._store()}); "
                f"ds[{name!r}] = ds[{name!r}].astype({to!r}); ds{_REWRITE}")
    if ctx.arrays:
        return f"{verb} {name} = {name}.astype({to!r})"
    return f"{verb} ds[{name!r}] = {ref(ctx, name)}.astype({to!r})"


def one_chunk(ctx: Context, name: str, dim: str, axis: int) -> str:
    """Fix for a variable chunked along a dimension that must be a single chunk."""
    if ctx.kind == "dask":
        return f"rechunk with {name} = {name}.rechunk({{{axis}: -1}})"
    if ctx.kind == "dataarray":
        return f"rechunk with {name} = {name}.chunk({{{dim!r}: -1}})"
    if ctx.on_disk:
        return ctx.rewrite(f".chunk({{{dim!r}: -1}})")
    return f"rechunk with ds.chunk({{{dim!r}: -1}})"


def sample_chunks(ctx: Context, name: str, first: str, sample: str) -> str:
    """Fix for sample variables whose chunks differ."""
    if ctx.kind == "dask":
        return f"rechunk with {name} = {name}.rechunk(({first}.chunks[0],))"
    if ctx.kind == "dataarray":
        return f"rechunk with {name} = {name}.chunk({{{sample!r}: {first}.chunks[0]}})"
    if ctx.on_disk:
        return ctx.rewrite(f".chunk({{{sample!r}: CHUNK_SIZE}})")
    return f"rechunk both with ds.chunk({{{sample!r}: CHUNK_SIZE}})"


def length(ctx: Context, first: str, name: str) -> str:
    """Fix for variables of different lengths along one dimension."""
    if ctx.on_disk:
        return "the store is inconsistent: regenerate or rewrite it"
    return (f"{first} and {name} must have one row per sample: fix the writer or select "
            "matching samples")


def empty(ctx: Context) -> str:
    return "the dataset is empty: generate or select some samples"


def size(ctx: Context, name: str, dim: str, n: int) -> str:
    return f"give {name} exactly {n} entries along {dim!r}"


def attribute(ctx: Context, key: str, value: str | None, optional: bool = True) -> str:
    """Fix for a dataset attribute with a bad value (``value``: a good one, as code)."""
    value = value if value is not None else "..."
    if ctx.on_disk:
        p = ctx._store()
        out = (f"set it in the store: g = zarr.open_group({p}, mode='r+'); "
               f"g.attrs[{key!r}] = {value}; zarr.consolidate_metadata({p})")
        if optional:
            out += f", or delete it (del g.attrs[{key!r}]): it is optional"
        return out
    out = f"set ds.attrs[{key!r}] = {value}"
    if optional:
        out += f", or delete it (del ds.attrs[{key!r}]): it is optional"
    return out


def declaration(ctx: Context) -> str:
    if ctx.kind == "catalog":
        return ("fix ooc_kernels: {variables: ...} in the entry's metadata: ooc-kernels "
                f"catalog declare {ctx.catalog or 'CATALOG'} {ctx.entry or 'ENTRY'} "
                "--var X=NAME --var y=NAME replaces the names given")
    return "pass a mapping such as {'X': 'features', 'y': 'label'}"
