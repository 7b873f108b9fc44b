"""Stopping rules of DSGClassifier: per-epoch curves of long fits, and where each rule stops.

``record`` fits ``DSGClassifier()`` (the defaults, with ``tol=None`` so that nothing stops
it) one epoch at a time (``warm_start=True, max_iter=1``: the steps of one fit) for
``--epochs`` epochs, each problem in its own single-threaded process (synchronous
scheduler, ``n_jobs=1``), and records after every epoch: the CPU seconds of the fitting
calls (``time.process_time()``; scoring not counted), the epoch's ``history_`` entry (the
progressive-validation loss), the test accuracy and, for the generated problems, the
accuracy on fresh rows as many as ``early_stopping``'s held-out chunks would hold
(``validation_fraction=0.1`` of the training rows).  Extra parameters (``--setting``) go on
top of the defaults, e.g. ``'{"early_stopping": true}'`` to record the held-out score of a
real early-stopping fit.  Runs are appended to ``--out`` when it exists.

``simulate`` replays the histories recorded with the defaults (runs with a ``--setting``
stay in their file and are not replayed) through the library's stopping monitor
(:class:`ooc_kernels.estimators._stopping.EpochMonitor`) under the rules listed in
``RULES`` (``n_iter_no_change=5`` each), and prints for each curve the epoch, CPU seconds and
test accuracy at each rule's stop, against the plateau (the best test accuracy of the
recorded run).  A fit stopped by the monitor after epoch ``k`` is the recorded run's first
``k`` epochs, so the replay is exact for the training-loss rules.

    python benchmarks/dsg_stopping.py record --problem signal_hard --n 100000 --epochs 30 \\
        --out benchmarks/results/dsg_stopping_signal_hard_100k.json
    python benchmarks/dsg_stopping.py simulate \\
        benchmarks/results/dsg_stopping_signal_hard_100k.json \\
        --out benchmarks/results/dsg_stopping_rules.json

(``docs/benchmarks.md``, "Stopping on many rows", lists every run of the table there.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time, warnings
import numpy as np
sys.path.insert(0, {bench!r})
warnings.simplefilter("ignore")
import ooc_kernels as ok
from pathlib import Path
from dsg_defaults_suite import problems, signal_hard_rows, signal_rows, _binary_rows
name, n, work, seed, params, epochs = {args!r}
X, y, Xt, yt, store = problems([name], n, n, Path(work))[name]
gen = dict(signal_hard=signal_hard_rows, signal=signal_rows, binary10=_binary_rows).get(name)
Xv, yv = gen(max(1, round(0.1 * len(y))), 2) if gen is not None else (None, None)
print("ROWS", len(y), flush=True)
clf = ok.DSGClassifier(random_state=seed, progress=False, n_jobs=1, scheduler="sync",
                       warm_start=True, max_iter=1, tol=None, **params)
cpu = 0.0
for epoch in range(epochs):
    c = time.process_time()
    clf.fit(store) if store is not None else clf.fit(X, y)
    cpu += time.process_time() - c
    row = dict(clf.history_[-1], cpu=round(cpu, 3), test_accuracy=float(clf.score(Xt, yt)))
    if Xv is not None:
        row["fresh_accuracy"] = float(clf.score(Xv, yv))
    print("EPOCH", json.dumps(row), flush=True)
print("DONE", flush=True)
"""


def record(args) -> None:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               NUMBA_NUM_THREADS="1", MKL_NUM_THREADS="1", OOC_KERNELS_PROGRESS="0")
    out = json.loads(args.out.read_text()) if args.out.exists() else {"runs": []}
    with tempfile.TemporaryDirectory(prefix="dsg_stopping_") as tmp:
        for seed in args.seeds:
            for params in args.setting or [{}]:
                code = CHILD.format(bench=str(ROOT / "benchmarks"),
                                    args=(args.problem, args.n, tmp, seed, params,
                                          args.epochs))
                run = {"problem": args.problem, "n": args.n, "seed": seed,
                       "params": params, "epochs": []}
                out["runs"].append(run)
                proc = subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                                        stdout=subprocess.PIPE, cwd=tempfile.gettempdir())
                for line in proc.stdout:  # every epoch saved as it ends
                    if line.startswith("ROWS "):
                        run["n"] = int(line.split()[1])
                    if line.startswith("EPOCH "):
                        run["epochs"].append(json.loads(line[len("EPOCH "):]))
                        print(args.problem, args.n, seed, line.rstrip(), flush=True)
                        args.out.write_text(json.dumps(out, indent=1))
                if proc.wait() != 0:
                    raise RuntimeError(f"the fit of {args.problem} (seed {seed}) failed")


#: The rules replayed by ``simulate``: name -> (EpochMonitor keyword arguments, the score
#: replayed as ``early_stopping``'s held-out score, or None for the training loss).
RULES = {
    "tol=1e-3 on the loss (absolute)": ({}, None),
    "tol=1e-3, loss_scale=0.1 (the default)": ({"loss_scale": 0.1}, None),
    "tol=1e-3, loss_scale=0.2": ({"loss_scale": 0.2}, None),
    "tol=1e-3, loss_scale=0.05": ({"loss_scale": 0.05}, None),
    "tol=1e-3 x rows / 50,000": ({"rows_ref": 50_000}, None),
    "tol=1e-3 x rows / 20,000": ({"rows_ref": 20_000}, None),
    "held-out accuracy (fresh rows), tol=1e-3": ({}, "fresh_accuracy"),
}


def replay(epochs: list[dict], n_rows: int, score: str | None = None, *, rows_ref=None,
           **kwargs):
    """``(epoch, stop reason)`` where the monitor stops the recorded run (epochs counted
    from 1), or ``(None, None)``.  ``score``: an entry of the record replayed as the
    held-out score of ``early_stopping`` (the accuracy on fresh rows as many as the held-out
    chunks would hold); ``rows_ref``: ``tol`` times ``n_rows / rows_ref`` (at least 1)."""
    from ooc_kernels.estimators._stopping import EpochMonitor

    tol = 1e-3 * (max(1.0, n_rows / rows_ref) if rows_ref else 1.0)
    mon = EpochMonitor(tol=tol, n_iter_no_change=5, early_stopping=score is not None,
                       **kwargs)
    for i, e in enumerate(epochs):
        if mon.end_epoch(i, e["loss"], None if score is None else e[score], e["seconds"]):
            return i + 1, mon.stop_reason
    return None, None


def simulate(args) -> None:
    table = []
    for path in args.files:
        for run in json.loads(Path(path).read_text())["runs"]:
            ep = run["epochs"]
            if not ep or run["params"]:
                continue
            best = max(range(len(ep)), key=lambda i: ep[i]["test_accuracy"])
            print(f"{run['problem']} n={run['n']} seed={run['seed']}: {len(ep)} epochs "
                  f"recorded, plateau {ep[best]['test_accuracy']:.4f} (epoch {best + 1}, "
                  f"{ep[best]['cpu']:.1f} CPU s)")
            row = {"problem": run["problem"], "n": run["n"], "seed": run["seed"],
                   "recorded": len(ep), "plateau": [best + 1, ep[best]["cpu"],
                                                    ep[best]["test_accuracy"]]}
            for name, (kw, score) in RULES.items():
                if score is not None and score not in ep[0]:
                    continue
                k, reason = replay(ep, run["n"], score, **kw)
                if k is None:
                    print(f"  {name:42s} no stop in {len(ep)} epochs")
                    row[name] = None
                else:
                    e = ep[k - 1]
                    print(f"  {name:42s} epoch {k:3d}  {e['cpu']:7.1f} CPU s  "
                          f"acc {e['test_accuracy']:.4f}")
                    row[name] = [k, e["cpu"], e["test_accuracy"], reason]
            table.append(row)
    if args.out:
        args.out.write_text(json.dumps({"command": " ".join(sys.argv), "rules": list(RULES),
                                        "runs": table}, indent=1))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record")
    r.add_argument("--problem", required=True,
                   choices=["signal_hard", "signal", "binary10", "digits"])
    r.add_argument("--n", type=int, default=100_000)
    r.add_argument("--seeds", type=int, nargs="+", default=[0])
    r.add_argument("--epochs", type=int, default=30)
    r.add_argument("--setting", action="append", type=json.loads)
    r.add_argument("--out", type=Path, required=True)
    s = sub.add_parser("simulate")
    s.add_argument("files", nargs="+")
    s.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    record(args) if args.cmd == "record" else simulate(args)


if __name__ == "__main__":
    main()
