"""What a family supports, declared once and read by the core and the checks.

A family's estimator class sets :attr:`~ooc_kernels.estimators.base.ChunkedEstimator.capabilities`
to a :class:`Capabilities`; the contract suite (:mod:`ooc_kernels.testing`) reads it to
choose which checks apply and with which data and settings, instead of assuming that every
family runs parallel rounds, has a stopping tolerance or learns from labelled rows.

Examples
--------
>>> from ooc_kernels._capabilities import Capabilities
>>> caps = Capabilities(execution="sequential", inputs="supervised", task="regression",
...                     tol=False)
>>> caps.parallel_rounds, caps.needs_y
(False, True)
>>> Capabilities(inputs="paired")
Traceback (most recent call last):
...
ooc_kernels.exceptions.ValidationError: Capabilities.inputs must be one of ('supervised', 'unsupervised', 'two_sample'), got 'paired'
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ooc_kernels.exceptions import ValidationError

__all__ = ["EXECUTIONS", "INPUTS", "TASKS", "Capabilities"]

#: How the engine visits the chunks: shuffled rounds of ``K`` parallel tasks, or once per
#: epoch in storage order (``K = 1``, rows in order inside a chunk).
EXECUTIONS = ("rounds", "sequential")
#: What ``fit`` learns from: labelled rows ``fit(X, y)``, rows alone ``fit(X)``, or two
#: samples ``fit(X_p, X_q)`` (two datasets).
INPUTS = ("supervised", "unsupervised", "two_sample")
#: What the fitted model predicts.
TASKS = ("classification", "regression", "novelty", "density_ratio", "transform")


@dataclass(frozen=True)
class Capabilities:
    """What an estimator family supports.

    Parameters
    ----------
    execution : {"rounds", "sequential"}, default="rounds"
        ``"rounds"``: chunks reshuffled every epoch, ``chunks_per_round`` parallel tasks a
        round whose deltas are reduced; ``"sequential"``: chunks once per epoch in storage
        order, one task a round, rows in order.
    inputs : {"supervised", "unsupervised", "two_sample"}, default="supervised"
        The arguments ``fit`` learns from.
    task : {"classification", "regression", "novelty", "density_ratio", "transform"}, \
default="regression"
        What the model predicts.
    partial_fit : bool, default=True
        ``partial_fit`` exists (for every parameter setting, or for the settings the family
        names in its ``_test_params``).
    tol : bool, default=True
        A stopping tolerance ``tol`` exists (``tol=None`` disables it).
    probabilistic : bool, default=False
        Probabilistic outputs exist under the test settings: ``predict_proba`` for a
        classifier, ``predict(X, return_std=True)`` for a regressor.
    finishing : bool, default=False
        The fit ends with a finishing step run once after the last round (a solve from the
        statistics the rounds reduced).
    checkpoints : bool, default=True
        ``fit(..., checkpoint=path)`` writes checkpoints that a later fit resumes from.
    factorized : bool, default=False
        ``fit``, ``partial_fit``, ``predict`` and ``score`` take factorized data ``A = U V``
        (:class:`~ooc_kernels.data.factorized.Factorized`, a Dataset of the ``factorized``
        schema) as well as rows ``X``.  Without it factorized data is refused before any
        data is read (:func:`~ooc_kernels.estimators._inputs.check_row_input`).
    """

    execution: str = "rounds"
    inputs: str = "supervised"
    task: str = "regression"
    partial_fit: bool = True
    tol: bool = True
    probabilistic: bool = False
    finishing: bool = False
    checkpoints: bool = True
    factorized: bool = False

    def __post_init__(self):
        for name, options in (("execution", EXECUTIONS), ("inputs", INPUTS),
                              ("task", TASKS)):
            value = getattr(self, name)
            if value not in options:
                raise ValidationError(
                    f"Capabilities.{name} must be one of {options}, got {value!r}")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.type == "bool" and not isinstance(value, bool):
                raise ValidationError(
                    f"Capabilities.{f.name} must be True or False, got {value!r}")

    @property
    def parallel_rounds(self) -> bool:
        """Rounds of several parallel tasks are possible (``chunks_per_round`` > 1)."""
        return self.execution == "rounds"

    @property
    def needs_y(self) -> bool:
        """``fit`` takes targets ``y``."""
        return self.inputs == "supervised"
