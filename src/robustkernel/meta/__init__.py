"""Subquantile minimization around any scikit-learn estimator (meta-estimators)."""

from ._estimators import SubquantileClassifier, SubquantileRegressor

__all__ = ["SubquantileClassifier", "SubquantileRegressor"]
