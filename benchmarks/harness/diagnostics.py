"""What the library's fits see inside, for the benchmarks that study a rule (a diagnostic, not an
API: it wraps a private function of the in-memory fit's label-noise route)."""

from __future__ import annotations

import warnings

import numpy as np


def fit_with_stage(X: np.ndarray, y: np.ndarray, **params) -> tuple:
    """``SubquantileKernelClassifier(**params).fit(X, y)`` and what its label-noise stage
    saw: the stage (out-of-fold outputs ``fold_outputs``, ``kept`` rows), the class indices
    of y and the loss object."""
    from robustkernel import SubquantileKernelClassifier
    from robustkernel._kernel_model.losses import class_indices
    from robustkernel.subquantile._fit import route_label_noise

    original = route_label_noise._fit_label_noise
    seen = {}

    def wrapped(fit, candidates, warn=True):
        stage = original(fit, candidates, warn)
        seen.update(stage=stage, labels=class_indices(fit.Y), loss=fit.target.loss)
        return stage

    route_label_noise._fit_label_noise = wrapped
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = SubquantileKernelClassifier(**params).fit(X, y)
    finally:
        route_label_noise._fit_label_noise = original
    return model, seen["stage"], seen["labels"], seen["loss"]
