"""DSPDC in memory: could the last epoch certify its start without iterating?

Out of core, a task that completes the losses of its epoch's start skips its iterations
when that start's gap against the duals of the state it received is within ``tol``
(``DSPDCAlgorithm.certifies_start``).  In memory with the defaults a round is one task on
the whole problem, so the only duals that task has before iterating are the start's own.
This script runs the peer table's problems (``dspdc_peers.py``: 50,000 x 50, ``alpha =
1e-4``) as NumPy arrays at the defaults and records, at every epoch, the start's relative
gap against its own duals (``(P(x_e) - D(y_e)) / |P(x_e)|``, what a task could check
before iterating) next to the gap the fit certifies (``P(x_e)`` against the better of
``D(y_e)`` and ``D(y_{e+1})``, the duals after the epoch's iterations).  When the last
epoch's own-dual gap is above ``tol``, the last epoch's iterations are what certify the
fit, and skipping them would not stop it.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python benchmarks/dspdc_start_gap.py --seeds 0 1 2 \\
        --out benchmarks/results/dspdc_in_memory_start_gap.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import warnings
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: (name, loss, l1_ratio)
PROBLEMS = [("ridge", "squared", 0.0), ("elastic_net", "squared", 0.5),
            ("logistic", "logistic", 0.0)]


def run(args) -> dict:
    sys.path.insert(0, str(HERE))
    import dspdc_peers as peers

    import ooc_kernels as ok
    from ooc_kernels.families.dspdc import _memory_task

    real = _memory_task.MemoryTasks.run
    own_gaps: list[float] = []

    def recording(self, config, state, task):
        delta = real(self, config, state, task)
        if delta.start_rows == config.n_samples:     # the task summed its start's losses
            summed = replace(state, epoch_start=state, start_loss=delta.start_loss,
                             start_rows=delta.start_rows)
            primal = summed.start_primal_value(config)
            own_gaps.append((primal - state.dual_value(config)) / abs(primal))
        return delta

    _memory_task.MemoryTasks.run = recording
    tmp = Path(tempfile.mkdtemp(prefix="dspdc-start-gap-"))
    stores, out = {}, {"n": args.n, "p": args.p, "alpha": 1e-4, "fits": []}
    try:
        for name, loss, l1_ratio in PROBLEMS:
            task = "regression" if loss == "squared" else "classification"
            if task not in stores:
                stores[task] = peers.write_store(tmp / f"{task}.zarr", args.n, args.p,
                                                 args.chunk_size, task,
                                                 1 if task == "regression" else 2)
            _, X, y = peers.load(stores[task])
            Est = ok.DSPDCRegressor if loss == "squared" else ok.DSPDCClassifier
            kw = {} if l1_ratio == 0 else {"l1_ratio": l1_ratio}
            for tol in peers.TARGETS:
                for seed in args.seeds:
                    own_gaps.clear()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est = Est(random_state=seed, progress=False, tol=tol, **kw).fit(X, y)
                    fit = {"problem": name, "tol": tol, "seed": seed,
                           "epochs": int(est.n_iter_),
                           "own_dual_gaps": [float(g) for g in own_gaps],
                           "certified_gaps": [float(h["relative_gap"])
                                              for h in est.gap_history_],
                           "last_start_certified_by_own_duals": bool(own_gaps[-1] <= tol)}
                    out["fits"].append(fit)
                    print(json.dumps({k: fit[k] for k in ("problem", "tol", "seed", "epochs",
                                                          "last_start_certified_by_own_duals")}
                                     | {"own_last": fit["own_dual_gaps"][-1],
                                        "certified_last": fit["certified_gaps"][-1]}),
                          flush=True)
    finally:
        _memory_task.MemoryTasks.run = real
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50_000)
    parser.add_argument("--p", type=int, default=50)
    parser.add_argument("--chunk-size", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = run(args)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
