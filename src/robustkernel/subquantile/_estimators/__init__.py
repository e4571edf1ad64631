"""The Subquantile kernel estimators and their shared core.

In: the user's parameters and data. Out: a fitted scikit-learn estimator.
:class:`~.base.BaseSubquantile` validates once (:mod:`robustkernel.subquantile._settings`),
sends the fit to a backend (in memory, :mod:`robustkernel.subquantile._fit`; Dask or a GPU,
:mod:`robustkernel.subquantile._backends`) and writes the fitted attributes from the one result
it gets back; the regressor adds links and prediction intervals, the classifier its losses.
"""

# Model files written before the estimators had a module each name this package.
from .classifier import SubquantileKernelClassifier as SubquantileKernelClassifier
from .regressor import SubquantileKernelRegressor as SubquantileKernelRegressor
