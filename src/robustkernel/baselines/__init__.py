"""Baselines of the reproduction tables, as scikit-learn estimators with one interface.

Estimators (kernel arguments alpha, kernel, gamma, degree, coef0, kernel_params, fit_intercept as
in :class:`robustkernel.SubquantileKernelRegressor`; objective = loss summed over rows +
alpha ||f||_H^2):

========================  =========================================  ==========================
method                    classes                                    tasks
========================  =========================================  ==========================
TERM (Li et al. 2021)     TiltedKernelRegressor / ...Classifier      regression, classification
SEVER (Diakonikolas 2019) SeverKernelRegressor / ...Classifier       regression, classification
CRR (Bhatia et al. 2017)  CRRKernelRegressor                         regression only
STIR (Mukhoty et al. 2019) STIRKernelRegressor                       regression only
TORRENT-GD (Bhatia 2015)  TorrentGDKernelRegressor                   regression only
Oracle ERM                OracleERM(estimator), fit(..., clean_mask)  both (the base learner's)
KRR                       sklearn KernelRidge                        regression only
SVM                       sklearn SVR / SVC                          regression, classification
========================  =========================================  ==========================

``BASELINES`` maps a method key to a factory ``make(task="regression", **params)`` returning an
unfitted estimator for ``task`` in {"regression", "classification"} (binary or multiclass is
decided by the labels at fit). Factories raise ValueError for a task the method does not have:
"krr", "crr", "stir" and "torrent_gd" are regression-only (``REGRESSION_ONLY``). ``params`` are
the estimator's constructor parameters, with these translations:

* "krr": sklearn ``KernelRidge(alpha, kernel, gamma, degree, coef0, kernel_params)``; with
  ``fit_intercept=True`` (default False, KernelRidge has no intercept) it returns the library's
  ERM with an unpenalized intercept, ``SubquantileKernelRegressor(epsilon=0, kernel="rbf")``.
* "svm": ``SVR`` / ``SVC``; ``alpha`` (if given) sets C = 1 / (2 alpha), the same penalty
  balance as sum of losses + alpha ||f||^2; ``gamma=None`` becomes "auto" (1 / n_features, the
  KernelRidge default); ``fit_intercept`` must be True or absent (libsvm always fits one).
* "oracle": ``OracleERM(estimator)``; without ``estimator=`` the base learner is
  ``SubquantileKernelRegressor(epsilon=0, **params)`` or ``SubquantileKernelClassifier(...)``.
  Pass the clean rows at fit: ``fit(X, y, clean_mask=mask)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sklearn.base import BaseEstimator
from sklearn.kernel_ridge import KernelRidge
from sklearn.svm import SVC, SVR

from ..subquantile import SubquantileKernelClassifier, SubquantileKernelRegressor
from ._crr import CRRKernelRegressor
from ._oracle import OracleERM
from ._sever import SeverKernelClassifier, SeverKernelRegressor, sever_scores
from ._stir import STIRKernelRegressor
from ._term import TiltedKernelClassifier, TiltedKernelRegressor, tilted_weights
from ._torrent import TorrentGDKernelRegressor

TASKS = ("regression", "classification")
REGRESSION_ONLY = frozenset({"krr", "crr", "stir", "torrent_gd"})


def _check_task(name: str, task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}.")
    if task == "classification" and name in REGRESSION_ONLY:
        raise ValueError(f"Baseline {name!r} is regression-only; it has no classifier.")


def _pair(name: str, regressor: type, classifier: type | None = None) -> Callable[..., Any]:
    def make(task: str = "regression", **params: Any) -> BaseEstimator:
        _check_task(name, task)
        return (regressor if task == "regression" else classifier)(**params)

    make.__name__ = f"make_{name}"
    make.__doc__ = f"Unfitted {name!r} baseline for ``task``; ``params`` go to the constructor."
    return make


def make_krr(task: str = "regression", *, fit_intercept: bool = False, **params: Any):
    """sklearn KernelRidge, or the library's ERM with an intercept when ``fit_intercept``."""
    _check_task("krr", task)
    if fit_intercept:  # the rbf kernel, and KernelRidge's alpha and gamma, unless given
        params = {"kernel": "rbf", "alpha": 1.0, "gamma": None, **params}
        return SubquantileKernelRegressor(epsilon=0.0, fit_intercept=True, **params)
    return KernelRidge(**params)


def make_svm(
    task: str = "regression",
    *,
    alpha: float | None = None,
    gamma: float | str | None = None,
    fit_intercept: bool = True,
    **params: Any,
):
    """sklearn SVR (regression) or SVC (classification); alpha sets C = 1 / (2 alpha)."""
    _check_task("svm", task)
    if not fit_intercept:
        raise ValueError("libsvm's SVR / SVC always fit an intercept; fit_intercept must be True.")
    if alpha is not None:
        params["C"] = 1.0 / (2.0 * alpha)
    params["gamma"] = "auto" if gamma is None else gamma
    return (SVR if task == "regression" else SVC)(**params)


def make_oracle(task: str = "regression", *, estimator: Any = None, **params: Any) -> OracleERM:
    """OracleERM around ``estimator`` (default: the library's ERM with ``params``, the rbf
    kernel unless they give one)."""
    _check_task("oracle", task)
    if estimator is None:
        base = SubquantileKernelRegressor if task == "regression" else SubquantileKernelClassifier
        estimator = base(epsilon=0.0, **{"kernel": "rbf", **params})
    elif params:
        raise ValueError("Give either estimator= or the base learner's parameters, not both.")
    return OracleERM(estimator)


BASELINES: dict[str, Callable[..., BaseEstimator]] = {
    "krr": make_krr,
    "svm": make_svm,
    "oracle": make_oracle,
    "term": _pair("term", TiltedKernelRegressor, TiltedKernelClassifier),
    "sever": _pair("sever", SeverKernelRegressor, SeverKernelClassifier),
    "crr": _pair("crr", CRRKernelRegressor),
    "stir": _pair("stir", STIRKernelRegressor),
    "torrent_gd": _pair("torrent_gd", TorrentGDKernelRegressor),
}

__all__ = [
    "BASELINES",
    "REGRESSION_ONLY",
    "TASKS",
    "CRRKernelRegressor",
    "OracleERM",
    "STIRKernelRegressor",
    "SeverKernelClassifier",
    "SeverKernelRegressor",
    "TiltedKernelClassifier",
    "TiltedKernelRegressor",
    "TorrentGDKernelRegressor",
    "make_krr",
    "make_oracle",
    "make_svm",
    "sever_scores",
    "tilted_weights",
]
