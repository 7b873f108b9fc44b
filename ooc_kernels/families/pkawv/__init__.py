"""Online kernel regression with projections (Jezequel, Gaillard, Rudi 2019): PKAWV.

Kernel-AWV (the online kernel ridge forecaster of Azoury, Warmuth and Vovk) projected on a
finite basis: the Gaussian kernel's Taylor basis, a Nystrom dictionary grown online by
KORS, or a dictionary chosen beforehand.  Its modules:

``taylor``, ``kernels_taylor``
    The Gaussian kernel's Taylor basis (``C(M + d, M)`` features) and its numba kernel.
``nystrom_fixed``
    The Nystrom embedding of a dictionary chosen beforehand, and its out-of-core draw.
``batch``
    :class:`ProjectedKernelRidge`: ``Phi^T Phi`` and ``Phi^T y`` reduced across chunks,
    then one exact solve.
``kernels_online``, ``solver``, ``online``
    :class:`OnlineKernelRidge`: predict-then-update over the rows in storage order (the
    numba kernels of the Taylor / fixed, KORS Nystrom and exact learners, the sequential
    chunk algorithm, the estimator).
``reference``
    The online forecasters solved directly at every round in plain NumPy, KORS, and the
    quantities of the regret bounds: the oracles of the kernels.

Examples
--------
>>> from ooc_kernels.families.pkawv.taylor import TaylorBasis
>>> TaylorBasis(n_features_in=2, degree=3, bandwidth=1.0).n_components
10
"""

from ooc_kernels._registry import lazy_exports

#: The modules that register this family's solver and estimators (imported by the
#: registries on their first lookup; importing this package alone stays cheap).
__registers__ = ("ooc_kernels.families.pkawv.batch", "ooc_kernels.families.pkawv.solver",
                 "ooc_kernels.families.pkawv.online")

#: Public names, imported from their module on first use.
_PUBLIC = {
    "TaylorBasis": "taylor",
    "FixedNystromBasis": "nystrom_fixed",
    "ProjectedKernelRidge": "batch",
    "OnlineKernelRidge": "online",
}

__all__ = sorted(_PUBLIC)

__getattr__ = lazy_exports(__name__, _PUBLIC)
