"""The order the engine keeps: ``tree_reduce`` combines neighbours left operand first, so a
non-commutative combination (DSG's composition of local runs) is reduced in task order,
checked against ``functools.reduce``; and a checkpoint written after the second-to-last
round of an epoch names the epoch's last round (``epoch, n_rounds - 1``), from which a
resume gives the uninterrupted model."""

from __future__ import annotations

import functools
import operator

import dask
import numpy as np
import pytest

import ooc_kernels as ok
from ooc_kernels.parallel.checkpoint import read_checkpoint
from ooc_kernels.parallel.engine import tree_reduce

from _interrupt import _interrupt_after, _Stop


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13])
@pytest.mark.parametrize("named", [False, True])
def test_tree_reduce_keeps_the_order_of_a_non_commutative_combine(n, named):
    words = [chr(ord("a") + i) for i in range(n)]
    parts = [dask.delayed(w) for w in words]
    name = (lambda level, node: f"cat-{n}-l{level}-n{node}") if named else None
    got = tree_reduce(parts, operator.add, name=name).compute(scheduler="sync")
    assert got == functools.reduce(operator.add, words)


# 12 chunks in groups of 2, 2 groups per round: 3 rounds an epoch
PARAMS = dict(n_features=64, block_size=16, batch_size=16, max_iter=2, tol=None,
              chunks_per_round=2, shuffle_chunks=2, random_state=0, scheduler="sync")


def test_resume_after_the_second_to_last_round_of_an_epoch(tmp_path, monkeypatch):
    from ooc_kernels.data.schema import open_zarr_dataset

    ds = open_zarr_dataset(ok.make_dataset("nonlinear_binary", tmp_path / "nb.zarr", 480,
                                           chunk_size=40, random_state=0, n_features=4,
                                           progress=False))
    reference = ok.DSGClassifier(**PARAMS).fit(ds)
    ck = tmp_path / "ck.zarr"
    rounds_per_epoch, done = 3, 2            # epoch 0's rounds 0 and 1 done
    _interrupt_after(monkeypatch, done)
    with pytest.raises(_Stop):
        ok.DSGClassifier(**PARAMS).fit(ds, checkpoint=ck, checkpoint_every=1)
    monkeypatch.undo()
    position = read_checkpoint(ck).meta["position"]
    assert position == {"epoch": done // rounds_per_epoch, "round": done % rounds_per_epoch}
    resumed = ok.DSGClassifier(**PARAMS).fit(ds, checkpoint=ck, resume=True)
    assert np.array_equal(resumed.coef_, reference.coef_)
    assert resumed.n_iter_ == reference.n_iter_
