"""Subquantile minimization for neural networks (PyTorch, an optional extra).

:func:`subquantile_loss` turns per-sample losses into the Subquantile objective for any PyTorch
training loop; :class:`SubquantileMLPRegressor` and :class:`SubquantileMLPClassifier` are the
two-layer networks of the papers as scikit-learn estimators. PyTorch is imported on first use.
"""

from ._loss import subquantile_loss
from ._mlp import SubquantileMLPClassifier, SubquantileMLPRegressor

__all__ = ["SubquantileMLPClassifier", "SubquantileMLPRegressor", "subquantile_loss"]
