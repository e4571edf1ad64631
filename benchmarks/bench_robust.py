"""Robustness without knobs: robust regression and classification methods on contaminated data.

The harness that decides the library's defaults. Every cell is a data set x attack x eps; every
run is one method fitted on one seed's contaminated training rows and scored on the clean test
rows. Protocol per seed: 80/20 split (stratified for classification), x (and, for regression, y)
standardized with the clean training statistics
(:func:`robustkernel.corruption.contaminated_split` with eps = 0), then eps of the training rows
corrupted by the attack; the test rows are never corrupted. eps = 0 is one clean cell per data
set (attack "none").

Regression: test RMSE (standardized units) divided by the oracle's on the same seed, the oracle
being ``krr_cv`` fitted on the uncorrupted training rows only. Classification: test accuracy,
and the gap ``oracle accuracy - accuracy`` per seed, the oracle being ``svc_cv`` on the
uncorrupted training rows. A cell reports each method's median over seeds, the best method and
the methods *within 2 %* of it:

* regression: median ratio <= 1.02 x the best (smallest) median ratio of the cell;
* classification: median accuracy >= the best (largest) median accuracy of the cell - 0.02
  (two accuracy points, absolute).

The oracle is a reference, never a contender. A run that raises is recorded with its error
(metric NaN) and counted as a failure; medians skip failed seeds, and a method with no successful
seed in a cell is never best there.

Runs are cached one JSON file each (``robustkernel.reproduce._runs.run_cached``) under
``--cache-dir``, so an interrupted benchmark resumes. The cache key is (task, data, attack, eps,
seed, method); its fingerprint covers the settings, the versions of numpy / scipy /
scikit-learn / cleanlab / statsmodels, :data:`PROTOCOL_VERSION` (bump it when an attack, a data
set or a method of this script changes) and a hash of the robustkernel sources: the data and
corruption modules for every run, the whole package for the runs of robustkernel's estimators
(so an edited estimator is refitted, a scikit-learn peer is not).

    python benchmarks/bench_robust.py [--quick] [--task regression|classification|both]
        [--seeds 5] [--methods a,b] [--data-home DIR] [--n-jobs 1] [--no-write]

prints the tables, writes every run to ``benchmarks/results/bench_robust.csv`` and the tables to
BENCHMARKS.md (section "Robustness without knobs (bench_robust.py)", with ": <task>" when one
task runs; not with ``--no-write`` nor ``--quick``). ``make bench-robust`` installs the optional
peers (the ``bench`` extra) first.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.metadata
import json
import os
import platform
import resource
import shlex
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import sklearn
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.datasets import load_diabetes, load_digits, make_moons
from sklearn.kernel_approximation import Nystroem
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import HuberRegressor, LogisticRegression, RANSACRegressor, Ridge
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import LabelEncoder
from sklearn.svm import SVC

import robustkernel
from robustkernel import (
    SubquantileClassifier,
    SubquantileKernelClassifier,
    SubquantileKernelRegressor,
)
from robustkernel._atomic import atomic_write
from robustkernel._report import cpu_description, markdown_table, replace_markdown_section
from robustkernel.baselines import BASELINES
from robustkernel.corruption import contaminated_split, corrupt, n_corrupted
from robustkernel.datasets import load_dataset
from robustkernel.reproduce._runs import cache_path, run_cached

SECTION = "## Robustness without knobs (bench_robust.py)"
PROTOCOL_VERSION = 1  # bump when an attack, a data set or a method definition below changes
HERE = Path(__file__).resolve().parent
DEFAULT_CACHE = HERE / ".cache" / "bench_robust"
DEFAULT_CSV = HERE / "results" / "bench_robust.csv"
PACKAGE = Path(robustkernel.__file__).resolve().parent

REGRESSION, CLASSIFICATION = "regression", "classification"
CLEAN = "none"  # the attack of the eps = 0 cells
ORACLE = "oracle"
EPSILONS = (0.0, 0.1, 0.2, 0.3)
NEAR_BEST_RATIO = 1.02  # regression: within 2 % of the best median RMSE ratio
NEAR_BEST_ACCURACY = 0.02  # classification: within 2 accuracy points of the best median

CV_FOLDS = 5
KRR_ALPHAS = tuple(float(a) for a in np.logspace(-3, 1, 5))
SVC_CS = (0.1, 1.0, 10.0, 100.0)
GAMMA_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)  # x 1 / n_features
MAX_LANDMARKS = 300
HUBER_RIDGE_ALPHA = 1.0  # Huber / RANSAC penalty on the Nystroem weights (= the SubQ default)
RANSAC_MIN_SAMPLES = 0.5

# Cluster attack: corrupted rows moved to one training row's x (jitter CLUSTER_JITTER per
# coordinate, standardized units), all with the target y(center) + CLUSTER_OFFSET.
CLUSTER_JITTER = 0.01
CLUSTER_OFFSET = 5.0
SHIFT = 3.0  # coherent shift: y += SHIFT on the eps fraction of rows with the largest x_1

QUICK = {
    REGRESSION: {"data": ("generated", "boston"), "attacks": ("label", "cluster")},
    CLASSIFICATION: {
        "data": ("breast_cancer", "digits"),
        "attacks": ("random_flip", "fixed_class"),
    },
    "eps": (0.2,),
    "seeds": 2,
    "max_rows": 300,
}


# ----------------------------------------------------------------------------------------------
# Data sets: each a function data_home -> (X, y), y float (regression) or class labels.


@dataclass(frozen=True)
class Dataset:
    """One data set of the benchmark.

    Attributes
    ----------
    load : callable
        ``load(data_home) -> (X, y)``.
    description : str
        One line for the report.
    """

    load: Callable[[str | None], tuple[np.ndarray, np.ndarray]]
    description: str


def _paper_dataset(name: str, data_home: str | None) -> tuple[np.ndarray, np.ndarray]:
    """A data set of the papers through :func:`robustkernel.datasets.load_dataset`.

    Parameters
    ----------
    name : str
        A key of :data:`robustkernel.datasets.DATASETS`.
    data_home : str or None
        Folder of the CSV files.

    Returns
    -------
    X, y : ndarray
        Features and target.
    """
    X, y = load_dataset(name, data_home=data_home)
    return np.asarray(X, dtype=float), np.asarray(y)


def _diabetes(_: str | None) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's diabetes data (442 x 10).

    Returns
    -------
    X, y : ndarray
        Features and target.
    """
    return load_diabetes(return_X_y=True)


def _generated_regression(_: str | None) -> tuple[np.ndarray, np.ndarray]:
    """A smooth function of five uniform features: 1000 rows, fixed seed 0.

    y = sin(2 x1) + x2 x3 + 0.5 x4^2 + N(0, 0.1^2), x ~ U(-2, 2)^5 (x5 is irrelevant).

    Returns
    -------
    X, y : ndarray
        Features and target.
    """
    rng = np.random.default_rng(0)
    X = rng.uniform(-2.0, 2.0, size=(1000, 5))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] ** 2 + 0.1 * rng.normal(size=1000)
    return X, y


def _digits(_: str | None) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits: a fixed random sample of 600 of its 1797 rows (seed 0), 10 classes.

    Returns
    -------
    X, y : ndarray
        Features (64 pixels) and labels.
    """
    X, y = load_digits(return_X_y=True)
    rows = np.sort(np.random.default_rng(0).permutation(X.shape[0])[:600])
    return X[rows].astype(float), y[rows]


def _satimage(data_home: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Landsat satellite image (satimage): a fixed random sample of 1000 of its 6435 rows
    (seed 0), 36 features, 6 classes.

    Parameters
    ----------
    data_home : str or None
        Folder of the CSV files.

    Returns
    -------
    X, y : ndarray
        Features and labels.
    """
    X, y = _paper_dataset("satimage", data_home)
    rows = np.sort(np.random.default_rng(0).permutation(X.shape[0])[:1000])
    return X[rows], y[rows]


def _moons(_: str | None) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved half moons (noise 0.25) plus three N(0, 1) noise features: 600 x 5.

    Returns
    -------
    X, y : ndarray
        Features and labels {0, 1}.
    """
    X, y = make_moons(600, noise=0.25, random_state=0)
    noise = np.random.default_rng(0).normal(size=(600, 3))
    return np.hstack([X, noise]), y


REGRESSION_DATA: dict[str, Dataset] = {
    "boston": Dataset(partial(_paper_dataset, "boston"), "Boston housing, 506 x 13"),
    "concrete": Dataset(partial(_paper_dataset, "concrete"), "Concrete strength, 1030 x 8"),
    "wine_quality_red": Dataset(
        partial(_paper_dataset, "wine_quality_red"), "Wine quality (red), 1599 x 11"
    ),
    "diabetes": Dataset(_diabetes, "scikit-learn diabetes, 442 x 10"),
    "generated": Dataset(
        _generated_regression,
        "sin(2 x1) + x2 x3 + 0.5 x4^2 + noise of sd 0.1, x ~ U(-2, 2)^5, 1000 x 5",
    ),
}
CLASSIFICATION_DATA: dict[str, Dataset] = {
    "breast_cancer": Dataset(
        partial(_paper_dataset, "breast_cancer"), "Breast cancer, 569 x 30, 2 classes"
    ),
    "digits": Dataset(_digits, "scikit-learn digits, seeded sample 600 x 64, 10 classes"),
    "glass": Dataset(
        partial(_paper_dataset, "glass"), "Glass identification, 214 x 9, 6 classes (9-76 rows)"
    ),
    "heart": Dataset(partial(_paper_dataset, "heart"), "Heart disease, 303 x 13, 2 classes"),
    "moons": Dataset(_moons, "two moons (noise 0.25) + 3 noise features, 600 x 5, 2 classes"),
    "satimage": Dataset(_satimage, "Landsat satimage, seeded sample 1000 x 36, 6 classes"),
}
DATA = {REGRESSION: REGRESSION_DATA, CLASSIFICATION: CLASSIFICATION_DATA}


@lru_cache(maxsize=8)
def load_data(
    task: str, name: str, data_home: str | None, max_rows: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of a data set, cut to a fixed random subset of ``max_rows`` rows (seed 0) if given.

    Parameters
    ----------
    task : {"regression", "classification"}
        Which registry holds ``name``.
    name : str
        A key of :data:`REGRESSION_DATA` or :data:`CLASSIFICATION_DATA`.
    data_home : str or None
        Folder of the papers' CSV files.
    max_rows : int or None
        Row cap (None: all rows).

    Returns
    -------
    X, y : ndarray
        Features and target.
    """
    X, y = DATA[task][name].load(data_home)
    if max_rows is not None and max_rows < X.shape[0]:
        rows = np.sort(np.random.default_rng(0).permutation(X.shape[0])[:max_rows])
        X, y = X[rows], y[rows]
    return X, y


# ----------------------------------------------------------------------------------------------
# Attacks: each f(X, y, eps, seed) -> (X, y, corrupted row indices) on the standardized clean
# training rows; the inputs are not modified.

Corruption = tuple[np.ndarray, np.ndarray, np.ndarray]


def library_attack(X: np.ndarray, y: np.ndarray, eps: float, seed: int, *, kind: str) -> Corruption:
    """An attack of :data:`robustkernel.corruption.CORRUPTIONS` (its seeded choice of rows).

    Parameters
    ----------
    X, y : ndarray
        Clean training rows.
    eps : float
        Corrupted fraction: floor(eps n) rows.
    seed : int
        Seeds the rows and the replacement values.
    kind : str
        The library's corruption name.

    Returns
    -------
    X, y, index : ndarray
        Corrupted copies and the sorted corrupted rows.
    """
    bad = corrupt(X, y, kind, eps, random_state=seed)
    return bad.X, bad.y, bad.index


def _random_rows(n: int, eps: float, seed: int, salt: int) -> np.ndarray:
    """floor(eps n) distinct rows drawn uniformly (generator seeded by ``(seed, salt)``).

    Parameters
    ----------
    n : int
        Number of rows.
    eps : float
        Fraction.
    seed, salt : int
        Seed of the run and a per-attack constant.

    Returns
    -------
    index : ndarray of int
        Sorted row indices.
    """
    rng = np.random.default_rng([seed, salt])
    return np.sort(rng.permutation(n)[: n_corrupted(n, eps)])


def sign_flip(X: np.ndarray, y: np.ndarray, eps: float, seed: int) -> Corruption:
    """y_i <- -y_i (about the clean training mean: y is standardized) on random rows.

    Parameters
    ----------
    X, y : ndarray
        Clean training rows.
    eps : float
        Corrupted fraction.
    seed : int
        Seeds the rows.

    Returns
    -------
    X, y, index : ndarray
        Corrupted copies and the corrupted rows.
    """
    index = _random_rows(X.shape[0], eps, seed, salt=1)
    y = np.array(y, dtype=float)
    y[index] = -y[index]
    return np.array(X, dtype=float), y, index


def cluster(X: np.ndarray, y: np.ndarray, eps: float, seed: int) -> Corruption:
    """Random rows moved to one point: x_i <- x_c + N(0, 0.01^2 I), y_i <- y_c + 5.

    The center c is a random clean training row (inside the data, where an RBF model feels it);
    every corrupted row gets the same wrong target, five standard deviations off the clean value.

    Parameters
    ----------
    X, y : ndarray
        Clean training rows.
    eps : float
        Corrupted fraction.
    seed : int
        Seeds the rows, the center and the jitter.

    Returns
    -------
    X, y, index : ndarray
        Corrupted copies and the corrupted rows.
    """
    index = _random_rows(X.shape[0], eps, seed, salt=2)
    rng = np.random.default_rng([seed, 3])
    center = int(rng.integers(X.shape[0]))
    X, y = np.array(X, dtype=float), np.array(y, dtype=float)
    target = y[center] + CLUSTER_OFFSET
    X[index] = X[center] + CLUSTER_JITTER * rng.normal(size=(index.size, X.shape[1]))
    y[index] = target
    return X, y, index


def coherent_shift(X: np.ndarray, y: np.ndarray, eps: float, seed: int) -> Corruption:
    """y_i += 3 on the floor(eps n) rows with the largest first feature x_1 (no randomness).

    Parameters
    ----------
    X, y : ndarray
        Clean training rows.
    eps : float
        Corrupted fraction.
    seed : int
        Unused (the rows are determined by x_1).

    Returns
    -------
    X, y, index : ndarray
        Corrupted copies and the corrupted rows.
    """
    m = n_corrupted(X.shape[0], eps)
    index = np.sort(np.argsort(X[:, 0], kind="stable")[X.shape[0] - m :])
    y = np.array(y, dtype=float)
    y[index] += SHIFT
    return np.array(X, dtype=float), y, index


def fixed_class(X: np.ndarray, y: np.ndarray, eps: float, seed: int) -> Corruption:
    """Systematic label noise: floor(eps n) random rows of the other classes all relabeled t.

    t is the class with the fewest clean training rows (ties: the smallest label), so for two
    classes every flip goes from the larger class c to t ("all flips of c to one fixed other
    class"); with more classes every flipped row, whatever its class, becomes t. Drawing from the
    larger classes keeps the attack possible at every eps < 0.5 (at least n / 2 rows are not t).

    Parameters
    ----------
    X, y : ndarray
        Clean training rows.
    eps : float
        Corrupted fraction.
    seed : int
        Seeds the rows.

    Returns
    -------
    X, y, index : ndarray
        Corrupted copies and the corrupted rows.
    """
    classes, counts = np.unique(y, return_counts=True)
    target = classes[np.argmin(counts)]
    others = np.flatnonzero(y != target)
    rng = np.random.default_rng([seed, 4])
    index = np.sort(rng.permutation(others)[: n_corrupted(X.shape[0], eps)])
    y = np.array(y, copy=True)
    y[index] = target
    return np.array(X, dtype=float), y, index


def pair_flip(X: np.ndarray, y: np.ndarray, eps: float, seed: int) -> Corruption:
    """Pair flipping: random rows get the next class, c -> c + 1 (cyclic, in sorted order).

    Every class's flips go to one fixed other class and every class loses about eps of its rows,
    so the true class stays the majority label everywhere for eps < 0.5. With two classes this
    is the random flip; the benchmark runs it on data with three or more classes only.

    Parameters
    ----------
    X, y : ndarray
        Clean training rows.
    eps : float
        Corrupted fraction.
    seed : int
        Seeds the rows.

    Returns
    -------
    X, y, index : ndarray
        Corrupted copies and the corrupted rows.
    """
    classes = np.unique(y)
    index = _random_rows(X.shape[0], eps, seed, salt=5)
    y = np.array(y, copy=True)
    position = np.searchsorted(classes, y[index])
    y[index] = classes[(position + 1) % classes.size]
    return np.array(X, dtype=float), y, index


Attack = Callable[[np.ndarray, np.ndarray, float, int], Corruption]

REGRESSION_ATTACKS: dict[str, tuple[Attack, str]] = {
    "label": (
        partial(library_attack, kind="label"),
        "y_i <- N(5, variance 5) (robustkernel.corruption 'label')",
    ),
    "oblivious": (
        partial(library_attack, kind="oblivious"),
        "y_i <- N(0, variance 5), independent of x (robustkernel.corruption 'oblivious')",
    ),
    "scaled": (
        partial(library_attack, kind="label_feature"),
        "x_i <- 100 x_i, y_i <- 10^4 y_i (robustkernel.corruption 'label_feature')",
    ),
    "sign_flip": (sign_flip, "y_i <- -y_i"),
    "cluster": (
        cluster,
        f"x_i <- x_c + N(0, {CLUSTER_JITTER}^2 I), y_i <- y_c + {CLUSTER_OFFSET:g} for one "
        "random training row c",
    ),
    "shift": (coherent_shift, f"y_i += {SHIFT:g} on the rows with the largest x_1"),
}
CLASSIFICATION_ATTACKS: dict[str, tuple[Attack, str]] = {
    "random_flip": (
        partial(library_attack, kind="wrong_class"),
        "a uniformly random other class (robustkernel.corruption 'wrong_class')",
    ),
    "fixed_class": (
        fixed_class,
        "random rows of the classes other than t all relabeled t, t = the class with the "
        "fewest clean training rows (two classes: every flip goes c -> t; beyond eps = half "
        "the share of c, c's flipped rows outnumber its clean ones and no method can recover)",
    ),
    "pair_flip": (
        pair_flip,
        "random rows get the next class, c -> c + 1 (cyclic); data with 3 or more classes only "
        "(with 2 it is random_flip)",
    ),
}
MULTICLASS_ONLY = frozenset({"pair_flip"})
ATTACKS = {REGRESSION: REGRESSION_ATTACKS, CLASSIFICATION: CLASSIFICATION_ATTACKS}


@dataclass(frozen=True)
class Split:
    """One seed's training and test rows.

    Attributes
    ----------
    X_train, y_train : ndarray
        Standardized, then corrupted training rows.
    X_test, y_test : ndarray
        Clean test rows (standardized with the clean training statistics).
    corrupted : ndarray of bool
        True for the corrupted training rows.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    corrupted: np.ndarray


def make_split(
    X: np.ndarray, y: np.ndarray, task: str, attack: str, eps: float, seed: int
) -> Split:
    """The seed's 80/20 split, standardized with clean training statistics, then attacked.

    Parameters
    ----------
    X, y : ndarray
        The data set.
    task : {"regression", "classification"}
        Regression standardizes y too; classification splits stratified.
    attack : str
        A key of :data:`REGRESSION_ATTACKS` / :data:`CLASSIFICATION_ATTACKS`, or "none".
    eps : float
        Corrupted fraction of the training rows.
    seed : int
        Seeds the split and the attack.

    Returns
    -------
    split : Split
        Training and test rows and the corrupted mask.
    """
    kind = "label" if task == REGRESSION else "wrong_class"  # only its protocol is used: eps = 0
    clean = contaminated_split(X, y, kind, 0.0, random_state=seed)
    X_train, y_train = clean.X_train, clean.y_train
    corrupted = np.zeros(X_train.shape[0], dtype=bool)
    if attack != CLEAN and eps > 0:
        function, _ = ATTACKS[task][attack]
        X_train, y_train, index = function(X_train, y_train, eps, seed)
        corrupted[index] = True
    return Split(X_train, y_train, clean.X_test, clean.y_test, corrupted)


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


class StatsmodelsRLM(RegressorMixin, BaseEstimator):
    """Linear robust regression: statsmodels' RLM with Huber's T norm and an intercept."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> StatsmodelsRLM:
        """Fit RLM(y, [1, X], HuberT()).

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Features.
        y : ndarray of shape (n_samples,)
            Target.

        Returns
        -------
        self : StatsmodelsRLM
            Fitted, with ``params_`` (intercept first).
        """
        import statsmodels.api as sm

        design = sm.add_constant(np.asarray(X, float), has_constant="add")
        model = sm.RLM(np.asarray(y, float), design, M=sm.robust.norms.HuberT())
        self.params_ = np.asarray(model.fit().params)
        return self

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Linear predictions.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
            Features.

        Returns
        -------
        y : ndarray of shape (n_samples,)
            Predictions.
        """
        return self.params_[0] + np.asarray(X, float) @ self.params_[1:]


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


def krr_cv(context: Context) -> GridSearchCV:
    """KernelRidge(rbf) tuned by 5-fold CV (R^2) over alpha x gamma.

    Parameters
    ----------
    context : Context
        The run.

    Returns
    -------
    search : GridSearchCV
        Unfitted.
    """
    grid = {"alpha": list(KRR_ALPHAS), "gamma": _gammas(context.n_features)}
    folds = KFold(CV_FOLDS, shuffle=True, random_state=context.seed)
    return GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=folds)


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


def _nystroem(context: Context) -> Nystroem:
    """RBF Nystroem features, gamma = 1 / n_features, min(300, n) landmarks.

    Parameters
    ----------
    context : Context
        The run.

    Returns
    -------
    features : Nystroem
        Unfitted.
    """
    return Nystroem(
        gamma=1.0 / context.n_features,
        n_components=min(MAX_LANDMARKS, context.n_samples),
        random_state=context.seed,
    )


def huber_nystroem(context: Context) -> Pipeline:
    """HuberRegressor (epsilon 1.35, alpha 1) on RBF Nystroem features.

    Parameters
    ----------
    context : Context
        The run.

    Returns
    -------
    pipeline : Pipeline
        Unfitted.
    """
    huber = HuberRegressor(alpha=HUBER_RIDGE_ALPHA, max_iter=1000)
    return Pipeline([("features", _nystroem(context)), ("huber", huber)])


def ransac_nystroem(context: Context) -> Pipeline:
    """RANSACRegressor(Ridge(alpha 1), half the rows per sample) on RBF Nystroem features.

    Parameters
    ----------
    context : Context
        The run.

    Returns
    -------
    pipeline : Pipeline
        Unfitted.
    """
    ransac = RANSACRegressor(
        Ridge(alpha=HUBER_RIDGE_ALPHA),
        min_samples=RANSAC_MIN_SAMPLES,
        random_state=context.seed,
    )
    return Pipeline([("features", _nystroem(context)), ("ransac", ransac)])


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


REGRESSION_METHODS: dict[str, Method] = {
    "subq_default": Method(
        lambda c: SubquantileKernelRegressor(),
        'SubquantileKernelRegressor(): the defaults, kernel, epsilon, alpha, gamma "auto", '
        'refine="reject" (no knobs)',
        library=True,
    ),
    "subq_rbf": Method(
        lambda c: SubquantileKernelRegressor(kernel="rbf"),
        'SubquantileKernelRegressor(kernel="rbf"): the defaults before kernel="auto" (the '
        "rbf kernel, epsilon, alpha, gamma \"auto\", no high-breakdown start)",
        library=True,
    ),
    "subq_true_eps": Method(
        lambda c: SubquantileKernelRegressor(epsilon=c.eps),
        "SubquantileKernelRegressor(epsilon=true eps), other parameters default",
        library=True,
    ),
    "subq_papers": Method(
        lambda c: SubquantileKernelRegressor(
            epsilon=c.eps, kernel="rbf", alpha=1.0, gamma=None, refine=None
        ),
        "the papers' estimator: SubquantileKernelRegressor(epsilon=true eps, "
        'kernel="rbf", alpha=1, gamma=None, refine=None)',
        library=True,
    ),
    "subq_biweight": Method(
        lambda c: SubquantileKernelRegressor(epsilon=c.eps, kernel="rbf", refine="biweight"),
        'SubquantileKernelRegressor(epsilon=true eps, kernel="rbf", refine="biweight"): '
        'the rbf kernel given, as kernel="auto" refuses refine="biweight"',
        library=True,
    ),
    "krr_cv": Method(
        krr_cv,
        f"KernelRidge(rbf), {CV_FOLDS}-fold GridSearchCV: alpha in logspace(-3, 1, 5) x gamma "
        f"in {GAMMA_FACTORS} / n_features",
    ),
    "huber_nystroem": Method(
        huber_nystroem,
        f"HuberRegressor(alpha={HUBER_RIDGE_ALPHA:g}) on Nystroem(rbf, gamma 1 / n_features, "
        f"min({MAX_LANDMARKS}, n) landmarks)",
    ),
    "ransac_nystroem": Method(
        ransac_nystroem,
        f"RANSACRegressor(Ridge(alpha={HUBER_RIDGE_ALPHA:g}), min_samples="
        f"{RANSAC_MIN_SAMPLES}) on the same Nystroem features",
    ),
    "term": Method(
        lambda c: BASELINES["term"](REGRESSION),
        "robustkernel.baselines TERM (tilted kernel ridge), defaults",
        library=True,
    ),
    "sever": Method(
        lambda c: BASELINES["sever"](REGRESSION, epsilon=c.eps),
        "robustkernel.baselines SEVER(epsilon=true eps), defaults",
        library=True,
    ),
    "statsmodels_rlm": Method(
        lambda c: StatsmodelsRLM(),
        "statsmodels RLM, linear, HuberT norm, with intercept",
        unavailable=partial(_missing_module, "statsmodels"),
    ),
}
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
METHODS = {REGRESSION: REGRESSION_METHODS, CLASSIFICATION: CLASSIFICATION_METHODS}
ORACLES = {REGRESSION: krr_cv, CLASSIFICATION: svc_cv}
METRIC_NAMES = {REGRESSION: "rmse", CLASSIFICATION: "accuracy"}


# ----------------------------------------------------------------------------------------------
# One run.


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


def run_one(key: dict[str, Any], *, data_home: str | None, max_rows: int | None) -> dict:
    """Fit one method on one seed's contaminated training rows; score it on the test rows.

    Parameters
    ----------
    key : dict
        task, data, attack, eps, seed, method (``"oracle"``: the task's oracle on the
        uncorrupted training rows).
    data_home : str or None
        Folder of the papers' CSV files.
    max_rows : int or None
        Row cap of every data set.

    Returns
    -------
    row : dict
        metric (test RMSE or accuracy; NaN if the fit raised), seconds (fit wall time),
        cpu_seconds (process CPU time of the whole run), n_train, n_corrupted, error, and
        flag_precision / flag_recall: of the rows the method flags (:func:`flagged_rows`)
        against the corrupted ones (NaN for a method that flags none by design).
    """
    cpu_start = time.process_time()
    task = key["task"]
    X, y = load_data(task, key["data"], data_home, max_rows)
    split = make_split(X, y, task, key["attack"], key["eps"], key["seed"])
    X_fit, y_fit = split.X_train, split.y_train
    if key["method"] == ORACLE:
        X_fit, y_fit = X_fit[~split.corrupted], y_fit[~split.corrupted]
    context = Context(key["eps"], X_fit.shape[0], X_fit.shape[1], key["seed"])
    metric, seconds, error = float("nan"), float("nan"), ""
    precision, recall = float("nan"), float("nan")
    try:
        if key["method"] == ORACLE:
            model = ORACLES[task](context)
        else:
            model = METHODS[task][key["method"]].make(context)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            model.fit(X_fit, y_fit)
            seconds = time.perf_counter() - start
            predicted = np.asarray(model.predict(split.X_test))
        if task == REGRESSION:
            metric = float(np.sqrt(np.mean((predicted - split.y_test) ** 2)))
        else:
            metric = float(np.mean(predicted == split.y_test))
        if not np.isfinite(metric):
            error = "non-finite prediction"
        flagged = flagged_rows(model) if key["method"] != ORACLE else None
        if flagged is not None and flagged.shape == split.corrupted.shape:
            hits = int(np.sum(flagged & split.corrupted))
            precision = hits / flagged.sum() if flagged.any() else float("nan")
            recall = hits / split.corrupted.sum() if split.corrupted.any() else float("nan")
    except Exception as failure:  # a method that fails is a result, not a crash
        error = f"{type(failure).__name__}: {str(failure).splitlines()[0] if str(failure) else ''}"
    return {
        "metric": metric,
        "seconds": seconds,
        "cpu_seconds": time.process_time() - cpu_start,
        "n_train": int(X_fit.shape[0]),
        "n_corrupted": int(split.corrupted.sum()),
        "error": error,
        "flag_precision": float(precision),
        "flag_recall": float(recall),
    }


# ----------------------------------------------------------------------------------------------
# Running the grid.


def _source_hash(paths: Sequence[Path]) -> str:
    """sha256 of the given files' bytes (sorted by path), first 16 hex digits.

    Parameters
    ----------
    paths : sequence of Path
        Files and folders (a folder stands for its ``*.py`` files, recursively).

    Returns
    -------
    digest : str
        Hex digest.
    """
    files = sorted(
        file for path in paths for file in (path.rglob("*.py") if path.is_dir() else [path])
    )
    digest = hashlib.sha256()
    for file in files:
        digest.update(str(file.relative_to(PACKAGE)).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def _version(distribution: str) -> str | None:
    """Installed version of ``distribution``, or None.

    Parameters
    ----------
    distribution : str
        Distribution name.

    Returns
    -------
    version : str or None
        The version.
    """
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def fingerprints(max_rows: int | None) -> dict[bool, str]:
    """The cache fingerprints: for scikit-learn-only methods (False) and robustkernel's (True).

    Parameters
    ----------
    max_rows : int or None
        Row cap (it changes the data).

    Returns
    -------
    fingerprints : dict
        ``{library: fingerprint}``.
    """
    settings = {
        "protocol": PROTOCOL_VERSION,
        "max_rows": max_rows,
        "versions": {
            name: _version(name)
            for name in ("numpy", "scipy", "scikit-learn", "cleanlab", "statsmodels")
        },
        "data": _source_hash(
            [PACKAGE / "corruption.py", PACKAGE / "_fractions.py", PACKAGE / "datasets"]
        ),
    }
    base = json.dumps(settings, sort_keys=True)
    return {False: base, True: base + "|package:" + _source_hash([PACKAGE])}


def cells(data: Sequence[str], attacks: Sequence[str], eps: Sequence[float]) -> list:
    """(data, attack, eps) of every cell: eps = 0 is one clean cell, attack "none".

    Parameters
    ----------
    data, attacks : sequence of str
        Data sets and attacks.
    eps : sequence of float
        Corrupted fractions.

    Returns
    -------
    cells : list of tuple
        ``(data, attack, eps)``.
    """
    out = []
    for name in data:
        for fraction in eps:
            if fraction == 0:
                out.append((name, CLEAN, 0.0))
            else:
                out.extend((name, attack, float(fraction)) for attack in attacks)
    return out


def classification_splits(
    seeds: Sequence[int], eps: Sequence[float], data_home: str | None
) -> list[tuple[str, str, float, int]]:
    """(data, attack, eps, seed) of every classification split of the race: its cells (the
    pair flips on data sets of three or more classes only), each with every seed.

    Parameters
    ----------
    seeds : sequence of int
        Seeds of the splits.
    eps : sequence of float
        Corrupted fractions (0: the clean cell).
    data_home : str or None
        Folder of the papers' CSV files.

    Returns
    -------
    keys : list of tuple
        ``(data, attack, eps, seed)``.
    """
    keys = []
    for data in DATA[CLASSIFICATION]:
        attacks = [
            a for a in ATTACKS[CLASSIFICATION]
            if a not in MULTICLASS_ONLY or _n_classes(CLASSIFICATION, data, data_home, None) > 2
        ]
        keys.extend((*cell, seed) for cell in cells([data], attacks, eps) for seed in seeds)
    return keys


def add_split_arguments(parser: argparse.ArgumentParser, eps: str) -> None:
    """The options of the per-split label-noise scripts: ``--seeds``, ``--eps`` (default
    ``eps``), ``--data-home``, ``--n-jobs``; :func:`parsed_splits` reads them."""
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--eps", default=eps, help="comma-separated corrupted fractions")
    parser.add_argument("--data-home", default=None, help="folder of the papers' CSV files")
    parser.add_argument("--n-jobs", type=int, default=2)


def parsed_splits(args: argparse.Namespace) -> list[tuple[str, str, float, int]]:
    """:func:`classification_splits` of the options :func:`add_split_arguments` added."""
    seeds = [int(s) for s in args.seeds.split(",")]
    fractions = [float(e) for e in args.eps.split(",")]
    return classification_splits(seeds, fractions, args.data_home)


def _n_classes(task: str, name: str, data_home: str | None, max_rows: int | None) -> int:
    """Number of distinct targets of a data set (classes, for classification).

    Parameters
    ----------
    task, name : str
        The data set.
    data_home : str or None
        Folder of the papers' CSV files.
    max_rows : int or None
        Row cap.

    Returns
    -------
    n : int
        Distinct values of y.
    """
    return int(np.unique(load_data(task, name, data_home, max_rows)[1]).size)


def run_task(
    task: str,
    *,
    data: Sequence[str],
    attacks: Sequence[str],
    eps: Sequence[float],
    seeds: Sequence[int],
    methods: Sequence[str],
    data_home: str | None,
    max_rows: int | None,
    cache_dir: Path,
    n_jobs: int,
) -> pd.DataFrame:
    """Every run of a task (cached), the oracle's included.

    Parameters
    ----------
    task : {"regression", "classification"}
        The task.
    data, attacks : sequence of str
        Data sets and attacks.
    eps : sequence of float
        Corrupted fractions.
    seeds : sequence of int
        Seeds.
    methods : sequence of str
        Methods that can run here.
    data_home : str or None
        Folder of the papers' CSV files.
    max_rows : int or None
        Row cap.
    cache_dir : Path
        Run cache folder.
    n_jobs : int
        Parallel runs.

    Returns
    -------
    frame : DataFrame
        One row per run: the key, metric, seconds, cpu_seconds, n_train, n_corrupted, error,
        and ``fresh`` (computed in this call, not read from the cache).
    """
    prints = fingerprints(max_rows)
    run = partial(run_one, data_home=data_home, max_rows=max_rows)
    frames = []
    for library in (False, True):
        names = [m for m in methods if METHODS[task][m].library == library]
        if not library:
            names = [ORACLE, *names]
        keys = [
            {"task": task, "data": d, "attack": a, "eps": e, "seed": s, "method": m}
            for d, a, e in cells(data, attacks, eps)
            if a not in MULTICLASS_ONLY or _n_classes(task, d, data_home, max_rows) > 2
            for s in seeds
            for m in names
        ]
        if not keys:
            continue
        fingerprint = prints[library]
        # the fingerprint holds the package's sources for its estimators' runs only
        fresh = [not cache_path(cache_dir, k, fingerprint, library=False).exists() for k in keys]
        label = f"{task} ({'robustkernel' if library else 'reference and peers'})"
        frame = run_cached(
            run,
            keys,
            cache_dir,
            fingerprint=fingerprint,
            n_jobs=n_jobs,
            description=label,
            library=False,
        )
        frame["fresh"] = fresh  # one row per key, in the order of the keys
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


# ----------------------------------------------------------------------------------------------
# Summaries.


def with_oracle(frame: pd.DataFrame, task: str) -> pd.DataFrame:
    """Runs of the methods with the oracle's metric of the same seed and ``relative``.

    ``relative`` is RMSE / oracle RMSE (regression) or oracle accuracy - accuracy
    (classification): lower is better for both.

    Parameters
    ----------
    frame : DataFrame
        Runs of one task, the oracle's included.
    task : str
        The task.

    Returns
    -------
    frame : DataFrame
        The methods' runs with columns ``oracle`` and ``relative``.
    """
    cell = ["data", "attack", "eps", "seed"]
    oracle = frame[frame["method"] == ORACLE].set_index(cell)["metric"].rename("oracle")
    runs = frame[frame["method"] != ORACLE].join(oracle, on=cell)
    if task == REGRESSION:
        runs["relative"] = runs["metric"] / runs["oracle"]
    else:
        runs["relative"] = runs["oracle"] - runs["metric"]
    return runs


def cell_table(runs: pd.DataFrame, task: str, methods: Sequence[str]) -> pd.DataFrame:
    """Per cell: the oracle's median metric, each method's median, the best and the near-best.

    Regression shows the median RMSE ratio to the oracle; classification the median accuracy.
    Near-best ("within 2 %"): ratio <= 1.02 x best ratio; accuracy >= best accuracy - 0.02.

    Parameters
    ----------
    runs : DataFrame
        :func:`with_oracle`'s output.
    task : str
        The task.
    methods : sequence of str
        Column order.

    Returns
    -------
    table : DataFrame
        One row per cell; the method columns hold floats (NaN: every seed failed).
    """
    value = "relative" if task == REGRESSION else "metric"
    cell = ["data", "attack", "eps"]
    table = runs.pivot_table(index=cell, columns="method", values=value, aggfunc="median")
    table = table.reindex(columns=list(methods))
    oracle = runs.groupby(cell)["oracle"].median()
    if task == REGRESSION:
        best_value = table.min(axis=1)
        near = table.le(NEAR_BEST_RATIO * best_value, axis=0)
        best = table.idxmin(axis=1)
    else:
        best_value = table.max(axis=1)
        near = table.ge(best_value - NEAR_BEST_ACCURACY - 1e-12, axis=0)
        best = table.idxmax(axis=1)
    table.insert(0, "oracle " + METRIC_NAMES[task], oracle.reindex(table.index))
    table["best"] = best
    table["within 2%"] = [", ".join(c for c in methods if row[c]) for _, row in near.iterrows()]
    table["_near"] = [dict(row) for _, row in near.iterrows()]
    return table.reset_index()


def summary_table(
    runs: pd.DataFrame, cell: pd.DataFrame, task: str, methods: Sequence[str]
) -> pd.DataFrame:
    """Per method: cells best-or-within-2 %, median and worst relative score, median fit time.

    Parameters
    ----------
    runs : DataFrame
        :func:`with_oracle`'s output.
    cell : DataFrame
        :func:`cell_table`'s output.
    task : str
        The task.
    methods : sequence of str
        Row order.

    Returns
    -------
    table : DataFrame
        One row per method.
    """
    per_cell = runs.groupby(["data", "attack", "eps", "method"])["relative"].median()
    rows = []
    for name in methods:
        values = per_cell.xs(name, level="method") if name in runs["method"].values else None
        mine = runs[runs["method"] == name]
        n_near = sum(bool(near.get(name, False)) for near in cell["_near"])
        n_best = int((cell["best"] == name).sum())
        label = "ratio to oracle" if task == REGRESSION else "accuracy gap to oracle"
        rows.append(
            {
                "method": name,
                "cells best": n_best,
                "cells best or within 2%": f"{n_near} / {len(cell)}",
                f"median {label}": None if values is None else _round(values.median()),
                f"worst {label}": None if values is None else _round(values.max()),
                "median fit s": _round(mine["seconds"].median(), 2),
                "median flag precision / recall": _flag_summary(mine),
                "failed runs": int(mine["error"].fillna("").ne("").sum()),
            }
        )
    return pd.DataFrame(rows)


def _flag_summary(runs: pd.DataFrame) -> str:
    """"precision / recall" medians of the flagged rows against the corrupted ones over
    ``runs`` (runs cached before the columns existed count as missing), or "" for a method
    that flags no rows.

    Parameters
    ----------
    runs : DataFrame
        One method's runs.

    Returns
    -------
    summary : str
        The two medians, or "".
    """
    if "flag_recall" not in runs or runs["flag_recall"].isna().all():
        return ""
    precision = runs["flag_precision"].median()
    return f"{precision:.2f} / {runs['flag_recall'].median():.2f}"


def _round(value: float, digits: int = 3) -> float | str:
    """``value`` rounded, or "fail" for NaN.

    Parameters
    ----------
    value : float
        A number.
    digits : int, default=3
        Decimals.

    Returns
    -------
    rounded : float or str
        The rounded number or "fail".
    """
    return "fail" if pd.isna(value) else round(float(value), digits)


def printable(cell: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """The cell table with rounded numbers and without the helper column.

    Parameters
    ----------
    cell : DataFrame
        :func:`cell_table`'s output.
    methods : sequence of str
        Method columns.

    Returns
    -------
    table : DataFrame
        For Markdown.
    """
    table = cell.drop(columns="_near").copy()
    numeric = [c for c in table.columns if c in methods or c.startswith("oracle ")]
    for column in numeric:
        table[column] = [_round(v) for v in table[column]]
    return table


# ----------------------------------------------------------------------------------------------
# The command.


def _parse_list(text: str | None) -> list[str] | None:
    """Comma-separated names, or None.

    Parameters
    ----------
    text : str or None
        "a,b,c".

    Returns
    -------
    names : list of str or None
        The names.
    """
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def _check_names(kind: str, given: Sequence[str], known: Sequence[str]) -> None:
    """Exit with a one-line error if ``given`` holds a name outside ``known``.

    Parameters
    ----------
    kind : str
        What the names are ("method", ...).
    given, known : sequence of str
        The names asked for and the ones that exist.
    """
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise SystemExit(f"unknown {kind}(s) {unknown}; choose from {sorted(set(known))}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command-line options.

    Parameters
    ----------
    argv : sequence of str or None
        Arguments (None: ``sys.argv[1:]``).

    Returns
    -------
    args : Namespace
        The options.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke configuration: 2 data sets and 2 attacks per task, eps 0.2, 2 seeds, at "
        f"most {QUICK['max_rows']} rows; never writes BENCHMARKS.md",
    )
    parser.add_argument("--task", choices=[REGRESSION, CLASSIFICATION, "both"], default="both")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 5)")
    parser.add_argument("--methods", default=None, help="comma-separated method names")
    parser.add_argument("--data", default=None, help="comma-separated data set names")
    parser.add_argument("--attacks", default=None, help="comma-separated attack names")
    parser.add_argument(
        "--eps", default=None, help="comma-separated fractions (default 0,0.1,0.2,0.3)"
    )
    parser.add_argument("--max-rows", type=int, default=None, help="row cap of every data set")
    parser.add_argument("--data-home", default=None, help="folder of the papers' CSV files")
    parser.add_argument("--n-jobs", type=int, default=1, help="parallel runs (joblib)")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--csv", type=Path, default=None, help="CSV of every run")
    parser.add_argument("--out", type=Path, default=HERE.parent / "BENCHMARKS.md")
    parser.add_argument("--no-write", action="store_true", help="leave BENCHMARKS.md alone")
    return parser.parse_args(argv)


@dataclass(frozen=True)
class TaskPlan:
    """What one task runs.

    Attributes
    ----------
    task : str
        The task.
    data, attacks, methods : list of str
        Data sets, attacks and the methods that can run.
    skipped : dict
        Method -> why it is skipped.
    """

    task: str
    data: list[str]
    attacks: list[str]
    methods: list[str]
    skipped: dict[str, str]


def plan(args: argparse.Namespace, task: str) -> TaskPlan:
    """Data sets, attacks and methods of ``task`` under the options.

    Parameters
    ----------
    args : Namespace
        The options.
    task : str
        The task.

    Returns
    -------
    plan : TaskPlan
        What runs.
    """
    data = _parse_list(args.data)
    attacks = _parse_list(args.attacks)
    if data is None:
        data = list(QUICK[task]["data"] if args.quick else DATA[task])
    else:
        data = [d for d in data if d in DATA[task]]
    if attacks is None:
        attacks = list(QUICK[task]["attacks"] if args.quick else ATTACKS[task])
    else:
        attacks = [a for a in attacks if a in ATTACKS[task]]
    wanted = _parse_list(args.methods)
    names = list(METHODS[task]) if wanted is None else [m for m in wanted if m in METHODS[task]]
    skipped = {}
    for name in list(names):
        reason = METHODS[task][name].unavailable()
        if reason is not None:
            skipped[name] = reason
            names.remove(name)
    return TaskPlan(task, data, attacks, names, skipped)


def task_section(
    task: str, frame: pd.DataFrame, task_plan: TaskPlan
) -> tuple[list[str], pd.DataFrame]:
    """The Markdown lines of one task's tables, and its runs with the oracle's metric.

    Parameters
    ----------
    task : str
        The task.
    frame : DataFrame
        Its runs.
    task_plan : TaskPlan
        Its methods.

    Returns
    -------
    lines : list of str
        Markdown.
    runs : DataFrame
        :func:`with_oracle`'s output.
    """
    runs = with_oracle(frame, task)
    methods = task_plan.methods
    cell = cell_table(runs, task, methods)
    title = "Regression" if task == REGRESSION else "Classification"
    what = (
        "test RMSE / oracle's test RMSE (median over seeds; lower is better)"
        if task == REGRESSION
        else "test accuracy (median over seeds; higher is better)"
    )
    lines = [
        f"### {title}: {what}",
        "",
        markdown_table(printable(cell, methods)),
        f"### {title}: summary per method ({len(cell)} cells)",
        "",
        markdown_table(summary_table(runs, cell, task, methods)),
    ]
    return lines, runs


def describe(
    plans: Sequence[TaskPlan], eps: Sequence[float], seeds: Sequence[int], max_rows: int | None
) -> list[str]:
    """The protocol paragraph: data, attacks, methods, skipped methods, near-best rule.

    Parameters
    ----------
    plans : sequence of TaskPlan
        The tasks run.
    eps : sequence of float
        Fractions.
    seeds : sequence of int
        Seeds.
    max_rows : int or None
        Row cap of every data set.

    Returns
    -------
    lines : list of str
        Markdown.
    """
    cap = (
        ""
        if max_rows is None
        else f" Every data set is cut to a fixed random subset of at most {max_rows} rows."
    )
    lines = [
        f"Protocol: per seed ({list(seeds)}), an 80/20 split (stratified for classification), x "
        "(regression: and y) standardized with the clean training statistics, then eps of the "
        f"training rows corrupted (eps in {list(eps)}; eps = 0 is the clean cell, attack "
        "`none`); the test rows stay clean. Regression cells show test RMSE / the oracle's "
        "(`krr_cv` on the uncorrupted training rows) of the same seed, median over seeds; "
        "classification cells the test accuracy, median over seeds, and the summary the gap "
        "oracle accuracy - accuracy (oracle: `svc_cv` on the uncorrupted rows). **Within 2%**: "
        f"regression, median ratio <= {NEAR_BEST_RATIO} x the cell's best median ratio; "
        f"classification, median accuracy >= the cell's best median accuracy - "
        f"{NEAR_BEST_ACCURACY} (absolute). The oracle never competes. Worst = the largest "
        "cell median. Fit time: the median over runs of `fit` wall seconds (one BLAS thread, "
        "from the cache where a run was cached)." + cap,
        "",
    ]
    for task_plan in plans:
        lines.append(f"{task_plan.task.capitalize()} data:")
        lines += [f"- `{d}`: {DATA[task_plan.task][d].description}" for d in task_plan.data]
        lines.append(f"{task_plan.task.capitalize()} attacks (on floor(eps n) training rows):")
        lines += [f"- `{a}`: {ATTACKS[task_plan.task][a][1]}" for a in task_plan.attacks]
        lines.append(f"{task_plan.task.capitalize()} methods:")
        lines += [f"- `{m}`: {METHODS[task_plan.task][m].description}" for m in task_plan.methods]
        lines += [f"- `{m}`: skipped, {why}" for m, why in task_plan.skipped.items()]
        lines.append("")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the tables, write the CSV and (unless told not to) BENCHMARKS.md.

    Parameters
    ----------
    argv : sequence of str or None
        Arguments (None: ``sys.argv[1:]``).

    Returns
    -------
    status : int
        0.
    """
    args = parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()
    cpu_self = resource.getrusage(resource.RUSAGE_SELF)
    tasks = [REGRESSION, CLASSIFICATION] if args.task == "both" else [args.task]
    for kind, given, known in (
        ("method", _parse_list(args.methods), [m for t in tasks for m in METHODS[t]]),
        ("data set", _parse_list(args.data), [d for t in tasks for d in DATA[t]]),
        ("attack", _parse_list(args.attacks), [a for t in tasks for a in ATTACKS[t]]),
    ):
        _check_names(kind, given or [], known)
    eps = [float(e) for e in _parse_list(args.eps)] if args.eps else None
    eps = eps or list(QUICK["eps"] if args.quick else EPSILONS)
    seeds = list(range(args.seeds or (QUICK["seeds"] if args.quick else 5)))
    max_rows = (
        args.max_rows if args.max_rows is not None else (QUICK["max_rows"] if args.quick else None)
    )
    plans = [plan(args, task) for task in tasks]
    for task_plan in plans:
        for name, why in task_plan.skipped.items():
            print(f"note: {task_plan.task} method {name!r} skipped: {why}", flush=True)

    body_tables: list[str] = []
    all_runs = []
    for task_plan in plans:
        if not task_plan.data:
            continue
        frame = run_task(
            task_plan.task,
            data=task_plan.data,
            attacks=task_plan.attacks,
            eps=eps,
            seeds=seeds,
            methods=task_plan.methods,
            data_home=args.data_home,
            max_rows=max_rows,
            cache_dir=args.cache_dir,
            n_jobs=args.n_jobs,
        )
        lines, runs = task_section(task_plan.task, frame, task_plan)
        body_tables += lines
        oracle = frame[frame["method"] == ORACLE].assign(oracle=lambda f: f["metric"])
        oracle["relative"] = 1.0 if task_plan.task == REGRESSION else 0.0
        all_runs.append(pd.concat([runs, oracle], ignore_index=True))

    wall = time.perf_counter() - started
    load_after = os.getloadavg()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_main = usage.ru_utime + usage.ru_stime - cpu_self.ru_utime - cpu_self.ru_stime
    runs_frame = pd.concat(all_runs, ignore_index=True) if all_runs else pd.DataFrame()
    fresh = runs_frame["fresh"].astype(bool) if len(runs_frame) else pd.Series(dtype=bool)
    computed, n_runs = int(fresh.sum()), len(runs_frame)
    # With n_jobs = 1 the runs ran in this process (counted in cpu_main); else add the workers'.
    cpu_workers = float(runs_frame.loc[fresh, "cpu_seconds"].sum()) if args.n_jobs != 1 else 0.0
    csv = args.csv or (
        DEFAULT_CSV.with_name("bench_robust_quick.csv")
        if args.quick
        else DEFAULT_CSV
        if len(tasks) > 1
        else DEFAULT_CSV.with_name(f"bench_robust_{tasks[0]}.csv")
    )
    csv.parent.mkdir(parents=True, exist_ok=True)
    columns = [
        "task", "data", "attack", "eps", "seed", "method", "metric", "oracle", "relative",
        "seconds", "cpu_seconds", "n_train", "n_corrupted", "error", "flag_precision",
        "flag_recall",
    ]  # fmt: skip
    atomic_write(csv, runs_frame.reindex(columns=columns).to_csv(index=False))

    command = ".venv/bin/python " + " ".join(
        shlex.quote(a) for a in ["benchmarks/bench_robust.py", *(argv or sys.argv[1:])]
    )
    parallel = f"{args.n_jobs} parallel runs" if args.n_jobs != 1 else "runs one after another"
    environment = [
        f"Command: `{command}`  ",
        f"Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}. Machine: "
        f"{platform.machine()}, {cpu_description()} (shared with other jobs), Python "
        f"{platform.python_version()}, numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}, robustkernel {robustkernel.__version__}, cleanlab "
        f"{_version('cleanlab')}, statsmodels {_version('statsmodels')}; {parallel}, one BLAS "
        "thread each.  ",
        "Load average (1, 5, 15 min) before: "
        + ", ".join(f"{v:.2f}" for v in load_before)
        + "; after: "
        + ", ".join(f"{v:.2f}" for v in load_after)
        + ".  ",
        f"Wall time {wall:.0f} s; CPU time {cpu_main + cpu_workers:.0f} s (this process"
        + (
            f" {cpu_main:.0f} s + the runs in the workers {cpu_workers:.0f} s"
            if cpu_workers
            else ""
        )
        + f"); {computed} of {n_runs} runs computed in this invocation, the rest read from the "
        "run cache. Every run: "
        f"`{csv.relative_to(HERE.parent) if csv.is_relative_to(HERE.parent) else csv}`.",
        "",
    ]
    # one section per task when one task runs (each task has its own data, attacks and eps)
    section = SECTION if len(tasks) > 1 else f"{SECTION}: {tasks[0]}"
    body = "\n".join(
        [section, "", *environment, *describe(plans, eps, seeds, max_rows), *body_tables]
    )
    print(body)
    if args.quick or args.no_write:
        print(f"({'--quick' if args.quick else '--no-write'}: {args.out} left alone)")
    else:
        replace_markdown_section(args.out, section, body)
        print(f"wrote the section {section[3:]!r} of {args.out}")
    return 0


if __name__ == "__main__":
    # Run the module as ``bench_robust``, not ``__main__``, so that the parallel workers (which
    # unpickle the run function and its helpers by module and name) can import it.
    sys.path.insert(0, str(HERE))
    import bench_robust

    raise SystemExit(bench_robust.main())
