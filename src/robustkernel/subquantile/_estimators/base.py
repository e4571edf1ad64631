"""Shared estimator core of the Subquantile regressor and classifier."""

from __future__ import annotations

from dataclasses import replace
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
from sklearn.base import _fit_context, clone
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted

from ..._kernel_model.estimator import KERNEL_CONSTRAINTS, KernelModel
from ..._kernel_model.kernels import KERNELS
from .._automatic.components import resolve_components
from .._automatic.feature_scaling import FeatureScaling, feature_scaling
from .._backends.distributed import distributed_fit
from .._fit.weighted_fit import fit_in_memory
from .._intervals import internal_fits
from .._result import FitResult
from .._settings import column_units, input_kind, is_dask_array, validate_settings
from .._solve.features import APPROXIMATIONS, predict_in_chunks
from .._solve.solvers import SOLVERS
from .._tasks import Task

ROW_ATTRIBUTES = ("inlier_mask_", "outlier_scores_", "row_weights_")
ROW_ATTRIBUTES_KEY = "_row_attributes"
"""The per-row attributes live in ``__dict__[ROW_ATTRIBUTES_KEY]``, read through properties that
explain a Dask fit's attribute whose cluster is gone."""


def _row_attribute(name: str) -> tuple[Any, Any, Any]:
    """The getter, setter and deleter of the per-row attribute ``name``."""

    def get(self: BaseSubquantile) -> Any:
        try:
            value = self.__dict__[ROW_ATTRIBUTES_KEY][name]
        except KeyError:
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}"
            ) from None
        if is_dask_array(value) and not _on_a_live_cluster(value):
            raise AttributeError(
                f"{name} of this {type(self).__name__} was fitted on Dask arrays and stayed on "
                "the cluster as a persisted Dask array, which lives as long as the client that "
                "fitted it: that client has closed, and the values are gone. Keep them by "
                "calling model.compute_row_attributes() (or computing the attribute) before "
                "the client closes, e.g. inside the `with Client(...)` block; the fitted model "
                "itself (predict, score) does not need the cluster."
            )
        return value

    def set(self: BaseSubquantile, value: Any) -> None:
        self.__dict__.setdefault(ROW_ATTRIBUTES_KEY, {})[name] = value

    def delete(self: BaseSubquantile) -> None:
        self.__dict__.get(ROW_ATTRIBUTES_KEY, {}).pop(name, None)

    return get, set, delete


def _on_a_live_cluster(array: Any) -> bool:
    """Whether the Dask ``array``'s persisted chunks are still held: True without
    ``dask.distributed`` futures (the local scheduler keeps them in the graph)."""
    try:
        from distributed import futures_of
    except ImportError:
        return True
    return all(
        future.status == "finished" and future.client.status == "running"
        for future in futures_of(array)
    )


class BaseSubquantile(KernelModel):
    """Kernel model fitted on the (1 - epsilon) fraction of rows it explains best.

    Subclasses write their own ``__init__`` (every parameter of ``_parameter_constraints``,
    plus their own: the regressor's link, the classifier's loss), name their
    :class:`~robustkernel.subquantile._tasks.Task` (``_task``: the loss, its subset fitters, the
    rules of the automatic configuration) and score left-out rows (``_row_losses``).
    """

    _accepts_sparse = True

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **KERNEL_CONSTRAINTS,
        "alpha": [*KERNEL_CONSTRAINTS["alpha"], StrOptions({"auto"})],
        "kernel": [StrOptions({*KERNELS, "auto"}), callable],
        "gamma": [*KERNEL_CONSTRAINTS["gamma"], StrOptions({"auto"})],
        "epsilon": [Interval(Real, 0.0, 0.5, closed="left"), StrOptions({"auto"})],
        "n_components": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"}), None],
        "approximation": [StrOptions(set(APPROXIMATIONS))],
        "dtype": [StrOptions({"float64", "float32"}), Options(type, {np.float64, np.float32})],
        "solver": [StrOptions(SOLVERS.keys())],  # the registry, read at every validation
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "tol": [Interval(Real, 0.0, None, closed="left")],
        "init": [StrOptions({"erm", "zeros", "glorot"}), "array-like"],
        "n_init": [Interval(Integral, 1, None, closed="left")],
        "init_size": [Interval(Integral, 2, None, closed="left")],
        "radius": [Interval(Real, 0.0, None, closed="neither"), None],
        "refine": [StrOptions({"auto", "reject", "biweight"}), None],
        "smoothing": [Interval(Real, 0.0, None, closed="neither"), None],
        "momentum": [Interval(Real, 0.0, 1.0, closed="left")],
        "line_search": ["boolean"],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "device": [str, None],
    }
    _task: ClassVar[Task]  # the loss-specific rules (``_tasks.REGRESSION`` / ``CLASSIFICATION``)

    # -- fitting -----------------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> BaseSubquantile:
        """Fit the model on the subquantile of the rows (the subclasses document it).

        The one entry of every fit: the data and the parameters are validated once (the
        parameters against the input kind, :func:`._settings.validate_settings`), a backend
        returns a :class:`._result.FitResult`, and :meth:`_set_fitted` stores it.
        """
        name = type(self).__name__
        params = self.get_params(deep=False)
        if is_dask_array(X):
            params["n_components"] = resolve_components(params, X.shape[0], dask=True)
            settings = validate_settings(params, self._task, "dask", name)
            if sample_weight is not None:
                raise ValueError(f"{name}.fit on a Dask array takes no sample_weight.")

            def sample_fit(X_sample: np.ndarray, y_sample: np.ndarray) -> BaseSubquantile:
                """This configuration fitted in memory on the "auto" sample, with the features
                of the whole fit (whatever the sample's rows)."""
                sample = clone(self).set_params(verbose=0, n_components=settings.n_components)
                with internal_fits():
                    return sample.fit(X_sample, y_sample)

            result = distributed_fit(settings, self._task, X, y, sample_fit)
            self._set_fitted(replace(result, n_components=settings.n_components))
            self._store_calibration(self._intervals_after_fit(None, None, None))
            return self
        X, y = self._validate_training_data(X, y)
        params["n_components"] = resolve_components(params, X.shape[0])
        if sample_weight is not None:
            sample_weight = _check_sample_weight(sample_weight, X, ensure_non_negative=True)
            if np.all(sample_weight == 1.0):
                sample_weight = None
        settings = validate_settings(params, self._task, input_kind(X, sample_weight), name)
        # in units of each column's spread or standard deviation (:mod:`.feature_scaling`)
        # where the fit chooses the kernel or its width (:func:`._settings.column_units`)
        units = column_units(settings, self._task)
        scaling = None
        if units is not None:
            scaling = feature_scaling(X, sample_weight, robust=units == "spread")
        if scaling is not None and not settings.fit_intercept:
            # a model through the origin stays one: scaled, not centred (centred, the linear
            # kernel's model was forced to 0 at the columns' medians instead, and kept the
            # bad leverage cluster of the Hawkins-like rows in 5 of 8 seeds; now 1 of 8)
            scaling = replace(scaling, center=np.zeros_like(scaling.center))
        fit_X = X if scaling is None else scaling.transform(X)
        result = fit_in_memory(
            settings, self._task, fit_X, y, self._check_fit_memory, sample_weight
        )
        if scaling is not None:
            result = replace(result, feature_scaling=scaling)
        result = replace(result, n_components=settings.n_components)
        self._set_fitted(result, X, y)
        self._store_calibration(self._intervals_after_fit(X, y, sample_weight))
        return self

    def _intervals_after_fit(
        self, X: Any, y: Any, sample_weight: np.ndarray | None
    ) -> dict[str, Any] | None:
        """After a fit (X None: a Dask fit): what prediction intervals need (the regressor's
        ``interval_calibration_``; None for a classifier)."""
        return None

    def _store_calibration(self, calibration: dict[str, Any] | None) -> None:
        """Store :meth:`_intervals_after_fit`'s calibration (after ``_set_fitted``: it reads
        the fitted model)."""
        if calibration is not None:
            self.interval_calibration_ = calibration

    inlier_mask_ = property(*_row_attribute("inlier_mask_"))
    outlier_scores_ = property(*_row_attribute("outlier_scores_"))
    row_weights_ = property(*_row_attribute("row_weights_"))

    def compute_row_attributes(self) -> BaseSubquantile:
        """Bring a Dask fit's per-row attributes home as NumPy arrays.

        ``inlier_mask_``, ``outlier_scores_`` and ``row_weights_`` are computed into NumPy
        arrays (a no-op after an in-memory fit).
        A fit on Dask arrays leaves them on the cluster (persisted Dask arrays, so that the
        client's memory does not grow with the rows); they live as long as the client that
        fitted them. Call this before the client closes to keep them after it (they then take
        the client's memory: 17 bytes a row).

        Returns
        -------
        self : object
            The estimator, its per-row attributes NumPy arrays.
        """
        check_is_fitted(self)
        stored = self.__dict__.get(ROW_ATTRIBUTES_KEY, {})
        for name in ROW_ATTRIBUTES:
            stored[name] = np.asarray(getattr(self, name))
        return self

    def __getstate__(self) -> dict[str, Any]:
        """The state that pickle, joblib and skops save: a Dask fit's per-row attributes (Dask
        arrays on the cluster) computed into NumPy arrays."""
        state = super().__getstate__()
        if ROW_ATTRIBUTES_KEY in state:
            state[ROW_ATTRIBUTES_KEY] = {
                name: np.asarray(value) if is_dask_array(value) else value
                for name, value in state[ROW_ATTRIBUTES_KEY].items()
            }
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        # model files written before the per-row attributes had their own store
        moved = {name: state.pop(name) for name in ROW_ATTRIBUTES if name in state}
        if moved:
            state[ROW_ATTRIBUTES_KEY] = {**state.get(ROW_ATTRIBUTES_KEY, {}), **moved}
        super().__setstate__(state)

    def _set_fitted(self, result: FitResult, X: Any = None, y: Any = None) -> None:
        """Store a backend's result as the fitted attributes (the only place that does).

        Where the fit left rows out (weight 0: ``result.rows``), the per-row attributes are
        extended to every row of X: the others are not kept, have weight 0 and score their
        loss under the fitted model.
        """
        for stale in ("X_fit_", "dual_coef_", "feature_map_", "coef_", "hyperparameter_scores_",
                      "kernel_", "degree_", "coef0_", "feature_center_", "feature_scale_",
                      "loss_", "probA_", "probB_"):
            self.__dict__.pop(stale, None)
        if result.feature_scaling is not None:  # before the rows left out are scored
            self.feature_center_ = result.feature_scaling.center
            self.feature_scale_ = result.feature_scaling.scale
        if result.classes is not None:
            self.classes_ = result.classes
            self.loss_ = result.loss or "log"  # a Dask fit: the log loss
            self.noise_transition_ = result.noise_transition
        if result.calibration is not None:
            self.probA_, self.probB_ = result.calibration.A, result.calibration.B
        if result.n_features_in is not None:
            self.n_features_in_ = result.n_features_in
        self._single_output = result.single_output
        if result.feature_map is None:
            self._set_dual_model(result.X_fit, result.coef, result.intercept)
        else:
            self.feature_map_ = result.feature_map
            self.coef_, self.intercept_ = self._output_shapes(result.coef, result.intercept)
        self.inlier_mask_ = result.inlier_mask
        self.outlier_scores_ = result.outlier_scores
        if result.classes is None:  # regression: the per-row evidence
            self.outlier_evidence_ = result.evidence
            self.outlier_pvalues_ = None if result.evidence is None else result.evidence["pvalue"]
        self.threshold_ = result.threshold
        self.row_weights_ = result.row_weights
        self.objective_history_ = result.objective_history
        self.n_iter_ = result.n_iter
        self.converged_ = result.converged
        self.best_start_ = result.best_start
        self.epsilon_ = result.epsilon
        self.n_components_ = result.n_components
        self.alpha_, self.gamma_ = result.alpha, result.gamma
        self.kernel_, self.degree_, self.coef0_ = result.kernel, result.degree, result.coef0
        if result.hyperparameter_scores is not None:
            self.hyperparameter_scores_ = result.hyperparameter_scores
        if result.rows is not None and result.rows.size < y.shape[0]:
            self._spread_to_every_row(X, y, result.rows)

    def _spread_to_every_row(self, X: Any, y: np.ndarray, rows: np.ndarray) -> None:
        """The per-row attributes of a fit on ``rows`` extended to every row of X."""
        n = y.shape[0]
        left_out = np.setdiff1d(np.arange(n), rows)
        inlier, scores, weights = np.zeros(n, dtype=bool), np.empty(n), np.zeros(n)
        inlier[rows], scores[rows], weights[rows] = (
            self.inlier_mask_, self.outlier_scores_, self.row_weights_
        )
        scores[left_out] = self._row_losses(_safe_indexing(X, left_out), y[left_out])
        self.inlier_mask_, self.outlier_scores_, self.row_weights_ = inlier, scores, weights

    def _row_losses(self, X: Any, y: np.ndarray) -> np.ndarray:
        """Each row's loss under the fitted model, as ``outlier_scores_`` scores it."""
        raise NotImplementedError

    # -- prediction --------------------------------------------------------------------------

    def _fitted_units(self, X: Any) -> Any:
        """Query rows ``X`` (validated, in the units given) in the units the model was fitted
        in: kernel="auto" fits in units of each column's spread (``feature_center_``,
        ``feature_scale_``; :mod:`.feature_scaling`); other fits in the units given."""
        if not hasattr(self, "feature_scale_"):
            return X
        return FeatureScaling(self.feature_center_, self.feature_scale_).transform(X)

    def _kernel(self, X: Any, Y: Any = None) -> np.ndarray:
        """The kernel matrix k(X, Y) between query rows ``X``, in the units given, and rows
        ``Y`` of ``X_fit_``, in the fitted units (:meth:`_fitted_units`; Y None: ``X``
        itself). :meth:`_decision` passes one block of query rows at a time."""
        X = self._fitted_units(X)
        return super()._kernel(X, X if Y is None else Y)

    def _decision(self, X: Any) -> np.ndarray:
        """Model outputs f(X), shape (n_samples, n_outputs): exact kernel or features."""
        if not hasattr(self, "feature_map_"):
            return super()._decision(X)
        check_is_fitted(self)
        X = self._fitted_units(self._validated_X(X, reset=False))
        coef = self.coef_.reshape(self.coef_.shape[0], -1)
        return predict_in_chunks(self.feature_map_, X, coef) + np.atleast_1d(self.intercept_)
