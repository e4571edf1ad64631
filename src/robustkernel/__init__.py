"""robustkernel: kernel methods that stay right when a fraction of the training data is wrong.

The estimators are imported on first use (``robustkernel.SubquantileKernelRegressor``, or
``from robustkernel import ...``), not with the package: the ``robustkernel`` command line
starts without loading scikit-learn, and ``robustkernel --help`` answers at once.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
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

# Each public name and the subpackage that defines it.
_EXPORTS = {
    "MetricKernelLogisticRegression": ".metric_kernel_ridge",
    "MetricKernelRidge": ".metric_kernel_ridge",
    "MetricKernelRidgeCV": ".metric_kernel_ridge",
    "MetricKernelRidgePath": ".metric_kernel_ridge",
    "SubquantileClassifier": ".meta",
    "SubquantileKernelClassifier": ".subquantile",
    "SubquantileKernelRegressor": ".subquantile",
    "SubquantileMLPClassifier": ".nn",
    "SubquantileMLPRegressor": ".nn",
    "SubquantileRegressor": ".meta",
    "metric_kernel_ridge_path": ".metric_kernel_ridge",
}

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


def __getattr__(name: str) -> Any:
    """Import the public estimator ``name`` from its subpackage on first use (PEP 562)."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
