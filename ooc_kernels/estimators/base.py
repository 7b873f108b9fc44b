"""Machinery shared by the DSG estimators: inputs, hyperparameters, fitting through the engine.

The public classes live in :mod:`ooc_kernels.estimators.dsg`.
"""

from __future__ import annotations


import dask
import dask.array as da
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, check_random_state, validate_data

from ooc_kernels.estimators._validation import check_float, check_int, check_option
from ooc_kernels._checks import non_finite_error
from ooc_kernels.exceptions import DivergenceError, InputTypeError, ValidationError
from ooc_kernels.features.bandwidth import median_heuristic
from ooc_kernels.parallel.chunked import ChunkedData, as_chunked, is_lazy_input
from ooc_kernels.parallel.engine import resolve_scheduler, run_rounds
from ooc_kernels.parallel.sampling import sample_rows
from ooc_kernels.parallel.schedule import derive_seed
from ooc_kernels.solvers.dsg import DSGAlgorithm, DSGConfig, init_state, predict_chunk

__all__ = ["BaseDSG"]

_KERNELS = ("rbf",)
#: ``shuffle_chunks="auto"``: the X bytes one task may gather to mix rows across chunks.
SHUFFLE_BYTES = 8 * 2**20
_LEARNING_RATES = ("inverse", "constant")


def _sklearn_validated(func, *args, **kwargs):
    """scikit-learn's input validation, its ValueErrors re-raised as ValidationError."""
    try:
        return func(*args, **kwargs)
    except ValidationError:
        raise
    except TypeError as err:
        raise InputTypeError(str(err)) from err
    except ValueError as err:
        raise ValidationError(str(err)) from err


def _predict_block(X, model):
    config, state = model
    return predict_chunk(config, state, X)  # one chunk in, one chunk of predictions out


class BaseDSG(BaseEstimator):
    """Common parameters and logic of :class:`DSGClassifier` and :class:`DSGRegressor`."""

    _losses: tuple[str, ...] = ()
    _is_classifier = False

    def __init__(self, *, loss, kernel="rbf", bandwidth="median", median_multiplier=1.0,
                 alpha=1e-5, n_features=4096, block_size=256, batch_size=256, n_epochs=5,
                 learning_rate="inverse", eta0=100.0, t0=100.0, chunks_per_round=1,
                 chunk_size=10_000, shuffle=True,
                 shuffle_chunks="auto", on_invalid="error", random_state=None,
                 scheduler=None, progress=None):
        self.loss = loss
        self.kernel = kernel
        self.bandwidth = bandwidth
        self.median_multiplier = median_multiplier
        self.alpha = alpha
        self.n_features = n_features
        self.block_size = block_size
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.t0 = t0
        self.chunks_per_round = chunks_per_round
        self.chunk_size = chunk_size
        self.shuffle = shuffle
        self.shuffle_chunks = shuffle_chunks
        self.on_invalid = on_invalid
        self.random_state = random_state
        self.scheduler = scheduler
        self.progress = progress

    def __sklearn_clone__(self):
        """scikit-learn's ``clone``, sharing the ``scheduler`` instead of copying it.

        A ``distributed.Client`` is a connection: it cannot be deep-copied (and a copy would
        be another connection), so a clone uses the same one.  This is what lets
        ``GridSearchCV`` and ``cross_val_score`` run on a cluster.
        """
        from sklearn.base import clone

        params = self.get_params(deep=False)
        scheduler = params.pop("scheduler")
        return type(self)(**{k: clone(v, safe=False) for k, v in params.items()},
                          scheduler=scheduler)

    # ------------------------------------------------------------------ validation
    def _check_params(self) -> dict:
        p = {}
        p["loss"] = check_option("loss", self.loss, self._losses)
        p["kernel"] = check_option("kernel", self.kernel, _KERNELS)
        if isinstance(self.bandwidth, str):
            check_option("bandwidth", self.bandwidth, ("median",))
        else:
            check_float("bandwidth", self.bandwidth, low=0.0, low_open=True)
        p["median_multiplier"] = check_float("median_multiplier", self.median_multiplier,
                                             low=0.0, low_open=True)
        p["alpha"] = check_float("alpha", self.alpha, low=0.0)
        p["block_size"] = check_int("block_size", self.block_size, low=1)
        p["n_features"] = check_int("n_features", self.n_features, low=1)
        if p["n_features"] % p["block_size"]:
            raise ValidationError(
                f"n_features={self.n_features} is not a multiple of block_size="
                f"{self.block_size}; the model holds whole feature blocks. Use e.g. "
                f"n_features={max(1, p['n_features'] // p['block_size']) * p['block_size']}."
            )
        p["batch_size"] = check_int("batch_size", self.batch_size, low=1)
        p["n_epochs"] = check_int("n_epochs", self.n_epochs, low=1)
        p["learning_rate"] = check_option("learning_rate", self.learning_rate,
                                          _LEARNING_RATES)
        p["eta0"] = check_float("eta0", self.eta0, low=0.0, low_open=True)
        p["t0"] = check_float("t0", self.t0, low=0.0)
        p["chunks_per_round"] = check_int("chunks_per_round", self.chunks_per_round, low=1)
        p["chunk_size"] = check_int("chunk_size", self.chunk_size, low=1)
        if isinstance(self.shuffle_chunks, str):
            check_option("shuffle_chunks", self.shuffle_chunks, ("auto",))
        else:
            check_int("shuffle_chunks", self.shuffle_chunks, low=1)
        p["on_invalid"] = check_option("on_invalid", self.on_invalid, ("error", "skip"))
        resolve_scheduler(self.scheduler)
        return p

    # ------------------------------------------------------------------ inputs
    def _chunked_fit_input(self, X, y, *, reset: bool) -> ChunkedData:
        if is_lazy_input(X) or (hasattr(X, "read") and callable(X.read)):
            data = as_chunked(X, y, chunk_size=self.chunk_size, require_y=True,
                              check_y=self.on_invalid != "skip")
            if reset:
                self.n_features_in_ = data.n_features
                if data.feature_names is not None:
                    self.feature_names_in_ = np.asarray(data.feature_names, dtype=object)
                elif hasattr(self, "feature_names_in_"):
                    del self.feature_names_in_
            else:
                self._check_lazy_features(data)
            return data
        skip = self.on_invalid == "skip"
        X, y = _sklearn_validated(validate_data, self, X, y, reset=reset,
                                  dtype=[np.float64, np.float32],
                                  y_numeric=not self._is_classifier, multi_output=False,
                                  ensure_all_finite=not skip)
        if skip:  # invalid rows are dropped chunk by chunk by the solver
            X = da.from_array(X, chunks=(self.chunk_size, X.shape[1]))
            y = da.from_array(np.asarray(y), chunks=(X.chunks[0],))
        return as_chunked(X, y, chunk_size=self.chunk_size, require_y=True,
                          check_y=self.on_invalid != "skip")

    def _check_lazy_features(self, data: ChunkedData) -> None:
        """A lazy input after fit: its number of features, and its column names when both
        it and the training data had names (as scikit-learn checks in-memory frames)."""
        if data.n_features != self.n_features_in_:
            raise ValidationError(
                f"X has {data.n_features} features, but {type(self).__name__} is "
                f"expecting {self.n_features_in_} features as input."
            )
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is not None and data.feature_names is not None \
                and tuple(fitted) != data.feature_names:
            raise ValidationError(
                f"The feature names should match those that were passed during fit: "
                f"fitted with {list(fitted)}, got {list(data.feature_names)}; select and "
                "order the columns as in fit, e.g. X[list(model.feature_names_in_)]."
            )

    def _chunked_predict_input(self, X) -> tuple[ChunkedData | np.ndarray, bool]:
        """Lazy inputs as :class:`ChunkedData`; in-memory inputs as the validated array."""
        check_is_fitted(self, "_state")
        if is_lazy_input(X) or (hasattr(X, "read") and callable(X.read)):
            data = as_chunked(X, chunk_size=self.chunk_size)
            self._check_lazy_features(data)
            return data, True
        X = _sklearn_validated(validate_data, self, X, reset=False,
                               dtype=[np.float64, np.float32])
        return X, False

    # ------------------------------------------------------------------ model setup
    def _initialize(self, data: ChunkedData, params: dict, classes=None) -> None:
        rs = check_random_state(self.random_state)
        seed = int(rs.randint(0, 2**31 - 1))
        self.random_seed_ = seed
        self._data_seed = derive_seed(seed, 2)
        classes_ = self._resolve_classes(data, classes)
        n_classes = 0 if classes_ is None else len(classes_)
        target, n_outputs, loss_id = self._target_spec(params["loss"], n_classes)
        if isinstance(self.bandwidth, str):
            if data.n_samples < 2:
                raise ValidationError(
                    f"bandwidth='median' needs at least 2 samples, got {data.n_samples} "
                    "sample; pass a numeric bandwidth or more data."
                )
            sample, chunk_of, row_of = sample_rows(data, n_rows=2000, max_chunks=8,
                                                   seed=derive_seed(seed, 3),
                                                   scheduler=self.scheduler, return_index=True)
            bad = ~np.isfinite(sample).all(axis=1)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise non_finite_error(
                    "X", None, int(chunk_of[i]), int(row_of[i]),
                    context=" (found while estimating the median bandwidth)")
            bandwidth = median_heuristic(sample, params["median_multiplier"],
                                         random_state=derive_seed(seed, 4) % 2**32)
        else:
            bandwidth = float(self.bandwidth)
        dtype = "float32" if data.dtype == np.float32 else "float64"
        self._config = DSGConfig(
            loss_id=loss_id, target=target, n_outputs=n_outputs,
            n_features_in=data.n_features, block_size=params["block_size"],
            n_blocks=params["n_features"] // params["block_size"], bandwidth=bandwidth,
            feature_seed=derive_seed(seed, 1), alpha=params["alpha"],
            batch_size=params["batch_size"], learning_rate=params["learning_rate"],
            eta0=params["eta0"], t0=params["t0"], dtype=dtype,
            classes=None if classes_ is None else tuple(classes_.tolist()),
            shuffle=bool(self.shuffle), on_invalid=params["on_invalid"])
        self._state = init_state(self._config)
        self._n_epochs_done = 0
        self.bandwidth_ = bandwidth
        self.feature_seed_ = self._config.feature_seed
        if classes_ is not None:
            self.classes_ = classes_

    def _resolve_shuffle_chunks(self, data: ChunkedData, params: dict) -> int:
        """Chunks whose rows one task mixes (see the ``shuffle_chunks`` parameter)."""
        if not isinstance(self.shuffle_chunks, str):
            return int(min(self.shuffle_chunks, data.n_chunks))
        if not self.shuffle:
            return 1
        # the fewest whole rounds of K groups whose groups fit the memory budget
        chunk_bytes = max(data.chunk_sizes) * data.n_features * data.dtype.itemsize
        by_memory = max(1, SHUFFLE_BYTES // max(chunk_bytes, 1))
        k = params["chunks_per_round"]
        n_rounds = -(-data.n_chunks // (k * by_memory))
        n_groups = min(data.n_chunks, k * n_rounds)
        return int(-(-data.n_chunks // n_groups))

    def _run(self, data: ChunkedData, params: dict, *, start: tuple[int, int],
             end_epoch: int, callback=None) -> None:
        if data.n_features != self._config.n_features_in:
            raise ValidationError(
                f"X has {data.n_features} features, but {type(self).__name__} is expecting "
                f"{self._config.n_features_in} features as input."
            )
        dtype = "float32" if data.dtype == np.float32 else "float64"
        if dtype != self._config.dtype:
            data = ChunkedData(X=data.X.astype(self._config.dtype), y=data.y,
                               attrs=data.attrs)

        def after_round(state, info):
            # the model is small: checking it every round costs nothing next to a chunk
            if not np.isfinite(state.coef).all():
                raise DivergenceError(
                    f"the fit produced non-finite coefficients in epoch {info.epoch}, round "
                    f"{info.round} (step sizes eta0={self.eta0}, t0={self.t0}); lower eta0, "
                    "raise t0, or standardize X (and y for regression)."
                )
            if callback is not None:
                callback(state, info)

        self.shuffle_chunks_ = self._resolve_shuffle_chunks(data, params)
        result = run_rounds(DSGAlgorithm(self._config), self._state, data,
                            n_epochs=end_epoch, chunks_per_round=params["chunks_per_round"],
                            seed=self._data_seed, shuffle=bool(self.shuffle),
                            shuffle_chunks=self.shuffle_chunks_,
                            start_epoch=start[0], start_round=start[1],
                            scheduler=self.scheduler, progress=self.progress,
                            desc=type(self).__name__, callback=after_round)
        self._state = result.state
        self._n_epochs_done = end_epoch
        self.n_iter_ = self._state.n_iter
        self.n_blocks_seen_ = self._state.n_blocks_seen
        self.n_samples_seen_ = self._state.n_samples_seen
        self.n_samples_skipped_ = self._state.n_samples_skipped

    # ------------------------------------------------------------------ public API
    def fit(self, X, y=None, *, checkpoint=None, checkpoint_every=1, resume=False):
        """Fit the model with ``n_epochs`` passes of doubly stochastic gradients.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), dask array, xarray.Dataset or
            Intake reader.  Dask/Zarr inputs are read chunk by chunk, never as a whole.
        y : array-like or dask array of shape (n_samples,), optional when ``X`` is a
            Dataset with a ``y`` variable.
        checkpoint : str or path-like, optional
            Zarr folder where the fit's state is written every ``checkpoint_every`` rounds
            and at the end, atomically (a crash while writing keeps the previous one).
        checkpoint_every : int, default=1
            Rounds between checkpoints.
        resume : bool, default=False
            Continue from ``checkpoint`` if it exists.  The result is bit-identical to an
            uninterrupted fit.  A checkpoint of another dataset, other hyperparameters
            (``n_epochs`` may grow) or another library version is refused.

        Returns
        -------
        self
        """
        from ooc_kernels.estimators._checkpointing import CheckpointWriter, resume_position
        from ooc_kernels.parallel.checkpoint import read_checkpoint

        params = self._check_params()
        if resume and checkpoint is None:
            raise ValidationError(
                "resume=True needs the checkpoint path: pass checkpoint=PATH as well."
            )
        data = self._chunked_fit_input(X, y, reset=True)
        writer = None
        if checkpoint is not None:  # validates checkpoint_every before any work
            writer = CheckpointWriter(self, data, checkpoint, checkpoint_every,
                                      params["n_epochs"])
        ck = read_checkpoint(checkpoint) if (checkpoint is not None and resume) else None
        if ck is not None:
            start = resume_position(self, ck, data, checkpoint)
        else:
            self._initialize(data, params)
            start = (0, 0)
        self._run(data, params, start=start, end_epoch=params["n_epochs"], callback=writer)
        if writer is not None:
            writer.write(self._state, (params["n_epochs"], 0))
        return self

    def partial_fit(self, X, y=None, classes=None):
        """One pass over ``X`` continuing from the current model (initializing it if needed).

        Parameters
        ----------
        X, y : as in :meth:`fit`.
        classes : array-like, optional
            All the classes (classifiers): required on the first call unless ``X`` is a
            Dataset whose ``classes`` attribute lists them.
        """
        params = self._check_params()
        first = not hasattr(self, "_state")
        data = self._chunked_fit_input(X, y, reset=first)
        if first:
            self._initialize(data, params, classes=classes)
        elif classes is not None and self._is_classifier:
            given = np.unique(np.asarray(classes))
            if not np.array_equal(given, self.classes_):
                raise ValidationError(
                    f"classes={given.tolist()} differs from the classes of the first "
                    f"partial_fit call ({self.classes_.tolist()}); pass the same list."
                )
        self._run(data, params, start=(self._n_epochs_done, 0),
                  end_epoch=self._n_epochs_done + 1)
        return self

    def _decision_2d(self, X):
        """Decision values (n, n_outputs): NumPy for in-memory input, Dask for lazy input."""
        data, lazy = self._chunked_predict_input(X)
        config, state = self._config, self._state
        if lazy and data.dtype != np.dtype(config.dtype):
            data = ChunkedData(X=data.X.astype(config.dtype), y=None, attrs=data.attrs)
        if lazy:
            from ooc_kernels.data.integrity import check_finite_blocks

            model = dask.delayed((config, state), traverse=False)
            Xc = check_finite_blocks(data.X, "X")  # NaN/inf named by chunk and row
            return Xc.map_blocks(_predict_block, model,
                                     chunks=(Xc.chunks[0], (config.n_outputs,)),
                                     dtype=np.dtype(config.dtype), meta=np.empty((0, 0)))
        X_np = data  # the caller's validated in-memory array, sliced without a copy
        step = self.chunk_size
        out = [predict_chunk(config, state, X_np[lo:lo + step])
               for lo in range(0, X_np.shape[0], step)]
        return np.concatenate(out) if out else np.zeros((0, config.n_outputs))

    @property
    def coef_(self) -> np.ndarray:
        """Coefficient blocks in use, shape (n_blocks_used, block_size, n_outputs)."""
        check_is_fitted(self, "_state")
        return self._state.coef[: self._state.n_blocks_used].copy()

    def save(self, path) -> None:
        """Write the fitted model to a Zarr group at ``path`` (atomically, no pickle).

        See :func:`ooc_kernels.load`.
        """
        from ooc_kernels.estimators.persistence import save_model

        save_model(self, path)

