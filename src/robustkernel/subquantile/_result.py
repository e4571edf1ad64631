"""What a Subquantile fit returns: every backend's result, stored by the estimator at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class FitResult:
    """A fitted Subquantile model, in the units of the original targets.

    The backends (in memory, weighted, Dask) return one; ``BaseSubquantile._set_fitted`` is the
    only place that turns it into fitted attributes (``coef`` and ``feature_map`` become
    ``coef_`` / ``feature_map_``, or ``coef`` and ``X_fit`` become ``dual_coef_`` / ``X_fit_``).

    ``rows`` are the rows the fit saw when it left some out (weight 0): the per-row arrays
    cover those rows only and the estimator scores the others under the fitted model.
    """

    coef: np.ndarray  # (n_coefficients, C): dual coefficients, or weights of the features
    intercept: np.ndarray  # (C,)
    feature_map: Any  # the fitted feature map, or None for the exact kernel model
    X_fit: Any  # the training rows of the exact kernel model (None with features)
    classes: np.ndarray | None  # class labels (classifiers)
    single_output: bool  # 1-D predictions (one target, or two classes)
    inlier_mask: np.ndarray
    outlier_scores: np.ndarray
    threshold: float
    row_weights: np.ndarray
    objective_history: np.ndarray
    n_iter: int
    converged: bool
    best_start: int
    epsilon: float
    alpha: float
    gamma: float | None
    # the kernel fitted, resolved once by the fit (kernel="auto": the one its start chose),
    # with its degree and coef0 (those given, where the kernel has none of its own)
    kernel: Any
    degree: float
    coef0: float
    hyperparameter_scores: np.ndarray | None = None
    feature_scaling: Any = None  # kernel="auto": the ``FeatureScaling`` X_fit is in; None: none
    n_features_in: int | None = None  # set where no scikit-learn validation ran (Dask)
    rows: np.ndarray | None = None
    loss: str | None = None  # classifiers: the loss fitted ("log", "hinge", "squared_hinge")
    calibration: Any = None  # the hinge losses: the pairs' ``PairwisePlatt``
    noise_transition: np.ndarray | None = None  # forward correction's T[true, given], if used
    n_components: int | None = None  # the features of the fit (None: the exact kernel model)
    evidence: Any = None  # kernel="auto": the second stage's per-row evidence (a DataFrame)
    # each row's loss with the targets divided by a power of two (the in-memory fit's units):
    # the order of ``outlier_scores``, which overflow to inf beyond |y| ~ 1e154; None: as those
    scaled_losses: np.ndarray | None = None
