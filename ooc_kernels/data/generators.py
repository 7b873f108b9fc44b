"""Deterministic dataset generators that write Zarr stores chunk by chunk.

Four generators are registered (see :func:`available_generators`):

``digits_deformed``
    The 1797 8x8 digits bundled with scikit-learn, made into an unbounded stream by random
    elastic deformation, small translations and additive noise (like MNIST-8M from MNIST).
``synthetic_krr_2d``
    ``y = cos(0.5*pi*||x||) * exp(-0.1*pi*||x||) + noise * e``, ``x ~ U[-5, 5]^2``.
``nonlinear_binary``
    ``x ~ N(0, I_d)``, label ``1[x_0^2 + ... + x_{k-1}^2 > median of chi2_k]``: a ball in the
    first ``k`` coordinates, not linearly separable.
``sparse_recovery``
    A *factorized* dataset ``A = U V`` (the ``factorized`` schema): sparse recovery from
    randomized feature reduction (DSPDC paper, section 6.1a).  Raw ``X ~ N(0, I_p)``,
    labels ``+-1`` from a logistic model on the first ``k`` features, ``U = X G^T`` and
    ``V = G`` with ``G`` (``rank x p``) iid ``N(0, 1/rank)``.

Seeding scheme
--------------
Chunk ``i`` of a dataset is generated from its own generator
``np.random.default_rng(np.random.SeedSequence(random_state, spawn_key=(split_code, i)))``
with ``split_code`` 0 for ``"train"`` and 1 for ``"test"``.  Hence chunk ``i`` depends only
on ``(generator, params, random_state, split, i, rows in chunk i)``: it does not depend on
the order in which chunks are produced, on the other chunks, or on ``n_samples`` (chunk
``i`` of a 1,000-sample dataset equals chunk ``i`` of a 10,000-sample one when both are
full).  Changing ``chunk_size`` changes the data.  Variables without a sample axis (the
``V`` of a factorized dataset) come from :func:`whole_rng`, independent of every chunk and
of the split; a chunk may depend on them (``U = X G^T`` needs ``G``), never on another
chunk.

Generators by variable name
---------------------------
A generator declares the schema it writes (:data:`~ooc_kernels.data.declarations.SCHEMAS`),
the dtype of each variable and the lengths of the dims other than the sample axis; a chunk
is a dict ``{variable: array}`` (``{"X": ..., "y": ...}``), so a generator of another
schema only declares its variables (see :class:`GeneratorSpec`).

Examples
--------
>>> import os, tempfile
>>> from ooc_kernels.data.generators import make_dataset, available_generators
>>> available_generators()
['digits_deformed', 'nonlinear_binary', 'sparse_recovery', 'synthetic_krr_2d']
>>> p = make_dataset("nonlinear_binary", os.path.join(tempfile.mkdtemp(), "nb.zarr"),
...                  500, chunk_size=200, n_features=5)
>>> p.name
'nb.zarr'
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._paths import user_path
from ..exceptions import DatasetExistsError, ValidationError
from .declarations import get_schema, make_attrs
from .factorized import sparse_recovery_chunk, sparse_recovery_measurements
from .zarr_io import chunk_bounds, n_chunks, write_chunks

__all__ = [
    "SPLITS",
    "GeneratorSpec",
    "available_generators",
    "get_generator",
    "chunk_rng",
    "whole_rng",
    "generate_chunk",
    "iter_chunks",
    "make_dataset",
    "digits_source_split",
    "DIGITS_TEST_FRACTION",
    "DIGITS_SPLIT_SEED",
]

#: Allowed values of ``split`` and their codes in the seed's spawn key.
SPLITS = {"train": 0, "test": 1}


@dataclass(frozen=True)
class GeneratorSpec:
    """A registered generator: a declaration of the variables it writes.

    Attributes
    ----------
    name : str
    task : {"classification", "regression"}
    description : str
    defaults : mapping
        Parameter names and default values (the only accepted ``**params``).
    sizes : callable
        ``params -> {dim: length}`` for the dims other than the sample axis
        (``{"feature": 64}``).
    classes : callable or None
        ``params -> list`` of labels (classification only).
    dtypes : mapping
        dtype of every variable written (``{"X": "float32", "y": "int32"}``).
    chunk : callable
        ``(rng, n_rows, split, params) -> {variable: array}``: the schema's variables
        along its sample axis, ``n_rows`` rows each.
    check : callable
        ``params -> None``; raises :class:`ValidationError` on invalid values.
    schema : str, default "supervised"
        The schema of the stores it writes.
    whole : callable, optional
        ``(random_state, params) -> {variable: array}``: the variables without a sample
        axis (drawn from :func:`whole_rng`), written once.
    chunk_uses_whole : bool, default False
        ``chunk`` takes a fifth argument, the dict ``whole`` returns (e.g. ``U = X G^T``
        needs ``G``): ``(rng, n_rows, split, params, whole) -> {variable: array}``.
    """

    name: str
    task: str
    description: str
    defaults: Mapping[str, Any]
    sizes: Callable[[dict], dict]
    classes: Callable[[dict], list] | None
    dtypes: Mapping[str, str]
    chunk: Callable[[np.random.Generator, int, str, dict], dict]
    check: Callable[[dict], None]
    schema: str = "supervised"
    whole: Callable[[int, dict], dict] | None = None
    chunk_uses_whole: bool = False

    def n_features(self, params: dict) -> int:
        """Length of the ``feature`` dim for ``params``."""
        return int(self.sizes(params)["feature"])

    @property
    def y_dtype(self) -> str | None:
        """dtype of the targets ``y``."""
        return self.dtypes.get("y")


_REGISTRY: dict[str, GeneratorSpec] = {}


def _register(spec: GeneratorSpec) -> GeneratorSpec:
    _REGISTRY[spec.name] = spec
    return spec


def available_generators() -> list[str]:
    """Sorted names of the registered generators.

    Examples
    --------
    >>> "digits_deformed" in available_generators()
    True
    """
    return sorted(_REGISTRY)


def get_generator(name: str) -> GeneratorSpec:
    """The :class:`GeneratorSpec` registered under ``name``.

    Examples
    --------
    >>> get_generator("synthetic_krr_2d").task
    'regression'
    """
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValidationError(
            f"unknown generator {name!r}; available generators: {available_generators()}"
        ) from None


# --- parameter checks ------------------------------------------------------------------

def _number(params: dict, key: str, *, low: float = 0.0, high: float = math.inf,
            low_open: bool = False) -> None:
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValidationError(f"parameter {key}={value!r} must be a number")
    if not math.isfinite(float(value)):
        raise ValidationError(f"parameter {key}={value!r} must be finite")
    bad_low = value <= low if low_open else value < low
    if bad_low or value > high:
        lo = "(" if low_open else "["
        raise ValidationError(f"parameter {key}={value!r} must lie in {lo}{low}, {high}]")


def _integer(params: dict, key: str, *, low: int = 1) -> None:
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValidationError(f"parameter {key}={value!r} must be an integer >= {low}")


def _resolve_params(spec: GeneratorSpec, params: Mapping[str, Any]) -> dict:
    unknown = sorted(set(params) - set(spec.defaults))
    if unknown:
        import difflib

        allowed = ", ".join(f"{k}={v!r}" for k, v in spec.defaults.items()) or "none"
        close = difflib.get_close_matches(str(unknown[0]), list(spec.defaults), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValidationError(
            f"unknown parameter(s) {unknown} for generator {spec.name!r}; {hint}allowed "
            f"parameters (with defaults): {allowed}"
        )
    resolved = dict(spec.defaults)
    resolved.update(params)
    spec.check(resolved)
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in resolved.items()}


def _check_split(split: str) -> int:
    if split not in SPLITS:
        raise ValidationError(f"split={split!r} is not supported; use one of {list(SPLITS)}")
    return SPLITS[split]


def _check_random_state(random_state: Any) -> int:
    if (isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer))
            or random_state < 0):
        raise ValidationError(
            f"random_state must be a non-negative integer (generated datasets are always "
            f"reproducible), got {random_state!r}"
        )
    return int(random_state)


# --- seeding ---------------------------------------------------------------------------

def chunk_rng(random_state: int, split: str, chunk_index: int) -> np.random.Generator:
    """The random generator of chunk ``chunk_index`` (independent of every other chunk).

    Examples
    --------
    >>> a = chunk_rng(0, "train", 3).random()
    >>> a == chunk_rng(0, "train", 3).random() != chunk_rng(0, "test", 3).random()
    True
    """
    code = _check_split(split)
    seed = np.random.SeedSequence(_check_random_state(random_state),
                                  spawn_key=(code, int(chunk_index)))
    return np.random.default_rng(seed)


def whole_rng(random_state: int) -> np.random.Generator:
    """The random generator of the variables without a sample axis (``V`` of ``A = U V``).

    Independent of every chunk's generator and of the split, so a train and a test store
    with the same ``random_state`` share them.

    Examples
    --------
    >>> whole_rng(0).random() == whole_rng(0).random() != chunk_rng(0, "train", 0).random()
    True
    """
    seed = np.random.SeedSequence(_check_random_state(random_state), spawn_key=(len(SPLITS),))
    return np.random.default_rng(seed)


def generate_chunk(name: str, chunk_index: int, n_rows: int, *, random_state: int = 0,
                   split: str = "train", **params: Any) -> dict[str, np.ndarray]:
    """Generate chunk ``chunk_index`` (``n_rows`` samples) of generator ``name``.

    This is exactly what :func:`make_dataset` writes at that chunk: the writer only calls
    it in order.

    Returns
    -------
    dict of str to ndarray
        The variables of the chunk by name, ``n_rows`` rows each: ``{"X": float32
        (n_rows, n_features), "y": (n_rows,)}`` for the supervised generators, ``{"U":
        float32 (n_rows, rank), "y": (n_rows,)}`` for ``sparse_recovery`` (its ``V`` is
        ``get_generator(name).whole(random_state, params)``, the same for every chunk).

    Examples
    --------
    >>> chunk = generate_chunk("synthetic_krr_2d", 0, 4, noise=0.0)
    >>> {k: (v.shape, v.dtype.name) for k, v in chunk.items()}
    {'X': ((4, 2), 'float32'), 'y': ((4,), 'float32')}
    """
    spec = get_generator(name)
    resolved = _resolve_params(spec, params)
    _check_split(split)
    n_rows = int(n_rows)
    if n_rows < 1:
        raise ValidationError(f"n_rows must be a positive integer, got {n_rows!r}")
    return _chunk(spec, resolved, chunk_index, n_rows, random_state, split)


def _whole(spec, params, random_state):
    return spec.whole(random_state, params) if spec.whole is not None else None


def _chunk(spec, params, index, n_rows, random_state, split, whole=None):
    rng = chunk_rng(random_state, split, index)
    if spec.chunk_uses_whole:
        whole = whole if whole is not None else _whole(spec, params, random_state)
        out = spec.chunk(rng, n_rows, split, params, whole)
    else:
        out = spec.chunk(rng, n_rows, split, params)
    return {name: np.ascontiguousarray(value, dtype=spec.dtypes[name])
            for name, value in out.items()}


def iter_chunks(name: str, n_samples: int, *, chunk_size: int = 10_000, random_state: int = 0,
                split: str = "train", **params: Any) -> Iterator[dict[str, np.ndarray]]:
    """Yield the chunks of a generated dataset one at a time, in order, as dicts.

    Examples
    --------
    >>> [c["X"].shape[0] for c in iter_chunks("synthetic_krr_2d", 250, chunk_size=100)]
    [100, 100, 50]
    """
    spec = get_generator(name)
    resolved = _resolve_params(spec, params)
    _check_split(split)
    _check_random_state(random_state)
    n_samples, chunk_size = _check_sizes(n_samples, chunk_size)
    return _iter(spec, resolved, n_samples, chunk_size, random_state, split)


def _iter(spec, params, n_samples, chunk_size, random_state, split, whole=None):
    if spec.chunk_uses_whole and whole is None:
        whole = _whole(spec, params, random_state)  # small: drawn once for every chunk
    for i in range(n_chunks(n_samples, chunk_size)):
        start, stop = chunk_bounds(i, n_samples, chunk_size)
        yield _chunk(spec, params, i, stop - start, random_state, split, whole)


def _check_sizes(n_samples: Any, chunk_size: Any) -> tuple[int, int]:
    for key, value in (("n_samples", n_samples), ("chunk_size", chunk_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValidationError(f"{key} must be a positive integer, got {value!r}")
    return int(n_samples), min(int(chunk_size), int(n_samples))


def make_dataset(name: str, path: str | os.PathLike, n_samples: int, *,
                 chunk_size: int = 10_000, random_state: int = 0, split: str = "train",
                 overwrite: bool = False, exist_ok: bool = False,
                 progress: bool | None = None, **params: Any) -> Path:
    """Generate a dataset and write it to a Zarr store, chunk by chunk.

    Parameters
    ----------
    name : str
        A generator from :func:`available_generators`.
    path : str, bytes or path-like
        Output Zarr store (folder).  Written atomically.
    n_samples : int
        Number of samples.
    chunk_size : int, default 10_000
        Samples per chunk (the unit of generation, I/O and training work).
    random_state : int, default 0
        Seed; with ``split`` and the chunk index it determines every chunk.
    split : {"train", "test"}, default "train"
        For ``digits_deformed`` the two splits deform disjoint source images.
    overwrite : bool, default False
        Replace an existing store (otherwise :class:`DatasetExistsError`).
    exist_ok : bool, default False
        Keep an existing store, without writing anything, when it was written by
        ``make_dataset`` with the same generator, parameters (defaults filled in),
        ``random_state``, ``split``, ``n_samples`` and ``chunk_size`` (compared with the
        store's attributes and array shapes), i.e. when it holds exactly the data this call
        would write.  A store that differs raises :class:`DatasetExistsError` naming the
        differences, or, with ``overwrite=True`` as well, is replaced.
    progress : bool, optional
        Progress bar over chunks (default: on an interactive terminal or in a notebook).
    **params
        Generator parameters (see ``get_generator(name).defaults``).

    Returns
    -------
    pathlib.Path
        Absolute path of the store.

    Raises
    ------
    ValidationError
        Unknown generator or parameter, or an invalid value.
    DatasetExistsError
        ``path`` exists and ``overwrite`` is False (with ``exist_ok``: exists and holds
        other data).

    Examples
    --------
    >>> import os, tempfile
    >>> p = make_dataset("synthetic_krr_2d", os.path.join(tempfile.mkdtemp(), "k.zarr"),
    ...                  1000, chunk_size=400, random_state=1, noise=0.05)
    >>> from ooc_kernels.data import open_zarr_dataset
    >>> open_zarr_dataset(p).attrs["generator_params"]
    {'noise': 0.05}
    >>> make_dataset("synthetic_krr_2d", p, 1000, chunk_size=400, random_state=1,
    ...              noise=0.05, exist_ok=True) == p      # same settings: kept as is
    True
    """
    spec = get_generator(name)
    resolved = _resolve_params(spec, params)
    _check_split(split)
    random_state = _check_random_state(random_state)
    n_samples, chunk_size = _check_sizes(n_samples, chunk_size)
    classes = spec.classes(resolved) if spec.classes is not None else None
    attrs = make_attrs(spec.task, classes=classes, generator=spec.name,
                       generator_params=resolved, random_state=random_state, split=split,
                       description=spec.description)
    target = user_path(path).absolute()
    sizes = spec.sizes(resolved)
    def kept() -> bool:
        """With ``exist_ok``: whether the store at ``target`` is the one this call writes
        (True: keep it); another one raises, unless ``overwrite`` replaces it."""
        differences = _store_differences(target, attrs, spec, n_samples=n_samples,
                                         sizes=sizes, chunk_size=chunk_size)
        if not differences:
            return True
        if overwrite:
            return False
        err = DatasetExistsError(
            f"dataset path {str(target)!r} already exists and holds other data than "
            f"this call would write ({'; '.join(differences)}); exist_ok=True keeps only "
            "an identical dataset: pass overwrite=True (--overwrite) to replace it, or "
            "choose another path"
        )
        err.differences = differences
        raise err

    if exist_ok and (target.exists() or target.is_symlink()) and kept():
        return target
    whole = _whole(spec, resolved, random_state)
    try:
        return write_chunks(
            path, _iter(spec, resolved, n_samples, chunk_size, random_state, split, whole),
            n_samples=n_samples, chunk_size=chunk_size, schema=spec.schema, sizes=sizes,
            dtypes=spec.dtypes, whole=whole, attrs=attrs, overwrite=overwrite,
            progress=progress, desc=f"{name} ({split})",
        )
    except DatasetExistsError:
        # another writer finished first: with exist_ok, its store is kept when it is the one
        # this call wrote too (two pipelines generating one missing dataset at once)
        if exist_ok and not overwrite and (target.exists() or target.is_symlink()) and kept():
            return target
        raise


def _store_differences(path: Path, attrs: dict, spec: GeneratorSpec, *, n_samples: int,
                       sizes: dict, chunk_size: int) -> list[str]:
    """How the store at ``path`` differs from the one ``make_dataset`` would write.

    Compares the provenance attributes (generator, its parameters, seed, split), the shape
    of the schema's first sample variable (``X``) and its chunk size; an unreadable store
    or one not written by :func:`make_dataset` is one difference.  Reads metadata only.
    """
    import zarr

    first = get_schema(spec.schema).sample_variables[0]
    shape_wanted = (n_samples, *(first.sizes.get(d, sizes.get(d)) for d in first.dims[1:]))
    try:
        group = zarr.open_group(str(path), mode="r")
        found = dict(group.attrs)
        x = group[first.name]
        shape, chunks = tuple(x.shape), tuple(x.chunks)
    except Exception as err:
        return [f"it is not a dataset store written by make_dataset "
                f"({type(err).__name__}: {err})"]
    out = []
    for key in ("generator", "generator_params", "random_state", "split"):
        want, have = attrs.get(key), found.get(key, "<missing>")
        if have != want:
            out.append(f"{key}: the store has {have!r}, this call {want!r}")
    if shape != shape_wanted:
        out.append(f"shape of {first.name}: the store has {shape}, this call {shape_wanted}")
    elif chunks[0] != chunk_size:
        out.append(f"chunk_size: the store has {chunks[0]}, this call {chunk_size}")
    return out


# --- digits_deformed --------------------------------------------------------------------

#: Fraction of the 1797 source digits reserved for ``split="test"`` (per class).
DIGITS_TEST_FRACTION = 0.2
#: Fixed seed of the source-image split (independent of ``random_state``).
DIGITS_SPLIT_SEED = 20140801


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = (bunch.images / 16.0).astype(np.float32)  # (1797, 8, 8) in [0, 1]
    images.setflags(write=False)
    target = bunch.target.astype(np.int64)
    target.setflags(write=False)
    return images, target


@functools.lru_cache(maxsize=1)
def _digits_split() -> dict[str, np.ndarray]:
    _, target = _digits()
    rng = np.random.default_rng(DIGITS_SPLIT_SEED)
    test = []
    for c in range(10):
        members = np.flatnonzero(target == c)
        n_test = int(round(DIGITS_TEST_FRACTION * members.size))
        test.append(rng.permutation(members)[:n_test])
    test_idx = np.sort(np.concatenate(test))
    train_idx = np.setdiff1d(np.arange(target.size), test_idx)
    for a in (train_idx, test_idx):
        a.setflags(write=False)
    return {"train": train_idx, "test": test_idx}


def digits_source_split() -> dict[str, np.ndarray]:
    """Indices into ``sklearn.datasets.load_digits()`` of the source images of each split.

    A fixed stratified split: per class, ``round(0.2 * n_class)`` images chosen by a
    permutation from ``np.random.default_rng(DIGITS_SPLIT_SEED)`` go to ``"test"``, the
    rest to ``"train"`` (1438 / 359 images).  It does not depend on ``random_state``.

    Examples
    --------
    >>> s = digits_source_split()
    >>> len(s["train"]), len(s["test"]), len(set(s["train"]) & set(s["test"]))
    (1438, 359, 0)
    """
    return {k: v.copy() for k, v in _digits_split().items()}


@functools.lru_cache(maxsize=8)
def _unit_variance_scale(sigma: float) -> float:
    """1 / std of white unit noise after ``gaussian_filter(sigma)`` in 2-D (interior)."""
    from scipy.ndimage import gaussian_filter1d

    delta = np.zeros(64)
    delta[32] = 1.0
    w = gaussian_filter1d(delta, sigma, mode="constant")
    return float(1.0 / np.sum(w**2))  # 2-D kernel is separable: sum of squares = (sum w^2)^2


def _digits_chunk(rng: np.random.Generator, n: int, split: str, p: dict):
    from scipy.ndimage import gaussian_filter

    images, target = _digits()
    pool = _digits_split()[split]
    pool_target = target[pool]
    # class drawn uniformly, then a source image of that class uniformly
    labels = rng.integers(0, 10, size=n)
    source = np.empty(n, dtype=np.int64)
    for c in range(10):
        where = np.flatnonzero(labels == c)
        members = pool[pool_target == c]
        source[where] = members[rng.integers(0, members.size, size=where.size)]
    img = images[source]  # (n, 8, 8)

    # elastic field: white noise smoothed by a Gaussian, rescaled to unit std, times alpha
    field = rng.standard_normal((2, n, 8, 8))
    if p["sigma"] > 0:
        field = gaussian_filter(field, sigma=(0, 0, p["sigma"], p["sigma"]), mode="reflect")
        field *= _unit_variance_scale(float(p["sigma"]))
    field *= p["alpha"]
    shift = rng.uniform(-p["max_shift"], p["max_shift"], size=(2, n, 1, 1))
    rows = np.arange(8, dtype=np.float64)[None, :, None] + field[0] + shift[0]
    cols = np.arange(8, dtype=np.float64)[None, None, :] + field[1] + shift[1]
    out = _bilinear(img, rows, cols)
    if p["noise"] > 0:
        out = out + p["noise"] * rng.standard_normal(out.shape)
    np.clip(out, 0.0, 1.0, out=out)
    return {"X": out.reshape(n, 64).astype(np.float32), "y": target[source].astype(np.int32)}


def _bilinear(img: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Sample ``img`` (n, h, w) at fractional ``(rows, cols)``, zero outside the image."""
    n, h, w = img.shape
    pad = 2
    padded = np.zeros((n, h + 2 * pad, w + 2 * pad), dtype=np.float64)
    padded[:, pad:pad + h, pad:pad + w] = img
    flat = padded.reshape(n, -1)
    width = w + 2 * pad
    r = np.clip(rows, -pad, h + pad - 1 - 1e-6)
    c = np.clip(cols, -pad, w + pad - 1 - 1e-6)
    r0 = np.floor(r)
    c0 = np.floor(c)
    fr = (r - r0).reshape(n, -1)
    fc = (c - c0).reshape(n, -1)
    i0 = (r0.astype(np.int64) + pad).reshape(n, -1)
    j0 = (c0.astype(np.int64) + pad).reshape(n, -1)

    def at(i, j):
        return np.take_along_axis(flat, i * width + j, axis=1)

    top = at(i0, j0) * (1 - fc) + at(i0, j0 + 1) * fc
    bottom = at(i0 + 1, j0) * (1 - fc) + at(i0 + 1, j0 + 1) * fc
    return (top * (1 - fr) + bottom * fr).reshape(n, h, w)


def _check_digits(p: dict) -> None:
    _number(p, "alpha", high=4.0)
    _number(p, "sigma", high=8.0)
    _number(p, "max_shift", high=2.0)
    _number(p, "noise", high=1.0)


_register(GeneratorSpec(
    name="digits_deformed",
    task="classification",
    description="8x8 scikit-learn digits with random elastic deformation, translation and "
                "noise (10 classes, 64 features in [0, 1])",
    defaults={"alpha": 0.1, "sigma": 1.0, "max_shift": 0.15, "noise": 0.05},
    sizes=lambda p: {"feature": 64},
    classes=lambda p: list(range(10)),
    dtypes={"X": "float32", "y": "int32"},
    chunk=_digits_chunk,
    check=_check_digits,
))


# --- synthetic_krr_2d ------------------------------------------------------------------

def krr_2d_target(X: np.ndarray) -> np.ndarray:
    """Noise-free target of ``synthetic_krr_2d``: ``cos(pi r / 2) exp(-pi r / 10)``, r=||x||.

    Examples
    --------
    >>> float(krr_2d_target(np.zeros((1, 2)))[0])
    1.0
    """
    r = np.linalg.norm(np.asarray(X, dtype=np.float64), axis=1)  # one chunk
    return np.cos(0.5 * np.pi * r) * np.exp(-0.1 * np.pi * r)


def _krr_chunk(rng: np.random.Generator, n: int, split: str, p: dict):
    X = rng.uniform(-5.0, 5.0, size=(n, 2)).astype(np.float32)
    e = rng.standard_normal(n)
    y = krr_2d_target(X) + p["noise"] * e
    return {"X": X, "y": y.astype(np.float32)}


_register(GeneratorSpec(
    name="synthetic_krr_2d",
    task="regression",
    description="y = cos(0.5 pi ||x||) exp(-0.1 pi ||x||) + noise * N(0, 1), "
                "x ~ U[-5, 5]^2 (Dai et al. 2014)",
    defaults={"noise": 0.1},
    sizes=lambda p: {"feature": 2},
    classes=None,
    dtypes={"X": "float32", "y": "float32"},
    chunk=_krr_chunk,
    check=lambda p: _number(p, "noise", high=math.inf),
))


# --- nonlinear_binary ------------------------------------------------------------------

def _chi2_median(k: int) -> float:
    from scipy.stats import chi2

    return float(chi2.median(k))


def nonlinear_binary_label(X: np.ndarray, n_informative: int) -> np.ndarray:
    """Noise-free label of ``nonlinear_binary``: ``1`` outside the median ball, else ``0``.

    ``y = 1[x_0^2 + ... + x_{k-1}^2 > m_k]`` with ``m_k`` the median of the chi-squared
    distribution with ``k = n_informative`` degrees of freedom (so the classes are
    balanced).

    Examples
    --------
    >>> nonlinear_binary_label(np.array([[0.0, 0.0, 5.0], [3.0, 0.0, 0.0]]), 2).tolist()
    [0, 1]
    """
    X = np.asarray(X, dtype=np.float64)  # one chunk
    sq = np.sum(X[:, :n_informative] ** 2, axis=1)
    return (sq > _chi2_median(n_informative)).astype(np.int32)


def _binary_chunk(rng: np.random.Generator, n: int, split: str, p: dict):
    X = rng.standard_normal((n, p["n_features"])).astype(np.float32)
    y = nonlinear_binary_label(X, p["n_informative"])
    flip = rng.random(n) < p["flip"]
    y = np.where(flip, 1 - y, y)
    return {"X": X, "y": y}


def _check_binary(p: dict) -> None:
    _integer(p, "n_features", low=1)
    _integer(p, "n_informative", low=1)
    _number(p, "flip", high=0.5)
    if p["n_informative"] > p["n_features"]:
        raise ValidationError(
            f"parameter n_informative={p['n_informative']!r} must be <= "
            f"n_features={p['n_features']!r}"
        )


_register(GeneratorSpec(
    name="nonlinear_binary",
    task="classification",
    description="x ~ N(0, I_d); y = 1[sum_{j<k} x_j^2 > median chi2_k] (labels 0/1), "
                "each label flipped with probability flip",
    defaults={"n_features": 20, "n_informative": 3, "flip": 0.0},
    sizes=lambda p: {"feature": int(p["n_features"])},
    classes=lambda p: [0, 1],
    dtypes={"X": "float32", "y": "int32"},
    chunk=_binary_chunk,
    check=_check_binary,
))


# --- sparse_recovery (factorized) --------------------------------------------------------

def _sparse_whole(random_state: int, p: dict) -> dict:
    G = sparse_recovery_measurements(whole_rng(random_state), p["rank"], p["n_features"])
    return {"V": G.astype(np.float32)}


def _sparse_chunk(rng: np.random.Generator, n: int, split: str, p: dict, whole: dict):
    return sparse_recovery_chunk(rng, n, whole["V"], p["n_informative"])


def _check_sparse(p: dict) -> None:
    _integer(p, "n_features", low=1)
    _integer(p, "rank", low=1)
    if p["rank"] > p["n_features"]:
        raise ValidationError(
            f"parameter rank={p['rank']!r} must be <= n_features={p['n_features']!r}: G maps "
            "the n_features raw features to rank < n_features measurements; lower rank or "
            "raise n_features"
        )
    if p["n_informative"] is not None:
        _integer(p, "n_informative", low=0)
        if p["n_informative"] > p["n_features"]:
            raise ValidationError(
                f"parameter n_informative={p['n_informative']!r} must be <= "
                f"n_features={p['n_features']!r}; lower it, or leave it out (None: "
                "min(50, n_features))"
            )


_register(GeneratorSpec(
    name="sparse_recovery",
    task="classification",
    description="factorized A = U V: U = X G^T, V = G, X ~ N(0, I_p), G (rank x p) iid "
                "N(0, 1/rank), labels +-1 with P(+1) = 1/(1+exp(-X beta)), beta = 1 on "
                "the first n_informative features (Yu, Lin and Yang, section 6.1a)",
    defaults={"n_features": 100, "rank": 20, "n_informative": None},
    sizes=lambda p: {"rank": int(p["rank"]), "feature": int(p["n_features"])},
    classes=lambda p: [-1, 1],
    dtypes={"U": "float32", "V": "float32", "y": "int8"},
    chunk=_sparse_chunk,
    check=_check_sparse,
    schema="factorized",
    whole=_sparse_whole,
    chunk_uses_whole=True,
))
