"""robustkernel: kernel methods that stay right when a fraction of the training data is wrong."""

from ._version import __version__
from .meta import SubquantileClassifier, SubquantileRegressor
from .metric_kernel_ridge import (
    MetricKernelLogisticRegression,
    MetricKernelRidge,
    MetricKernelRidgeCV,
    MetricKernelRidgePath,
    metric_kernel_ridge_path,
)
from .nn import SubquantileMLPClassifier, SubquantileMLPRegressor
from .subquantile import SubquantileKernelClassifier, SubquantileKernelRegressor

__all__ = [
    "MetricKernelLogisticRegression",
    "MetricKernelRidge",
    "MetricKernelRidgeCV",
    "MetricKernelRidgePath",
    "SubquantileClassifier",
    "SubquantileKernelClassifier",
    "SubquantileKernelRegressor",
    "SubquantileMLPClassifier",
    "SubquantileMLPRegressor",
    "SubquantileRegressor",
    "__version__",
    "metric_kernel_ridge_path",
]
