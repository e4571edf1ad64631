"""Kernel ridge regression with a learned metric: the estimator, its lambda path and objective.

``docs/architecture.md`` describes the modules of this engine.
"""

from ._classifier import MetricKernelLogisticRegression
from ._cv import MetricKernelRidgeCV
from ._estimator import MetricKernelRidge, MetricKernelRidgePath, metric_kernel_ridge_path

__all__ = [
    "MetricKernelLogisticRegression",
    "MetricKernelRidge",
    "MetricKernelRidgeCV",
    "MetricKernelRidgePath",
    "metric_kernel_ridge_path",
]
