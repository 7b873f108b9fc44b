"""Every check of the contract suite can fail: each is run on a deliberately broken solver or
estimator (a mutant: a subclass of a real one with one thing wrong) and must raise
``AssertionError`` naming what is wrong; a check that does not apply says why."""

import dataclasses
import threading
from unittest import mock

import dask.array as da
import numpy as np
import pytest
from _example_families import RidgeStatistics

from ooc_kernels.estimators._registry import ESTIMATORS as REGISTRY
from ooc_kernels.families import SOLVERS
from ooc_kernels.families.dsg import DSGClassifier, DSGRegressor
from ooc_kernels.families.dspdc import DSPDCRegressor
from ooc_kernels.testing import (
    NotApplicable,
    check_algorithm_pickles,
    check_algorithm_reference,
    check_algorithm_schedulers,
    check_combine,
    check_estimator_capabilities,
    check_estimator_finishing,
    check_estimator_lazy_predictions,
    check_estimator_partial_fit_loop,
    check_estimator_probabilistic,
    check_estimator_resume,
    check_estimator_save_load,
    check_estimator_schedulers,
    check_estimator_storage_order,
)

REG = DSGRegressor.capabilities


# ------------------------------------------------------------------------- solver checks
def _mutant(**changes):
    """The DSG solver spec with some of its parts broken."""
    return dataclasses.replace(SOLVERS.get("dsg"), **changes)


def _with_algorithm(algorithm_cls):
    """``make_case`` of the DSG spec with its algorithm replaced by ``algorithm_cls``."""
    spec = SOLVERS.get("dsg")

    def make_case(seed=0, shuffle=False):
        case = spec.make_case(seed, shuffle=shuffle)
        return dataclasses.replace(case, algorithm=algorithm_cls(case.algorithm.config))

    return make_case


def test_a_wrong_reference_is_caught():
    spec = SOLVERS.get("dsg")

    def off_by_a_step(case):
        state = spec.reference(case)
        return dataclasses.replace(state, n_iter=state.n_iter + 1)

    with pytest.raises(AssertionError, match="state array 'n_iter'"):
        check_algorithm_reference(_mutant(reference=off_by_a_step))


def test_a_lossy_combine_is_caught():
    from ooc_kernels.families.dsg.solver import DSGAlgorithm

    class Lossy(DSGAlgorithm):
        def combine(self, a, b):                     # forgets b's new blocks
            both, k = super().combine(a, b), len(a.block_ids)
            return dataclasses.replace(
                both, coefs=both.coefs[:k], block_ids=both.block_ids[:k],
                avg_coefs=None if both.avg_coefs is None else both.avg_coefs[:k])

    with pytest.raises(AssertionError, match="state array 'coef'"):
        check_combine(_mutant(make_case=_with_algorithm(Lossy)))


def test_an_algorithm_that_does_not_pickle_is_caught():
    from ooc_kernels.families.dsg.solver import DSGAlgorithm

    class Unpicklable(DSGAlgorithm):
        def __init__(self, config):
            super().__init__(config)
            self.on_step = lambda delta: delta      # a lambda cannot travel to a worker

    with pytest.raises(AssertionError, match="dsg: the algorithm does not pickle"):
        check_algorithm_pickles(_mutant(make_case=_with_algorithm(Unpicklable)))


def test_an_algorithm_whose_result_depends_on_the_scheduler_is_caught():
    from ooc_kernels.families.dsg.solver import DSGAlgorithm

    class ThreadDependent(DSGAlgorithm):
        def chunk_step(self, state, batch, task):   # off the main thread: other blocks
            delta = super().chunk_step(state, batch, task)
            if threading.current_thread() is threading.main_thread():
                return delta
            return dataclasses.replace(delta, coefs=delta.coefs * (1 + 1e-12))

    with pytest.raises(AssertionError, match="threads against sync: state array"):
        check_algorithm_schedulers(_mutant(make_case=_with_algorithm(ThreadDependent)))


# ------------------------------------------------------------------- declaration checks
class _PartialFitClaimed(DSPDCRegressor):
    capabilities = dataclasses.replace(REG, partial_fit=True, tol=True)


class _TolDenied(DSGRegressor):
    capabilities = dataclasses.replace(REG, tol=False)


class _CalledClassifier(DSGRegressor):
    capabilities = dataclasses.replace(REG, task="classification")


class _ProbaDenied(DSGClassifier):
    capabilities = dataclasses.replace(REG, task="classification", probabilistic=False)


class _FinishingClaimed(DSGRegressor):
    capabilities = dataclasses.replace(REG, finishing=True)


class _NotDeclared(DSGRegressor):
    capabilities = {"execution": "rounds"}


@pytest.mark.parametrize("cls, message", [
    (_PartialFitClaimed, r"declares partial_fit=True, but hasattr\(estimator, "
                         r"'partial_fit'\) is False"),
    (_TolDenied, r"declares tol=False, but 'tol' in get_params\(\) is True"),
    (_CalledClassifier, r"declares task='classification', but is_classifier\(estimator\) "
                        r"is False"),
    (_ProbaDenied, r"declares probabilistic=False, but hasattr\(estimator, "
                   r"'predict_proba'\) is True"),
    (_FinishingClaimed, r"declares finishing=True, but 'the class defines its own _finish'"
                        r" is False"),
    (_NotDeclared, r"_NotDeclared.capabilities must be a Capabilities"),
], ids=lambda v: v.__name__ if isinstance(v, type) else "")
def test_a_false_declaration_is_caught(cls, message):
    with pytest.raises(AssertionError, match=message):
        check_estimator_capabilities(cls)


def test_a_missing_partial_fit_must_say_why():
    class Mute(DSPDCRegressor):
        capabilities = dataclasses.replace(REG, partial_fit=False)

        def _partial_fit_available(self):
            raise AttributeError("no")

    with pytest.raises(AssertionError, match="Mute: no partial_fit, and no reason given"):
        check_estimator_capabilities(Mute)


# --------------------------------------------------------------------- estimator checks
class _SchedulerDependent(DSGRegressor):
    """Its model differs on the threaded scheduler with ``K`` tasks a round."""

    broken_k = 1

    def _fitted_arrays(self):
        arrays = dict(super()._fitted_arrays())
        if self.scheduler == "threads" and self.chunks_per_round == self.broken_k:
            arrays["coef"] = np.asarray(arrays["coef"]) * (1 + 1e-12)
        return arrays


class _SchedulerDependentAtK2(_SchedulerDependent):
    broken_k = 2


@pytest.mark.parametrize("cls, k", [(_SchedulerDependent, 1), (_SchedulerDependentAtK2, 2)])
def test_a_fit_that_depends_on_the_scheduler_is_caught(cls, k):
    with pytest.raises(AssertionError, match=rf"\(K = {k}\) fitted on threads against "
                                             r"sync: array 'coef' differs"):
        check_estimator_schedulers(cls)


def _reversed_chunks(data):
    """``data`` with its chunks in the reverse of storage order."""
    order = list(range(data.n_chunks))[::-1]
    return data.replace(variables={k: v.blocks[order] for k, v in data.variables.items()})


class _SequentialThatReorders(DSGRegressor):
    """Declares sequential streaming, but its tasks get the chunks last to first."""

    capabilities = dataclasses.replace(REG, execution="sequential")
    _test_params = {**DSGRegressor._test_params, "shuffle": False, "shuffle_chunks": 1}

    def _engine_data(self, data):
        return super()._engine_data(_reversed_chunks(data))


def test_a_sequential_family_that_reorders_the_chunks_is_caught():
    with pytest.raises(AssertionError, match=r"declares execution='sequential', but its "
                                             r"tasks did not receive the rows of X in "
                                             r"storage order: row 0 of epoch 0"):
        check_estimator_storage_order(_SequentialThatReorders)


def test_the_storage_order_check_does_not_apply_to_shuffled_rounds():
    with pytest.raises(NotApplicable, match="DSGRegressor declares execution='rounds'"):
        check_estimator_storage_order(DSGRegressor)


def test_an_estimator_that_starts_over_instead_of_resuming_is_caught():
    class StartsOver(DSGRegressor):               # ignores resume: refits from scratch
        def fit(self, X, y=None, sample_weight=None, *, checkpoint=None, checkpoint_every=1,
                resume=False):
            return super().fit(X, y, sample_weight, checkpoint=checkpoint,
                               checkpoint_every=checkpoint_every)

    with pytest.raises(AssertionError, match=r"StartsOver resumed in epoch \d+, round \d+: "
                                             r"ran \d+ rounds, but only \d+ of"):
        check_estimator_resume(StartsOver)


def test_a_resume_that_restarts_the_epoch_is_caught():
    from ooc_kernels.estimators import _checkpointing

    class RestartsEpoch(DSGRegressor):            # resumes at the start of the epoch
        def fit(self, *args, **kwargs):
            real = _checkpointing.resume_position

            def epoch_start(*a, **k):
                return real(*a, **k)[0], 0

            with mock.patch.object(_checkpointing, "resume_position", epoch_start):
                return super().fit(*args, **kwargs)

    with pytest.raises(AssertionError, match=r"RestartsEpoch resumed in epoch \d+, round 3: "
                                             r"ran \d+ rounds, but only \d+ of"):
        check_estimator_resume(RestartsEpoch)


def test_an_epoch_with_other_rounds_than_the_chunking_gives_is_caught():
    class DropsAChunk(DSGRegressor):              # never reads its last chunk
        def _engine_data(self, data):
            keep = list(range(data.n_chunks - 1))
            return super()._engine_data(data.replace(
                variables={k: v.blocks[keep] for k, v in data.variables.items()}))

    with pytest.raises(AssertionError, match=r"DropsAChunk: \d+ rounds in \d+ epochs, but 6 "
                                             r"chunks with execution='rounds' and K = 1 "
                                             r"make 6 rounds per epoch"):
        check_estimator_resume(DropsAChunk)


class _Forgetful(DSGRegressor):
    def _restore_fitted(self, arrays, meta, where):
        super()._restore_fitted({"coef": arrays["coef"] * 0.5}, meta, where)

    def partial_fit(self, X, y=None, classes=None):   # one pass too many
        super().partial_fit(X, y)
        return super().partial_fit(X, y)


def test_a_save_that_loses_the_model_is_caught():
    REGISTRY.register("_Forgetful", _Forgetful)   # ok.load finds classes by registered name
    try:
        with pytest.raises(AssertionError, match="loaded: array 'coef' differs"):
            check_estimator_save_load(_Forgetful)
    finally:
        REGISTRY._entries.pop("_Forgetful")


def test_a_partial_fit_that_is_not_one_epoch_is_caught():
    with pytest.raises(AssertionError, match="partial_fit loop: array 'coef' differs"):
        check_estimator_partial_fit_loop(_Forgetful)


def test_the_partial_fit_check_does_not_apply_without_partial_fit():
    with pytest.raises(NotApplicable, match="DSPDCRegressor declares partial_fit=False"):
        check_estimator_partial_fit_loop(DSPDCRegressor)


def test_eager_predictions_of_a_lazy_input_are_caught():
    class Eager(DSGRegressor):
        def predict(self, X):
            out = super().predict(X)
            return out.compute() if isinstance(out, da.Array) else out

    with pytest.raises(AssertionError, match=r"Eager.predict: lazy input gave "
                                             r"<class 'numpy.ndarray'>"):
        check_estimator_lazy_predictions(Eager)


def test_lazy_predictions_that_differ_are_caught():
    class Drifts(DSGRegressor):
        def _decision_2d(self, X):
            out = super()._decision_2d(X)
            return out + 1e-4 if isinstance(out, da.Array) else out

    with pytest.raises(AssertionError, match="Drifts.predict: lazy predictions differ"):
        check_estimator_lazy_predictions(Drifts)


def test_probabilities_that_do_not_sum_to_one_are_caught():
    class Leaky(DSGClassifier):
        @staticmethod
        def _proba_from_decision(dec):
            return 0.9 * DSGClassifier._proba_from_decision(dec)

    with pytest.raises(AssertionError, match=r"Leaky.predict_proba: rows do not sum to one "
                                             r"\(from 0\.[89]\d* to 0\.9"):
        check_estimator_probabilistic(Leaky)


def test_probabilities_in_the_wrong_class_order_are_caught():
    class Swapped(DSGClassifier):
        @staticmethod
        def _proba_from_decision(dec):
            return DSGClassifier._proba_from_decision(dec)[:, ::-1]

    with pytest.raises(AssertionError, match="Swapped.predict_proba: the predicted class is "
                                             "not the most probable one"):
        check_estimator_probabilistic(Swapped)


def test_a_negative_standard_deviation_is_caught():
    class Unsure(DSGRegressor):
        capabilities = dataclasses.replace(REG, probabilistic=True)

        def predict(self, X, return_std=False):
            mean = super().predict(X)
            return (mean, np.full(len(mean), -1.0)) if return_std else mean

    with pytest.raises(AssertionError, match=r"Unsure.predict\(X, return_std=True\): "
                                             r"negative or non-finite standard deviations"):
        check_estimator_probabilistic(Unsure)


def test_the_probabilistic_check_does_not_apply_without_probabilities():
    with pytest.raises(NotApplicable, match="DSGRegressor declares probabilistic=False"):
        check_estimator_probabilistic(DSGRegressor)


# ---------------------------------------------------------------- the finishing step
class _FinishesTwice(RidgeStatistics):
    def fit(self, *args, **kwargs):
        super().fit(*args, **kwargs)
        self._state = self._finish(self._state, None, None)   # a second solve
        return self


class _ResumeSkipsFinishing(RidgeStatistics):
    def fit(self, *args, resume=False, **kwargs):
        if resume:                                  # a resumed fit keeps the rounds' state
            self._finish = lambda state, data, sched: state
        return super().fit(*args, resume=resume, **kwargs)


class _ResumeFinishesOtherwise(RidgeStatistics):
    def fit(self, *args, resume=False, **kwargs):
        self._resumed = resume
        return super().fit(*args, resume=resume, **kwargs)

    def _finish(self, state, data, sched):          # a resumed fit solves with 2 alpha
        finished = super()._finish(state, data, sched)
        if not self._resumed:
            return finished
        d = len(state["xty"])
        coef = np.linalg.solve(state["xtx"] / state["n"] + 2 * self.alpha * np.eye(d),
                               state["xty"] / state["n"])
        return {**finished, "coef": coef}


@pytest.mark.parametrize("cls, message", [
    (_FinishesTwice, r"_FinishesTwice: the finishing step _finish ran 2 times in one fit, "
                     r"not once"),
    (_ResumeSkipsFinishing, r"_ResumeSkipsFinishing: the resumed fit ran the finishing "
                            r"step _finish 0 times, not once"),
    (_ResumeFinishesOtherwise, r"_ResumeFinishesOtherwise resumed after round \d+ and "
                               r"finished: array 'coef' differs"),
], ids=lambda v: v.__name__ if isinstance(v, type) else "")
def test_a_finishing_step_that_does_not_run_once_is_caught(cls, message):
    with pytest.raises(AssertionError, match=message):
        check_estimator_finishing(cls)


def test_the_finishing_check_does_not_apply_without_a_finishing_step():
    with pytest.raises(NotApplicable, match="DSGRegressor declares finishing=False"):
        check_estimator_finishing(DSGRegressor)


def test_a_sequential_solver_that_visits_rows_out_of_order_is_caught():
    """The reference check runs a sequential family in storage order: an algorithm that
    visits a chunk's rows backwards no longer equals the in-order reference."""
    from _example_families import LMS_SOLVER, LMSAlgorithm

    class Backwards(LMSAlgorithm):
        def chunk_step(self, state, batch, task):
            return super().chunk_step(state, {k: v[::-1] for k, v in batch.items()}, task)

    def make_case(seed=0, shuffle=False):
        case = LMS_SOLVER.make_case(seed=seed, shuffle=shuffle)
        return dataclasses.replace(case, algorithm=Backwards(case.algorithm.eta))

    check_algorithm_reference(LMS_SOLVER)            # the real one passes
    with pytest.raises(AssertionError, match="state array 'w'"):
        check_algorithm_reference(dataclasses.replace(LMS_SOLVER, make_case=make_case))


def test_combine_does_not_apply_to_a_sequential_solver():
    from _example_families import LMS_SOLVER

    with pytest.raises(NotApplicable, match="never combines"):
        check_combine(LMS_SOLVER)


class _ReadsLabelsByPosition(DSGRegressor):
    """Drops the feature labels of an xarray input before predicting: reads by position."""

    def _predict_data(self, X):
        import xarray as xr

        if isinstance(X, xr.DataArray) and X.dims[1] in X.coords:
            X = X.drop_vars(X.dims[1])
        return super()._predict_data(X)


def test_an_estimator_that_reads_labelled_features_by_position_is_caught():
    from ooc_kernels.testing import check_estimator_feature_coords

    with pytest.raises(AssertionError, match="_ReadsLabelsByPosition.predict of reordered "
                       "coordinates was accepted"):
        check_estimator_feature_coords(_ReadsLabelsByPosition)
