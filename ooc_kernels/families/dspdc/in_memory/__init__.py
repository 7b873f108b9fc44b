"""DSPDC in memory: research code apart from the out-of-core path.

Nothing here reads a chunked store or runs on Dask.  The modules serve the tests, the
benchmarks and :class:`~ooc_kernels.families.dspdc.MultiTaskLMNN`:

``paper``
    Algorithm 1 of the paper written out in plain NumPy, the oracle of the numba kernels.
``baselines``, ``kernels_sdca``
    DSPDC and the paper's two baselines (SPDC, SDCA) with timed gap histories.
``blocks``, ``block_prox``
    Block-coordinate DSPDC and its block proximal maps.
``matrix_risk``, ``mtlmnn``
    Multiple-matrix risk minimization and multi-task LMNN by block DSPDC.
"""
