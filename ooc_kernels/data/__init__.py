"""Data layer: the Zarr dataset schema, chunk-by-chunk writers, generators and catalogs.

Examples
--------
>>> import os, tempfile
>>> from ooc_kernels.data import make_dataset, open_zarr_dataset
>>> p = make_dataset("synthetic_krr_2d", os.path.join(tempfile.mkdtemp(), "k.zarr"), 200,
...                  chunk_size=50)
>>> open_zarr_dataset(p).X.shape
(200, 2)
"""

from .catalog import (
    ALLOWED_DATATYPES,
    ALLOWED_READERS,
    declare_dataset,
    describe_catalog,
    entry_path,
    list_datasets,
    load_catalog,
    open_dataset,
    register_dataset,
)
from .declarations import (
    FACTORIZED,
    SCHEMAS,
    SUPERVISED,
    TRIPLETS,
    Schema,
    Variable,
    get_schema,
    register_schema,
)
from .factorized import Factorized
from .generators import (
    available_generators,
    digits_source_split,
    generate_chunk,
    get_generator,
    iter_chunks,
    make_dataset,
)
from .reductions import instance_reduction, materialize, materialize_chunks
from .schema import (
    SCHEMA_VERSION,
    Context,
    make_attrs,
    open_zarr_dataset,
    validate_dataset,
)
from .zarr_io import write_chunks

__all__ = [
    "ALLOWED_DATATYPES",
    "ALLOWED_READERS",
    "FACTORIZED",
    "SCHEMAS",
    "SCHEMA_VERSION",
    "SUPERVISED",
    "TRIPLETS",
    "Context",
    "Factorized",
    "Schema",
    "Variable",
    "available_generators",
    "declare_dataset",
    "describe_catalog",
    "digits_source_split",
    "entry_path",
    "generate_chunk",
    "get_generator",
    "get_schema",
    "instance_reduction",
    "iter_chunks",
    "list_datasets",
    "load_catalog",
    "make_attrs",
    "make_dataset",
    "materialize",
    "materialize_chunks",
    "open_dataset",
    "open_zarr_dataset",
    "register_dataset",
    "register_schema",
    "validate_dataset",
    "write_chunks",
]
