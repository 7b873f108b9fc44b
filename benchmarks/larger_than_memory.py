"""One DSG epoch over a store larger than this machine's memory, from its catalog entry.

Writes (chunk by chunk, with ``ok.make_dataset``; kept between runs with ``exist_ok``) two
``nonlinear_binary`` stores of the same layout (same ``n_features`` and ``chunk_size``): a big
one of ``--size-gb`` of float32 values and a small one of ``--small-gb``. Zarr's default
compressor keeps about 0.89 of the bytes on disk, so ``--size-gb 37`` gives a store of at least
32 GB on disk, more than this machine's 24 GB of RAM: the page cache cannot hold it. It then
registers both in an Intake catalog beside them, and fits ``ok.DSGClassifier(max_iter=1)``
(one epoch, every other parameter at its default) on each catalog entry in a fresh process
and reports

* the fitting process's peak RSS (``VmHWM``; target: under 2 GB for the big store),
* rows per second of the epoch (rows / the epoch's seconds from ``history_``, after the
  setup: the bandwidth trials on a sample; target: the big store's at least 0.9 times the
  small store's), and with the setup,
* the disk read rate during the fit (bytes read by the process from the block device,
  ``psutil.Process().io_counters().read_bytes``, over the fit's seconds) next to the store
  bytes per second and to the disk's own cold read rate of the same files (read in order
  without the library, up to 4 GB), so the reader sees whether the fit is compute- or
  I/O-bound.

Before each fit the page cache is dropped where the process may (root), so both stores are
read cold from the disk.

    python benchmarks/larger_than_memory.py --size-gb 37 --small-gb 1 --repeats 3 \\
        --big-repeats 1 --dir /tmp/ltm --out benchmarks/results/larger_than_memory.json

``--read-rate-only`` measures just the disk's read rate of stores already written and adds
it to ``--out``.

This is a benchmark, not a test: writing 32 GB and reading it back takes a long time.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from _procmem import peak_rss_mb
from _store import store_bytes



def _fit(spec: dict) -> dict:
    import psutil

    import ooc_kernels as ok

    proc = psutil.Process()
    io0 = proc.io_counters()
    disk0 = psutil.disk_io_counters()
    start = time.perf_counter()
    ds = ok.open_dataset(spec["catalog"], spec["entry"])
    n = int(ds.sizes["sample"])
    clf = ok.DSGClassifier(max_iter=1, random_state=0, progress=False,
                           **spec.get("params", {}))
    clf.fit(ds)
    seconds = time.perf_counter() - start
    io1 = proc.io_counters()
    disk1 = psutil.disk_io_counters()
    epoch = float(clf.history_[0]["seconds"])     # the epoch alone, after the setup
    return {"rows": n, "seconds": seconds, "epoch_seconds": epoch,
            "rows_per_second": n / epoch, "rows_per_second_with_setup": n / seconds,
            "peak_rss_mb": peak_rss_mb(),
            "process_read_bytes": io1.read_bytes - io0.read_bytes,
            "device_read_bytes": (disk1.read_bytes - disk0.read_bytes) if disk0 else None,
            "n_features": int(clf.n_features), "bandwidth": float(clf.bandwidth_),
            "stop_reason": getattr(clf, "stop_reason_", None)}


def _drop_page_cache() -> bool:
    """Empty the kernel's page cache before a fit, so that every byte is read from the disk.

    Needs root (``/proc/sys/vm/drop_caches``); where it is refused the fit runs as it is and
    the result says so (``page_cache_dropped: false``).
    """
    try:
        subprocess.run(["sync"], check=True)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except (OSError, subprocess.CalledProcessError):
        return False
    return True


def _raw_read_rate(path: Path, limit_bytes: float = 4e9) -> dict:
    """The disk's read rate without the library: the store's files read cold, in order,
    up to ``limit_bytes`` (after dropping the page cache), in bytes per second."""
    cold = _drop_page_cache()
    total, start = 0, time.perf_counter()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        with open(f, "rb") as fh:
            while chunk := fh.read(1 << 22):
                total += len(chunk)
        if total >= limit_bytes:
            break
    seconds = time.perf_counter() - start
    return {"raw_read_bytes": total, "raw_read_seconds": seconds,
            "raw_read_bytes_per_second": total / seconds, "raw_read_cold": cold}


def _write(path: Path, size_gb: float, d: int, chunk_size: int) -> Path:
    import ooc_kernels as ok

    n = int(size_gb * 1e9 / (4 * (d + 1)))      # float32 X and y; Zarr adds a little
    start = time.perf_counter()
    ok.make_dataset("nonlinear_binary", path, n, chunk_size=chunk_size, n_features=d,
                    exist_ok=True, progress=True)
    return time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gb", type=float, default=32.0)
    parser.add_argument("--small-gb", type=float, default=1.0)
    parser.add_argument("--n-features", type=int, default=100, help="columns of X")
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/ltm"))
    parser.add_argument("--repeats", type=int, default=3,
                        help="fits of the small store (median)")
    parser.add_argument("--big-repeats", type=int, default=1,
                        help="fits of the big store (median); each reads the whole store")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--read-rate-only", action="store_true",
                        help="only measure the disk's raw read rate of the stores already "
                             "written and add it to --out")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(_fit(json.loads(args.worker))))
        return
    import psutil

    from ooc_kernels.data.catalog import register_dataset

    if args.read_rate_only:
        result = json.loads(args.out.read_text())
        for entry in ("small", "big"):
            result["stores"][entry].update(_raw_read_rate(args.dir / f"{entry}.zarr"))
            print(json.dumps({entry: result["stores"][entry]}), flush=True)
        args.out.write_text(json.dumps(result, indent=1))
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    catalog = args.dir / "catalog.yaml"
    result = {"machine_memory_bytes": psutil.virtual_memory().total,
              "n_features_in": args.n_features, "chunk_size": args.chunk_size, "stores": {}}
    for entry, gb in (("small", args.small_gb), ("big", args.size_gb)):
        path = args.dir / f"{entry}.zarr"
        write_seconds = _write(path, gb, args.n_features, args.chunk_size)
        register_dataset(catalog, entry, path)
        size = store_bytes(path)
        fits = []
        for _ in range(args.repeats if entry == "small" else args.big_repeats):
            cold = _drop_page_cache()
            spec = {"catalog": str(catalog), "entry": entry}
            out = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)],
                                 capture_output=True, text=True)
            if out.returncode:
                sys.exit(out.stderr)
            fits.append({**json.loads(out.stdout.strip().splitlines()[-1]),
                         "page_cache_dropped": cold})
        fits.sort(key=lambda f: f["epoch_seconds"])
        fit = fits[len(fits) // 2]
        row = {"store_bytes": size, "write_seconds": write_seconds,
               "store_bytes_per_second": size / fit["epoch_seconds"],
               "process_read_bytes_per_second": fit["process_read_bytes"] / fit["seconds"],
               **fit, "runs_epoch_seconds": [f["epoch_seconds"] for f in fits],
               **_raw_read_rate(path)}
        result["stores"][entry] = row
        print(json.dumps({entry: row}), flush=True)
    big, small = result["stores"]["big"], result["stores"]["small"]
    result["rows_per_second_ratio"] = big["rows_per_second"] / small["rows_per_second"]
    result["big_over_memory"] = big["store_bytes"] / result["machine_memory_bytes"]
    print(json.dumps({k: v for k, v in result.items() if k != "stores"}), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
