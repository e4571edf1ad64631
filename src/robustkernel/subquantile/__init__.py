"""Subquantile minimization (SubQ): kernel models fitted on the rows they explain best.

The estimators are :class:`SubquantileKernelRegressor` and :class:`SubquantileKernelClassifier`;
``docs/architecture.md`` describes the modules of this engine and how a fit flows through them.
"""

from ._estimators import SubquantileKernelClassifier, SubquantileKernelRegressor

__all__ = ["SubquantileKernelClassifier", "SubquantileKernelRegressor"]
