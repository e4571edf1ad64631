"""The methods of the classification race as their users run them: each a factory (Context) ->
unfitted estimator; the oracle, the cleanlab peers, the scorecard's KernelRidge + GridSearchCV,
and the rows a fitted method flags. (The regression race's peers were retired with it at af4154f.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import LabelEncoder, StandardScaler
from sklearn.svm import SVC

from robustkernel import (
    SubquantileClassifier,
    SubquantileKernelClassifier,
)

from .data import CLASSIFICATION

ORACLE = "oracle"
CV_FOLDS = 5
SVC_CS = (0.1, 1.0, 10.0, 100.0)
GAMMA_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)  # x 1 / n_features
# ----------------------------------------------------------------------------------------------
# Methods: each a factory (eps, n_samples, n_features, seed) -> unfitted estimator.


@dataclass(frozen=True)
class Context:
    """What a method's factory may use: the cell's eps and the shape of the training rows.

    Attributes
    ----------
    eps : float
        True corrupted fraction of the cell.
    n_samples, n_features : int
        Shape of the training rows.
    seed : int
        The run's seed.
    """

    eps: float
    n_samples: int
    n_features: int
    seed: int


@dataclass(frozen=True)
class Method:
    """A method of the benchmark.

    Attributes
    ----------
    make : callable
        ``make(context) -> estimator`` with ``fit(X, y)`` and ``predict(X)``.
    description : str
        One line for the report.
    library : bool
        Whether it runs robustkernel's estimators (its cache entries then depend on the package
        sources).
    unavailable : callable
        ``unavailable() -> str | None``: why the method cannot run here (None: it can).
    """

    make: Callable[[Context], Any]
    description: str
    library: bool = False
    unavailable: Callable[[], str | None] = lambda: None


def _missing_module(module: str) -> str | None:
    """None if ``module`` imports, else the reason.

    Parameters
    ----------
    module : str
        Module name.

    Returns
    -------
    reason : str or None
        The import error, or None.
    """
    try:
        __import__(module)
    except Exception as error:  # any failure to import means "not available here"
        return f"{module} not importable ({type(error).__name__}: {str(error).splitlines()[0]})"
    return None


def _gammas(n_features: int) -> list[float]:
    """The RBF gamma grid of the CV searches: GAMMA_FACTORS / n_features.

    Parameters
    ----------
    n_features : int
        Number of features.

    Returns
    -------
    gammas : list of float
        The grid.
    """
    return [factor / n_features for factor in GAMMA_FACTORS]


ISSUE_KRR_ALPHAS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0)
ISSUE_KRR_GAMMAS = (0.01, 0.03, 0.1, 0.3, 1.0)


def issue_krr_search(seed: int) -> GridSearchCV:
    """KernelRidge + GridSearchCV as the scorecard's issue defines it: ``StandardScaler`` and an
    rbf KernelRidge, alpha in ``ISSUE_KRR_ALPHAS`` x gamma in ``ISSUE_KRR_GAMMAS`` (25 points),
    5 folds shuffled by ``seed``.

    Parameters
    ----------
    seed : int
        The folds' shuffle.

    Returns
    -------
    search : GridSearchCV
        Unfitted.
    """
    grid = {
        "kernelridge__alpha": list(ISSUE_KRR_ALPHAS),
        "kernelridge__gamma": list(ISSUE_KRR_GAMMAS),
    }
    pipeline = make_pipeline(StandardScaler(), KernelRidge(kernel="rbf"))
    return GridSearchCV(pipeline, grid, cv=KFold(CV_FOLDS, shuffle=True, random_state=seed))


def svc_cv(context: Context) -> GridSearchCV:
    """SVC(rbf) tuned by stratified 5-fold CV (accuracy) over C x gamma.

    Parameters
    ----------
    context : Context
        The run.

    Returns
    -------
    search : GridSearchCV
        Unfitted.
    """
    grid = {"C": list(SVC_CS), "gamma": _gammas(context.n_features)}
    folds = StratifiedKFold(CV_FOLDS, shuffle=True, random_state=context.seed)
    return GridSearchCV(SVC(kernel="rbf"), grid, cv=folds)


def cleanlab_svc(context: Context, svc: SVC | None = None) -> Any:
    """cleanlab's CleanLearning around SVC(rbf, probability=True), defaults otherwise.

    Its label-issue search runs in this process (``n_jobs=1``): its own multiprocessing pool
    fails inside joblib's worker processes (NameError in cleanlab 2.9's filter), and every run
    of the benchmark gets one core.

    Parameters
    ----------
    context : Context
        The run.
    svc : SVC or None
        The classifier to wrap (with probability=True); SVC's defaults where None.

    Returns
    -------
    learner : EncodedLabels
        cleanlab.classification.CleanLearning on labels encoded 0, ..., K - 1; unfitted.
    """
    from cleanlab.classification import CleanLearning

    if svc is None:
        svc = SVC(kernel="rbf", probability=True, random_state=context.seed)
    return EncodedLabels(
        CleanLearning(
            svc, seed=context.seed, verbose=False, find_label_issues_kwargs={"n_jobs": 1}
        )
    )


class EncodedLabels(ClassifierMixin, BaseEstimator):
    """A classifier fitted on the labels encoded as 0, ..., K - 1 (LabelEncoder), predicting
    the original labels: cleanlab requires such labels (glass and satimage have 1-7 with gaps),
    and its users encode them so.

    Parameters
    ----------
    estimator : classifier
        Fitted on the encoded labels.
    """

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator

    def fit(self, X: np.ndarray, y: np.ndarray) -> EncodedLabels:
        """Encode y, fit the estimator on the codes."""
        self.encoder_ = LabelEncoder().fit(y)
        self.classes_ = self.encoder_.classes_
        self.estimator_ = self.estimator.fit(X, self.encoder_.transform(y))
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The estimator's predictions, decoded."""
        return self.encoder_.inverse_transform(np.asarray(self.estimator_.predict(X), dtype=int))


class TunedCleanLearning(ClassifierMixin, BaseEstimator):
    """cleanlab's CleanLearning around the SVC that :func:`svc_cv` tunes on the given (noisy)
    rows: the grid search first, then CleanLearning(SVC(best C and gamma, probability=True)).

    Parameters
    ----------
    seed : int
        The run's seed (folds, SVC's probability calibration, cleanlab).
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def fit(self, X: np.ndarray, y: np.ndarray) -> TunedCleanLearning:
        """Tune SVC by the grid search, then fit CleanLearning around the tuned SVC."""
        context = Context(0.0, X.shape[0], X.shape[1], self.seed)  # eps: neither uses it
        search = svc_cv(context).fit(X, y)
        svc = SVC(kernel="rbf", probability=True, random_state=self.seed, **search.best_params_)
        self.learner_ = cleanlab_svc(context, svc).fit(X, y)
        self.classes_ = np.unique(y)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The labels predicted by the fitted CleanLearning."""
        return self.learner_.predict(X)


CLASSIFICATION_METHODS: dict[str, Method] = {
    "subq_default": Method(
        lambda c: SubquantileKernelClassifier(),
        "SubquantileKernelClassifier(): the defaults (no knobs)",
        library=True,
    ),
    "subq_auto": Method(
        lambda c: SubquantileKernelClassifier(loss="auto"),
        "SubquantileKernelClassifier(loss=\"auto\"): the log and the hinge loss each run the "
        "label-noise fit; the log loss kept for two classes, the hinge for more, unless the "
        "other's out-of-fold error is clearly lower",
        library=True,
    ),
    "subq_hinge": Method(
        lambda c: SubquantileKernelClassifier(loss="hinge"),
        "SubquantileKernelClassifier(loss=\"hinge\"): a trimmed SVM per pair of classes, "
        "other parameters default",
        library=True,
    ),
    "subq_hinge_svc_settings": Method(
        lambda c: SubquantileKernelClassifier(loss="hinge", alpha=0.5, gamma=None),
        "SubquantileKernelClassifier(loss=\"hinge\", alpha=0.5, gamma=None): SVC()'s fixed "
        "settings (C = 1 / (2 alpha) = 1, gamma 1 / n_features on standardized columns, "
        "scikit-learn's \"scale\") with the defaults' flags: what tuning on noisy labels adds",
        library=True,
    ),
    "subq_log_fixed": Method(
        lambda c: SubquantileKernelClassifier(alpha=0.5, gamma=None),
        "SubquantileKernelClassifier(alpha=0.5, gamma=None): the log loss at fixed settings "
        "(alpha as the hinge row's, gamma 1 / n_features) with the defaults' flags",
        library=True,
    ),
    "subq_meta_svc": Method(
        lambda c: SubquantileClassifier(SVC(random_state=c.seed), random_state=c.seed),
        "SubquantileClassifier(SVC()): the meta-estimator around scikit-learn's SVC, defaults",
        library=True,
    ),
    "subq_true_eps": Method(
        lambda c: SubquantileKernelClassifier(epsilon=c.eps),
        "SubquantileKernelClassifier(epsilon=true eps), other parameters default",
        library=True,
    ),
    "subq_papers": Method(
        lambda c: SubquantileKernelClassifier(epsilon=c.eps, alpha=1.0, gamma=None, refine=None),
        "the papers' estimator: SubquantileKernelClassifier(epsilon=true eps, alpha=1, "
        "gamma=None, refine=None)",
        library=True,
    ),
    "svc_cv": Method(
        svc_cv,
        f"SVC(rbf), stratified {CV_FOLDS}-fold GridSearchCV: C in {SVC_CS} x gamma in "
        f"{GAMMA_FACTORS} / n_features",
    ),
    "logreg": Method(
        lambda c: LogisticRegression(max_iter=1000),
        "LogisticRegression (linear, C = 1)",
    ),
    "cleanlab": Method(
        cleanlab_svc,
        "cleanlab CleanLearning(SVC(rbf, probability=True)), defaults",
        unavailable=partial(_missing_module, "cleanlab"),
    ),
    "cleanlab_tuned": Method(
        lambda c: TunedCleanLearning(c.seed),
        "cleanlab CleanLearning around the SVC that svc_cv tunes on the noisy rows",
        unavailable=partial(_missing_module, "cleanlab"),
    ),
}
METHODS = {CLASSIFICATION: CLASSIFICATION_METHODS}
ORACLES = {CLASSIFICATION: svc_cv}
METRIC_NAMES = {CLASSIFICATION: "accuracy"}


def flagged_rows(model: Any) -> np.ndarray | None:
    """The training rows a fitted model reports as suspect, or None for a method that does not.

    SubQ estimators: the rows outside ``inlier_mask_``; cleanlab (wrapped in
    :class:`EncodedLabels`, alone or inside :class:`TunedCleanLearning`): the rows of its
    ``label_issues_df`` marked ``is_label_issue``.

    Parameters
    ----------
    model : estimator
        Fitted.

    Returns
    -------
    flagged : ndarray of bool or None
        One entry per training row.
    """
    if isinstance(model, TunedCleanLearning):
        model = model.learner_
    if isinstance(model, EncodedLabels):
        issues = getattr(model.estimator_, "label_issues_df", None)
        return None if issues is None else issues["is_label_issue"].to_numpy(dtype=bool)
    mask = getattr(model, "inlier_mask_", None)
    return None if mask is None else ~np.asarray(mask, dtype=bool)
