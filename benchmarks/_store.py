"""Size of a store on disk, shared by the benchmark scripts (run from ``benchmarks/``)."""

from __future__ import annotations

from pathlib import Path


def store_bytes(path) -> int:
    """Bytes of every file under ``path`` (a Zarr store: its chunks and metadata)."""
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())
