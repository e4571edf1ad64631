"""What the library's fits see inside, for the benchmarks that study a rule (a diagnostic, not an
API: it wraps a private method of the in-memory fit)."""

from __future__ import annotations

import warnings

import numpy as np


def fit_with_stage(X: np.ndarray, y: np.ndarray, **params) -> tuple:
    """``SubquantileKernelClassifier(**params).fit(X, y)`` and what its label-noise stage
    saw: the stage (out-of-fold outputs ``fold_outputs``, ``kept`` rows), the class indices
    of y and the loss object."""
    from robustkernel import SubquantileKernelClassifier
    from robustkernel._kernel_model.losses import class_indices
    from robustkernel.subquantile._fit import in_memory as _in_memory

    original = _in_memory.InMemoryFit._fit_label_noise
    seen = {}

    def wrapped(self, candidates, warn=True):
        stage = original(self, candidates, warn)
        seen.update(stage=stage, labels=class_indices(self.Y), loss=self.target.loss)
        return stage

    _in_memory.InMemoryFit._fit_label_noise = wrapped
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = SubquantileKernelClassifier(**params).fit(X, y)
    finally:
        _in_memory.InMemoryFit._fit_label_noise = original
    return model, seen["stage"], seen["labels"], seen["loss"]
