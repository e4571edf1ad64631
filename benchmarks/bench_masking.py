"""Masking study: do robust regression methods find masked outliers, and keep good leverage rows?

A benchmark of our own design on generated data, where every contaminated row is known. Masking
is the failure of a fit that the outliers themselves pull towards them, so that their residuals
look ordinary: a group of vertical outliers shifts the fit up, a tight cluster of bad leverage
rows far out in x tilts it; a method that ranks rows by the residuals of such a fit keeps them
and flags clean rows instead ("swamping"), good leverage rows first.

Data sets (one per truth x noise x contamination x rate x n x p x seed):

* features x ~ N(0, I_p), p in ``--features`` (default 2, 5, 10, 20); n training rows in
  ``--sizes`` (default 50, 100, 400, 2000; ``--large`` adds 20000);
* truths: linear, y = x.beta + noise; nonlinear, y = sin(x.w) + (x.v)^2 / 2 + noise; beta, w
  and v are random unit vectors (drawn per seed and p, shared by every n);
* clean noise N(0, 0.5^2); and two clean variants without contamination: Gaussian, and
  0.5 x Student-t(3) noise (its test rows too);
* contamination at rates 10 %, 25 %, 40 % (floor(rate n) rows, drawn at random):
  "vertical": x unchanged, y += U(10, 15) x sd(clean y); "leverage" (bad leverage): the rows
  moved to a tight cluster (sd 0.1 per coordinate) at distance U(5, 10) along a random unit
  direction, all with one constant target f(center) +- U(5, 10) x sd(clean y), far from the
  truth there; "mixed": floor(m / 2) vertical rows and the rest bad leverage;
* every contaminated set also has good leverage rows, max(2, round(3 % of n)) of the other rows,
  moved along a second direction (orthogonal to the first) to distance U(5, 10) for the linear
  truth and U(2, 3) for the nonlinear one (where the truth stays learnable), sd 0.25 per
  coordinate, with targets f(x) + N(0, 0.5^2): they must be kept;
* test set: 2000 rows of the clean distribution (no leverage rows, the set's own noise).

The clean training rows of a (truth, n, p, seed) are the same for every contamination and rate,
and the test rows the same for every n and contamination, so the comparisons are paired.

Methods (each fit in try/except: an error is recorded as "error: <message>" and the others go
on; ``random_state`` is the data set's seed where a method takes one):

1. ``SubquantileKernelRegressor()``: the package's defaults at the time of the run (the table
   names the default kernel);
2. ``SubquantileKernelRegressor(kernel="rbf")``: the previous defaults;
3. ``SubquantileRegressor(LinearRegression())``;
4. R's robustbase through ``Rscript`` (one process per batch of data sets, written as CSV to a
   temporary folder): ``ltsReg(X, y)`` after ``set.seed(0)``, flags ``lts.wt == 0``, and
   ``lmrob(y ~ X)`` after ``set.seed(0)``, flags robustness weight ``< 0.1 / n``; their test
   predictions come from their coefficients (for the nonlinear truth too: a linear fit). Left
   out with a note when Rscript or robustbase is missing (Debian / Ubuntu:
   ``apt-get install r-base-core r-cran-robustbase``);
5. ``KernelRidge`` + ``GridSearchCV`` (5-fold, shuffled with the seed; linear and rbf kernels,
   alpha in 10^-3 ... 10^1, gamma in (0.25, 0.5, 1, 2, 4) / p; scikit-learn's default R^2
   score) on all rows, what a practitioner does; it flags nothing. The same search fitted on the
   clean rows only (inliers and good leverage rows) is the oracle, the denominator of
   "RMSE / oracle" (on the clean sets the two are the same fit). Above ``--krr-max-rows``
   (default 2000) training rows both searches run on a seeded random subset of that many of
   their rows (an exact kernel ridge on 20000 rows needs a 3.2 GB kernel matrix and hours of
   searching); the section says when this happened.

Metrics per (data set, method): recall of the flags against the contaminated rows, precision
(a method that flags nothing on a contaminated set counts precision 0), share of the good
leverage rows flagged, share of all rows flagged (on the clean sets: the false-flag rate),
test RMSE against the noisy test targets divided by the oracle's (the per-run CSV also has
the RMSE against the noiseless truth, ``rmse_f``), fit CPU seconds (``time.process_time``,
R's ``proc.time``) and wall seconds. The tables: (a) per method and truth on the contaminated
sets, (b) the clean sets, (c) per contamination kind and rate for the defaults and ltsReg, (d)
fit times per n; above them, the targets of the issue and whether the defaults meet them.

Every run is cached (one JSON file per data set and pass, ``robustkernel.reproduce._runs``)
under ``--cache-dir`` (default ``benchmarks/.cache/bench_masking``): an interrupted run resumes,
and after an edit of the package only its estimators are refitted (the scikit-learn and R
passes are keyed on the data protocol and the versions, not on the package's sources). Cached
runs keep the times of the run that computed them; ``--no-cache`` recomputes everything.

One BLAS / OpenMP thread (set below, before numpy is imported; R's subprocess inherits it).
Run, on a quiet machine:

    python benchmarks/bench_masking.py [--seeds 3] [--sizes 50 100 400 2000] [--large]
        [--features 2 5 10 20] [--quick] [--no-write] [--out BENCHMARKS.md] [--json FILE]

prints the tables, writes them into BENCHMARKS.md (section "Masking study (bench_masking.py)")
and every run to ``benchmarks/results/bench_masking.csv`` (neither with ``--no-write`` nor
``--quick``). ``--quick`` is a smoke test of about two minutes: n = 100, p in {2, 5}, one seed.
``--n-jobs 2`` runs the Python passes in two processes (the fit times then share the cores).
``--json FILE`` also writes every run's row (the CSV's columns, NaN as null) and the targets as
JSON, for the scorecard (with ``--quick`` and ``--no-write`` too).
"""

from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"  # before numpy is imported: one thread per process
os.environ["OPENBLAS_NUM_THREADS"] = "1"
os.environ["MKL_NUM_THREADS"] = "1"

import argparse
import hashlib
import inspect
import json
import platform
import shlex
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy
import sklearn
from harness.report import cpu_description, markdown_table, replace_markdown_section
from harness.rscript import R_INSTALL, R_SCRIPT, RFit, r_version, run_robustbase_batch
from harness.timing import cpu_seconds as _cpu_seconds
from harness.timing import error_text as _error_text  # the name the cached fits' source reads
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GridSearchCV, KFold
from tqdm.auto import tqdm

import robustkernel
from robustkernel import SubquantileKernelRegressor, SubquantileRegressor
from robustkernel._atomic import atomic_write
from robustkernel.corruption import n_corrupted
from robustkernel.reproduce._runs import cache_path, library_fingerprint, run_cached

SECTION = "## Masking study (bench_masking.py)"
HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / "BENCHMARKS.md"
DEFAULT_CACHE = HERE / ".cache" / "bench_masking"
DEFAULT_CSV = HERE / "results" / "bench_masking.csv"
PROTOCOL_VERSION = 1  # bump when a generator or a method definition below changes

# ----------------------------------------------------------------------------------------------
# The design.

TRUTHS = ("linear", "nonlinear")
CLEAN = "clean"
KINDS = ("vertical", "leverage", "mixed")
RATES = (0.10, 0.25, 0.40)
GAUSSIAN, STUDENT = "gaussian", "student_t3"
SIZES = (50, 100, 400, 2000)
LARGE_SIZE = 20000
FEATURES = (2, 5, 10, 20)
SEEDS = 3
QUICK = {"sizes": (100,), "features": (2, 5), "seeds": 1}

NOISE_SD = 0.5
STUDENT_DF = 3
N_TEST = 2000
VERTICAL_SHIFT = (10.0, 15.0)  # x sd of the clean targets
BAD_DISTANCE = (5.0, 10.0)  # feature sds from the origin
BAD_SPREAD = 0.1  # sd per coordinate of the bad leverage cluster
BAD_OFFSET = (5.0, 10.0)  # x sd of the clean targets, away from the truth at the cluster
GOOD_SHARE, GOOD_MIN = 0.03, 2
GOOD_DISTANCE = {"linear": (5.0, 10.0), "nonlinear": (2.0, 3.0)}
GOOD_SPREAD = 0.25

CV_FOLDS = 5
KRR_ALPHAS = tuple(float(a) for a in np.logspace(-3, 1, 5))
GAMMA_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)  # x 1 / p
KRR_MAX_ROWS = 2000

R_BATCH_ROWS = 400_000  # training rows per Rscript process (CSV files in a temporary folder)

# The targets of the issue, checked on the defaults.
TARGET_RECALL = 0.95
TARGET_GOOD_FLAGGED = 0.02
TARGET_RMSE_NONLINEAR = 1.10
TARGET_CLEAN_FLAGGED = 0.01
TARGET_STUDENT_FACTOR = 2.0
TARGET_CLEAN_RMSE = 1.02

DEFAULTS = "SubquantileKernelRegressor()"
RBF = 'SubquantileKernelRegressor(kernel="rbf")'
WRAPPER = "SubquantileRegressor(LinearRegression())"
LTS = "ltsReg (R)"
LMROB = "lmrob (R)"
KRR_ALL = "KernelRidge + GridSearchCV, all rows"
ORACLE = "oracle"
R_METHODS = {"ltsReg": LTS, "lmrob": LMROB}
METHOD_ORDER = (DEFAULTS, RBF, WRAPPER, LTS, LMROB, KRR_ALL)
FLAGLESS = frozenset({KRR_ALL, ORACLE})
KEY_COLUMNS = ["truth", "noise", "kind", "rate", "n", "p", "seed"]

_TRUTH_CODE = {"linear": 0, "nonlinear": 1}
_NOISE_CODE = {GAUSSIAN: 0, STUDENT: 1}
_KIND_CODE = {CLEAN: 0, "vertical": 1, "leverage": 2, "mixed": 3}


@dataclass(frozen=True)
class Spec:
    """One data set of the study.

    Attributes
    ----------
    truth : {"linear", "nonlinear"}
        The regression function.
    noise : {"gaussian", "student_t3"}
        The clean noise (Student-t only on the clean sets).
    kind : {"clean", "vertical", "leverage", "mixed"}
        The contamination.
    rate : float
        Contaminated share of the training rows (0 for the clean sets).
    n, p : int
        Training rows and features.
    seed : int
        Seed of the data and of the methods' ``random_state``.
    """

    truth: str
    noise: str
    kind: str
    rate: float
    n: int
    p: int
    seed: int

    def key(self) -> dict[str, Any]:
        """The JSON-serializable key of the data set (its fields)."""
        return asdict(self)


@dataclass(frozen=True)
class MaskingData:
    """A generated data set: training rows, their roles and the clean test rows.

    Attributes
    ----------
    X, y : ndarray
        Training rows.
    bad : ndarray of bool
        The contaminated training rows (vertical and bad leverage).
    good : ndarray of bool
        The good leverage training rows.
    X_test, y_test, f_test : ndarray
        Clean test rows, their noisy targets and the noiseless truth there.
    """

    X: np.ndarray
    y: np.ndarray
    bad: np.ndarray
    good: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    f_test: np.ndarray


def build_specs(
    sizes: Sequence[int],
    features: Sequence[int],
    seeds: int,
    kinds: Sequence[str] = KINDS,
    rates: Sequence[float] = RATES,
) -> list[Spec]:
    """Every data set of a configuration, the smallest n first.

    Parameters
    ----------
    sizes, features : sequence of int
        Training rows and feature counts.
    seeds : int
        Seeds 0, ..., seeds - 1.
    kinds, rates : sequence
        The contamination kinds and rates (every one by default).

    Returns
    -------
    specs : list of Spec
        Per (n, p, truth, seed): the clean Gaussian and Student-t sets, then every
        contamination kind x rate.
    """
    variants = [(GAUSSIAN, CLEAN, 0.0), (STUDENT, CLEAN, 0.0)]
    variants += [(GAUSSIAN, kind, rate) for kind in kinds for rate in rates]
    return [
        Spec(truth, noise, kind, rate, n, p, seed)
        for n in sorted(set(sizes))
        for p in sorted(set(features))
        for truth in TRUTHS
        for seed in range(seeds)
        for noise, kind, rate in variants
    ]


def _stream(*parts: int) -> np.random.Generator:
    """A generator seeded by the protocol version and ``parts``."""
    return np.random.default_rng([PROTOCOL_VERSION, *parts])


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


@dataclass(frozen=True)
class Truth:
    """A regression function f of the study.

    Attributes
    ----------
    kind : {"linear", "nonlinear"}
        ``x.beta`` or ``sin(x.w) + (x.v)^2 / 2``.
    directions : ndarray of shape (2, p)
        beta (first row) for the linear truth; w and v for the nonlinear one.
    """

    kind: str
    directions: np.ndarray

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """f at the rows of X."""
        if self.kind == "linear":
            return X @ self.directions[0]
        return np.sin(X @ self.directions[0]) + 0.5 * (X @ self.directions[1]) ** 2


def make_truth(truth: str, p: int, seed: int) -> Truth:
    """The truth of a (truth, p, seed), the same for every n and contamination.

    Parameters
    ----------
    truth : {"linear", "nonlinear"}
        Which function.
    p : int
        Features.
    seed : int
        Seed.

    Returns
    -------
    truth : Truth
        Random unit directions (Gaussian vectors normalized).
    """
    rng = _stream(1, seed, p, _TRUTH_CODE[truth])
    return Truth(truth, np.vstack([_unit(rng.normal(size=p)) for _ in range(2)]))


def _noise(noise: str, rng: np.random.Generator, size: int) -> np.ndarray:
    if noise == GAUSSIAN:
        return NOISE_SD * rng.normal(size=size)
    return NOISE_SD * rng.standard_t(STUDENT_DF, size=size)


def generate(spec: Spec) -> MaskingData:
    """Generate the training and test rows of a data set.

    Parameters
    ----------
    spec : Spec
        The data set.

    Returns
    -------
    data : MaskingData
        Training rows with their contaminated and good leverage masks, and the clean test rows.
    """
    truth = make_truth(spec.truth, spec.p, spec.seed)
    codes = (_TRUTH_CODE[spec.truth], _NOISE_CODE[spec.noise])
    rng = _stream(2, spec.seed, spec.n, spec.p, *codes)
    X = rng.normal(size=(spec.n, spec.p))
    y = truth(X) + _noise(spec.noise, rng, spec.n)
    rng = _stream(3, spec.seed, spec.p, *codes)
    X_test = rng.normal(size=(N_TEST, spec.p))
    f_test = truth(X_test)
    y_test = f_test + _noise(spec.noise, rng, N_TEST)
    bad = np.zeros(spec.n, dtype=bool)
    good = np.zeros(spec.n, dtype=bool)
    if spec.kind != CLEAN:
        rng = _stream(
            4, spec.seed, spec.n, spec.p, *codes, _KIND_CODE[spec.kind], round(100 * spec.rate)
        )
        scale = float(np.std(y))
        m = n_corrupted(spec.n, spec.rate)
        n_good = max(GOOD_MIN, round(GOOD_SHARE * spec.n))
        order = rng.permutation(spec.n)
        bad[order[:m]] = True
        good[order[m : m + n_good]] = True
        m_vertical = {"vertical": m, "leverage": 0, "mixed": m // 2}[spec.kind]
        vertical, leverage = order[:m_vertical], order[m_vertical:m]
        bad_direction = _unit(rng.normal(size=spec.p))
        other = rng.normal(size=spec.p)
        good_direction = _unit(other - (other @ bad_direction) * bad_direction)
        y[vertical] += scale * rng.uniform(*VERTICAL_SHIFT, size=vertical.size)
        if leverage.size:
            center = rng.uniform(*BAD_DISTANCE) * bad_direction
            X[leverage] = center + BAD_SPREAD * rng.normal(size=(leverage.size, spec.p))
            offset = rng.choice([-1.0, 1.0]) * rng.uniform(*BAD_OFFSET) * scale
            y[leverage] = truth(center[None, :])[0] + offset
        rows = order[m : m + n_good]
        center = rng.uniform(*GOOD_DISTANCE[spec.truth]) * good_direction
        X[rows] = center + GOOD_SPREAD * rng.normal(size=(n_good, spec.p))
        y[rows] = truth(X[rows]) + NOISE_SD * rng.normal(size=n_good)
    return MaskingData(X, y, bad, good, X_test, y_test, f_test)


# ----------------------------------------------------------------------------------------------
# Methods and scores.


def default_kernel() -> str:
    """The default kernel of SubquantileKernelRegressor, for the tables ("?" if unreadable)."""
    try:
        return str(SubquantileKernelRegressor().get_params()["kernel"])
    except Exception:  # the package may be mid-edit; the fits will report the error
        return "?"


def krr_search(p: int, seed: int) -> GridSearchCV:
    """KernelRidge tuned by 5-fold GridSearchCV over linear and rbf kernels.

    Parameters
    ----------
    p : int
        Features (the rbf gammas are ``GAMMA_FACTORS / p``).
    seed : int
        Seed of the shuffled folds.

    Returns
    -------
    search : GridSearchCV
        Unfitted; scored by KernelRidge's R^2.
    """
    grid = [
        {"kernel": ["linear"], "alpha": list(KRR_ALPHAS)},
        {
            "kernel": ["rbf"],
            "alpha": list(KRR_ALPHAS),
            "gamma": [factor / p for factor in GAMMA_FACTORS],
        },
    ]
    return GridSearchCV(KernelRidge(), grid, cv=KFold(CV_FOLDS, shuffle=True, random_state=seed))


ROBUSTKERNEL_METHODS: dict[str, Callable[[int], Any]] = {
    DEFAULTS: lambda seed: SubquantileKernelRegressor(random_state=seed),
    RBF: lambda seed: SubquantileKernelRegressor(kernel="rbf", random_state=seed),
    WRAPPER: lambda seed: SubquantileRegressor(LinearRegression(), random_state=seed),
}


def timed_fit(
    make: Callable[[], Any], X: np.ndarray, y: np.ndarray
) -> tuple[Any, str | None, float, float]:
    """Build and fit an estimator, timing the fit; an exception becomes an error text.

    Parameters
    ----------
    make : callable
        Returns the unfitted estimator.
    X, y : ndarray
        Training rows.

    Returns
    -------
    model : estimator or None
        The fitted estimator (None on error).
    error : str or None
        The exception's type and first line.
    wall, cpu : float
        Seconds of ``time.perf_counter`` and ``time.process_time`` around the fit.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make().fit(X, y)
        error = None
    except Exception as exc:  # recorded; the other methods go on
        model, error = None, _error_text(exc)
    return model, error, time.perf_counter() - wall, time.process_time() - cpu


def score(
    method: str,
    data: MaskingData,
    flags: np.ndarray | None,
    prediction: np.ndarray | None,
    error: str | None,
    wall: float,
    cpu: float,
) -> dict[str, Any]:
    """The result row of one method on one data set.

    Parameters
    ----------
    method : str
        The method's name.
    data : MaskingData
        The data set.
    flags : ndarray of bool or None
        The flagged training rows (None: the method does not flag, or failed).
    prediction : ndarray or None
        Predictions at ``data.X_test`` (None: failed).
    error : str or None
        The error, if the fit failed.
    wall, cpu : float
        Fit seconds.

    Returns
    -------
    row : dict
        method, error, recall, precision, good_flagged, flagged_share, flagged, rmse, rmse_f,
        wall, cpu (NaN where undefined).
    """
    nan = float("nan")
    row: dict[str, Any] = {"method": method, "error": error, "wall": wall, "cpu": cpu}
    row |= dict.fromkeys(("recall", "precision", "good_flagged", "flagged_share"), nan)
    row |= {"flagged": None, "rmse": nan, "rmse_f": nan}
    if error is not None:
        return row
    if flags is not None:
        flags = np.asarray(flags, dtype=bool)
        n_flagged = int(flags.sum())
        row |= {"flagged": n_flagged, "flagged_share": n_flagged / flags.size}
        if data.bad.any():
            hits = int(np.count_nonzero(flags & data.bad))
            row["recall"] = hits / int(data.bad.sum())
            row["precision"] = hits / n_flagged if n_flagged else 0.0
            row["good_flagged"] = int(np.count_nonzero(flags & data.good)) / int(data.good.sum())
    if prediction is not None:
        prediction = np.asarray(prediction, dtype=float).ravel()
        row["rmse"] = float(np.sqrt(np.mean((prediction - data.y_test) ** 2)))
        row["rmse_f"] = float(np.sqrt(np.mean((prediction - data.f_test) ** 2)))
    return row


def _capped(rows: np.ndarray, cap: int, seed: int, salt: int) -> np.ndarray:
    """At most ``cap`` of ``rows`` (a seeded random subset, sorted)."""
    if rows.size <= cap:
        return rows
    return np.sort(np.random.default_rng([seed, salt]).choice(rows, cap, replace=False))


def _fit_krr(method: str, spec: Spec, data: MaskingData, rows: np.ndarray) -> dict[str, Any]:
    model, error, wall, cpu = timed_fit(
        lambda: krr_search(spec.p, spec.seed), data.X[rows], data.y[rows]
    )
    prediction = None if model is None else model.predict(data.X_test)
    row = score(method, data, None, prediction, error, wall, cpu)
    row["train_rows"] = int(rows.size)
    if model is not None:
        row["chosen"] = ", ".join(
            f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in sorted(model.best_params_.items())
        )
    return row


def run_sklearn(key: dict[str, Any], krr_max_rows: int = KRR_MAX_ROWS) -> list[dict[str, Any]]:
    """The oracle and KernelRidge + GridSearchCV on all rows, on one data set.

    Parameters
    ----------
    key : dict
        A :meth:`Spec.key`.
    krr_max_rows : int, default=KRR_MAX_ROWS
        Above this many training rows both searches fit a seeded random subset of that size.

    Returns
    -------
    rows : list of dict
        The oracle's row and the all-rows search's (on a clean set: the oracle's fit again).
    """
    spec = Spec(**key)
    data = generate(spec)
    clean_rows = _capped(np.flatnonzero(~data.bad), krr_max_rows, spec.seed, 5)
    oracle = _fit_krr(ORACLE, spec, data, clean_rows)
    if not data.bad.any():
        return [oracle, {**oracle, "method": KRR_ALL}]
    all_rows = _capped(np.arange(spec.n), krr_max_rows, spec.seed, 6)
    return [oracle, _fit_krr(KRR_ALL, spec, data, all_rows)]


def run_robustkernel(key: dict[str, Any]) -> list[dict[str, Any]]:
    """robustkernel's three methods on one data set.

    Parameters
    ----------
    key : dict
        A :meth:`Spec.key`.

    Returns
    -------
    rows : list of dict
        One row per method of :data:`ROBUSTKERNEL_METHODS`.
    """
    spec = Spec(**key)
    data = generate(spec)
    rows = []
    for method, make in ROBUSTKERNEL_METHODS.items():
        model, error, wall, cpu = timed_fit(lambda make=make: make(spec.seed), data.X, data.y)
        flags = prediction = None
        if model is not None:
            try:
                flags = ~np.asarray(model.inlier_mask_, dtype=bool)
                prediction = model.predict(data.X_test)
            except Exception as exc:  # a fitted model without flags or predictions
                error = _error_text(exc)
        rows.append(score(method, data, flags, prediction, error, wall, cpu))
    return rows


# ----------------------------------------------------------------------------------------------
# R's robustbase through Rscript (harness.rscript): one process per batch of data sets.


def _r_batches(specs: Sequence[Spec]) -> Iterator[list[Spec]]:
    """Consecutive batches of at most ``R_BATCH_ROWS`` training rows (at least one set)."""
    batch: list[Spec] = []
    for spec in specs:
        if batch and sum(s.n for s in batch) + spec.n > R_BATCH_ROWS:
            yield batch
            batch = []
        batch.append(spec)
    if batch:
        yield batch


def _r_row(method: str, data: MaskingData, fit: RFit) -> dict[str, Any]:
    """The result row of one R fit (its FIT line, parsed)."""
    if fit.error is not None:
        return score(method, data, None, None, fit.error, fit.wall, fit.cpu)
    flags = np.zeros(data.y.size, dtype=bool)
    flags[fit.flagged] = True
    coef = fit.coef
    if coef.size != data.X.shape[1] + 1 or not np.all(np.isfinite(coef)):
        shown = ",".join(f"{c:.17g}" for c in coef)[:60]
        error = f"coefficients not finite or not p + 1 of them: {shown}"
        return score(method, data, None, None, error, fit.wall, fit.cpu)
    prediction = coef[0] + data.X_test @ coef[1:]
    return score(method, data, flags, prediction, None, fit.wall, fit.cpu)


def _run_r_batch(
    rscript: str, batch: list[Spec], paths: dict[Spec, Path], bar: tqdm
) -> list[dict[str, Any]]:
    """One Rscript process on a batch; each set's rows are cached as soon as both fits ended."""
    rows: list[dict[str, Any]] = []
    names: dict[str, tuple[Spec, MaskingData]] = {}
    for index, spec in enumerate(batch):
        names[f"set{index:05d}"] = (spec, generate(spec))

    def done(name: str, fits: dict[str, RFit]) -> None:
        spec, data = names[name]
        finished = [{**spec.key(), **_r_row(R_METHODS[m], data, fits[m])} for m in R_METHODS]
        atomic_write(paths[spec], json.dumps(finished))
        rows.extend(finished)
        bar.update(1)

    fits, failure = run_robustbase_batch(
        {name: (data.X, data.y) for name, (_, data) in names.items()},
        timeout=120.0 + sum(60.0 + spec.n / 100 for spec in batch),
        on_done=done,
        rscript=rscript,
        prefix="bench_masking_",
    )
    missing = [name for name in names if len(fits.get(name, {})) < len(R_METHODS)]
    for name in missing:  # not cached: a rerun tries again
        spec, data = names[name]
        for method in R_METHODS.values():
            rows.append({**spec.key(), **score(method, data, None, None, failure, 0.0, 0.0)})
        bar.update(1)
    return rows


def run_robustbase(
    specs: Sequence[Spec], cache_dir: Path, fingerprint: str
) -> tuple[list[dict[str, Any]], int]:
    """ltsReg and lmrob on every data set, cached per set, the missing ones through Rscript.

    Parameters
    ----------
    specs : sequence of Spec
        The data sets.
    cache_dir : Path
        Folder of the cached runs.
    fingerprint : str
        Everything besides the key that the fits depend on (the protocol, R's versions).

    Returns
    -------
    rows : list of dict
        Two rows per data set.
    cached : int
        Data sets read from the cache.
    """
    rscript = shutil.which("Rscript")
    assert rscript is not None
    cache_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        spec: cache_path(cache_dir, {**spec.key(), "pass": "robustbase"}, fingerprint, False)
        for spec in specs
    }
    rows: list[dict[str, Any]] = []
    todo = []
    for spec in specs:
        if paths[spec].exists():
            rows += json.loads(paths[spec].read_text())
        else:
            todo.append(spec)
    with tqdm(total=len(specs), desc="robustbase ltsReg + lmrob (R)") as bar:
        bar.update(len(specs) - len(todo))
        for batch in _r_batches(todo):
            rows += _run_r_batch(rscript, batch, paths, bar)
    return rows, len(specs) - len(todo)


# ----------------------------------------------------------------------------------------------
# Running the passes.


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def pass_fingerprints(krr_max_rows: int) -> dict[str, str]:
    """Hashes of what the runs of each pass depend on, besides the data set's key.

    Every pass: the generators' and the scoring's source, the design's constants, numpy's
    version. The scikit-learn pass adds the searches' source, grid and row cap and scipy's and
    scikit-learn's versions; the robustkernel pass its methods' source (:func:`run_cached` adds
    the package's sources); the robustbase pass the R script (R's versions are added when it
    runs). Editing one pass's methods thus recomputes that pass only.

    Parameters
    ----------
    krr_max_rows : int
        The row cap of the KernelRidge searches.

    Returns
    -------
    fingerprints : dict
        sha256 hex digests by pass: "sklearn", "robustkernel", "robustbase".
    """
    data = _digest(
        PROTOCOL_VERSION,
        [inspect.getsource(f) for f in (_stream, Truth, make_truth, _noise, generate, score)],
        [NOISE_SD, STUDENT_DF, N_TEST, VERTICAL_SHIFT, BAD_DISTANCE, BAD_SPREAD, BAD_OFFSET],
        [GOOD_SHARE, GOOD_MIN, GOOD_DISTANCE, GOOD_SPREAD, np.__version__],
    )
    sklearn_pass = _digest(
        data,
        [inspect.getsource(f) for f in (krr_search, _capped, _fit_krr, run_sklearn)],
        [CV_FOLDS, KRR_ALPHAS, GAMMA_FACTORS, krr_max_rows, scipy.__version__],
        sklearn.__version__,
    )
    robustkernel_pass = _digest(
        data,
        [inspect.getsource(f) for f in (timed_fit, run_robustkernel)],
        [inspect.getsource(make) for make in ROBUSTKERNEL_METHODS.values()],
        sklearn.__version__,
    )
    robustbase_pass = _digest(data, R_SCRIPT, inspect.getsource(_r_row))
    return {
        "sklearn": sklearn_pass,
        "robustkernel": robustkernel_pass,
        "robustbase": robustbase_pass,
    }


def _cached_count(
    keys: list[dict[str, Any]], cache_dir: Path, fingerprint: str, library: bool
) -> int:
    """How many of ``keys`` run_cached will read from the cache (its own path rule)."""
    full = fingerprint + (library_fingerprint() if library else "")
    return sum(cache_path(cache_dir, key, full, library=False).exists() for key in keys)


@dataclass
class Outcome:
    """Every result row of a run and where they came from."""

    frame: pd.DataFrame
    r_note: str
    r_ran: bool
    cached: dict[str, str]


def evaluate(
    specs: list[Spec],
    cache_dir: Path,
    krr_max_rows: int,
    n_jobs: int,
    r: tuple[str | None, str],
) -> Outcome:
    """Run (or read from the cache) every pass on every data set.

    Parameters
    ----------
    specs : list of Spec
        The data sets.
    cache_dir : Path
        Folder of the cached runs.
    krr_max_rows : int
        Row cap of the KernelRidge searches.
    n_jobs : int
        Parallel processes of the Python passes (joblib).
    r : (str or None, str)
        :func:`r_version`'s answer: R's versions (None: R is left out) and a note.

    Returns
    -------
    outcome : Outcome
        The rows (data set key, method, metrics) and notes.
    """
    fingerprints = pass_fingerprints(krr_max_rows)
    keys = [spec.key() for spec in specs]
    cached = {}
    passes = [
        ("KernelRidge + GridSearchCV", "sklearn", partial(run_sklearn, krr_max_rows=krr_max_rows)),
        ("robustkernel", "robustkernel", run_robustkernel),
    ]
    frames = []
    for label, folder, runner in passes:
        library = folder == "robustkernel"  # only these runs depend on the package's sources
        hits = _cached_count(keys, cache_dir / folder, fingerprints[folder], library)
        frames.append(
            run_cached(
                runner,
                keys,
                cache_dir / folder,
                fingerprint=fingerprints[folder],
                n_jobs=n_jobs,
                description=label,
                library=library,
            )
        )
        cached[label] = f"{hits} of {len(keys)}"
    version, r_note = r
    if version is not None:
        rows, hits = run_robustbase(
            specs, cache_dir / "robustbase", fingerprints["robustbase"] + version
        )
        frames.append(pd.DataFrame(rows))
        cached["robustbase"] = f"{hits} of {len(keys)}"
    frame = pd.concat(frames, ignore_index=True)
    return Outcome(frame, r_note, version is not None, cached)


# ----------------------------------------------------------------------------------------------
# Tables.


def with_ratios(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of the methods with ``ratio`` = RMSE / the oracle's RMSE on the same data set.

    Parameters
    ----------
    frame : DataFrame
        Every result row (the oracle's included).

    Returns
    -------
    frame : DataFrame
        The methods' rows (the oracle's dropped) with ``oracle_rmse`` and ``ratio``.
    """
    oracle = frame.loc[frame["method"] == ORACLE, [*KEY_COLUMNS, "rmse"]]
    oracle = oracle.rename(columns={"rmse": "oracle_rmse"})
    methods = frame.loc[frame["method"] != ORACLE]
    merged = methods.merge(oracle, on=KEY_COLUMNS, how="left")
    merged["ratio"] = merged["rmse"] / merged["oracle_rmse"]
    merged["ok"] = merged["error"].isna()
    return merged


def _fmt(value: float, digits: int = 2) -> str:
    return "-" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def _pct(value: float) -> str:
    return "-" if value is None or not np.isfinite(value) else f"{100 * value:.1f}"


def _median(series: pd.Series) -> float:
    series = series.dropna()
    return float(series.median()) if len(series) else float("nan")


def _mean(series: pd.Series) -> float:
    series = series.dropna()
    return float(series.mean()) if len(series) else float("nan")


def _p90(series: pd.Series) -> float:
    series = series.dropna()
    return float(series.quantile(0.9)) if len(series) else float("nan")


def _methods(frame: pd.DataFrame) -> list[str]:
    present = set(frame["method"])
    return [method for method in METHOD_ORDER if method in present]


def _label(method: str, kernel: str) -> str:
    return f"{method} (kernel={kernel!r})" if method == DEFAULTS else method


def summary_table(frame: pd.DataFrame, kernel: str) -> pd.DataFrame:
    """Table (a): per method and truth, the contaminated sets.

    Parameters
    ----------
    frame : DataFrame
        :func:`with_ratios`'s rows.
    kernel : str
        The defaults' kernel, for the label.

    Returns
    -------
    table : DataFrame
        Fits (errors), median recall and precision, mean good leverage flagged (%), median and
        90th percentile of RMSE / oracle, mean fit wall and CPU seconds.
    """
    dirty = frame[frame["kind"] != CLEAN]
    rows = []
    for method in _methods(dirty):
        for truth in (*TRUTHS, "both"):
            part = dirty[
                (dirty["method"] == method) & ((dirty["truth"] == truth) | (truth == "both"))
            ]
            ok = part[part["ok"]]
            flags = method not in FLAGLESS
            rows.append(
                {
                    "method": _label(method, kernel),
                    "truth": truth,
                    "fits (errors)": f"{len(part)} ({int((~part['ok']).sum())})",
                    "median recall": _fmt(_median(ok["recall"])) if flags else "-",
                    "median precision": _fmt(_median(ok["precision"])) if flags else "-",
                    "good leverage flagged, mean %": _pct(_mean(ok["good_flagged"])),
                    "median RMSE / oracle": _fmt(_median(ok["ratio"])),
                    "p90 RMSE / oracle": _fmt(_p90(ok["ratio"])),
                    "mean fit wall s": _fmt(_mean(part["wall"]), 3),
                    "mean fit CPU s": _fmt(_mean(part["cpu"]), 3),
                }
            )
    return pd.DataFrame(rows)


def clean_table(frame: pd.DataFrame, kernel: str) -> pd.DataFrame:
    """Table (b): the clean sets, flagged share and RMSE / KernelRidge + GridSearchCV.

    Parameters
    ----------
    frame : DataFrame
        :func:`with_ratios`'s rows.
    kernel : str
        The defaults' kernel, for the label.

    Returns
    -------
    table : DataFrame
        Per method and truth: mean % flagged and median RMSE ratio, Gaussian and Student-t(3).
    """
    clean = frame[frame["kind"] == CLEAN]
    rows = []
    for method in _methods(clean):
        if method == KRR_ALL:
            continue  # the denominator itself
        for truth in TRUTHS:
            row = {"method": _label(method, kernel), "truth": truth}
            for noise, name in ((GAUSSIAN, "Gaussian"), (STUDENT, "Student-t(3)")):
                part = clean[
                    (clean["method"] == method)
                    & (clean["truth"] == truth)
                    & (clean["noise"] == noise)
                ]
                ok = part[part["ok"]]
                errors = int((~part["ok"]).sum())
                suffix = f" ({errors} errors)" if errors else ""
                row[f"% flagged, {name}"] = _pct(_mean(ok["flagged_share"])) + suffix
                row[f"median RMSE / KRR+GSCV, {name}"] = _fmt(_median(ok["ratio"]), 3)
            rows.append(row)
    return pd.DataFrame(rows)


def kind_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Table (c): per truth, kind and rate, the defaults against ltsReg (medians; good leverage:
    mean %).

    Parameters
    ----------
    frame : DataFrame
        :func:`with_ratios`'s rows.

    Returns
    -------
    table : DataFrame
        Recall, precision, good leverage flagged and RMSE / oracle of both methods.
    """
    dirty = frame[(frame["kind"] != CLEAN) & frame["ok"]]
    methods = [(DEFAULTS, "defaults")] + ([(LTS, "ltsReg")] if LTS in set(frame["method"]) else [])
    rows = []
    for truth in TRUTHS:
        for kind in KINDS:
            for rate in RATES:
                row: dict[str, Any] = {"truth": truth, "kind": kind, "rate": f"{rate:.0%}"}
                cell = dirty[
                    (dirty["truth"] == truth)
                    & (dirty["kind"] == kind)
                    & np.isclose(dirty["rate"], rate)
                ]
                for method, short in methods:
                    part = cell[cell["method"] == method]
                    row[f"{short} recall"] = _fmt(_median(part["recall"]))
                    row[f"{short} precision"] = _fmt(_median(part["precision"]))
                    row[f"{short} good lev. %"] = _pct(_mean(part["good_flagged"]))
                    row[f"{short} RMSE/oracle"] = _fmt(_median(part["ratio"]))
                rows.append(row)
    return pd.DataFrame(rows)


def time_table(frame: pd.DataFrame, kernel: str) -> pd.DataFrame:
    """Table (d): median fit wall seconds (and CPU seconds) per method and n, all data sets.

    Parameters
    ----------
    frame : DataFrame
        Every result row (the oracle's included).
    kernel : str
        The defaults' kernel, for the label.

    Returns
    -------
    table : DataFrame
        One row per method, one column per n.
    """
    rows = []
    for method in [*_methods(frame), ORACLE]:
        part = frame[frame["method"] == method]
        if method == KRR_ALL:
            part = part[part["kind"] != CLEAN]  # the clean sets repeat the oracle's fit
        row = {"method": _label(method, kernel)}
        for n in sorted(set(frame["n"])):
            at = part[part["n"] == n]
            row[f"n = {n}"] = f"{_fmt(_median(at['wall']), 3)} ({_fmt(_median(at['cpu']), 3)})"
        rows.append(row)
    return pd.DataFrame(rows)


def targets_table(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The issue's targets for the defaults: measured values and whether each is met.

    A target counts as missed when any fit of the defaults it covers raised, or when it needs R
    and R did not run it is "not checked".

    Parameters
    ----------
    frame : DataFrame
        :func:`with_ratios`'s rows.

    Returns
    -------
    table : DataFrame
        target, measured, met.
    missed : list of str
        The targets missed (or not checked).
    """
    methods = set(frame["method"])

    def part(
        method: str, *, clean: bool, truth: str | None = None, noise: str | None = None
    ) -> pd.DataFrame:
        sub = frame[(frame["method"] == method) & ((frame["kind"] == CLEAN) == clean)]
        if truth is not None:
            sub = sub[sub["truth"] == truth]
        if noise is not None:
            sub = sub[sub["noise"] == noise]
        return sub

    rows: list[dict[str, str]] = []
    missed: list[str] = []

    def add(
        target: str, measured: list[str], checks: list[bool], errors: int, needs: str = ""
    ) -> None:
        if needs and needs not in methods:
            verdict = f"not checked ({needs} did not run)"
        elif errors:
            verdict = f"missed ({errors} fits of the defaults raised)"
        elif checks and all(checks):
            verdict = "met"
        else:
            verdict = "missed" if checks else "not checked (no data)"
        if verdict != "met":
            missed.append(target)
        rows.append({"target": target, "measured": "; ".join(measured), "met": verdict})

    def errors_of(subs: list[pd.DataFrame]) -> int:
        return sum(int((~sub["ok"]).sum()) for sub in subs)

    def percent(value: float) -> str:
        return f"{_fmt(100 * value)} %" if np.isfinite(value) else "-"

    def value_check(
        values: dict[str, float], test: Callable[[float], bool], show: Callable[[float], str] = _fmt
    ) -> tuple[list[str], list[bool]]:
        shown = [f"{truth} {show(value)}" for truth, value in values.items()]
        checks = [bool(np.isfinite(v) and test(v)) for v in values.values()]
        return shown, checks

    subs = {t: part(DEFAULTS, clean=False, truth=t) for t in TRUTHS}
    ok = {t: sub[sub["ok"]] for t, sub in subs.items()}
    errors = errors_of(list(subs.values()))
    shown, checks = value_check(
        {t: _median(ok[t]["recall"]) for t in TRUTHS}, lambda v: v >= TARGET_RECALL
    )
    add(f"median recall >= {TARGET_RECALL}", shown, checks, errors)

    lts = {t: part(LTS, clean=False, truth=t) for t in TRUTHS}
    shown, checks = [], []
    for t in TRUTHS:
        ours = _median(ok[t]["precision"])
        theirs = _median(lts[t].loc[lts[t]["ok"], "precision"]) if LTS in methods else float("nan")
        shown.append(f"{t} {_fmt(ours)} vs ltsReg {_fmt(theirs)}")
        checks.append(bool(np.isfinite(ours) and np.isfinite(theirs) and ours >= theirs))
    add("median precision >= ltsReg's", shown, checks, errors, needs=LTS)

    shown, checks = value_check(
        {t: _mean(ok[t]["good_flagged"]) for t in TRUTHS},
        lambda v: v <= TARGET_GOOD_FLAGGED,
        percent,
    )
    add(
        f"good leverage rows flagged <= {TARGET_GOOD_FLAGGED:.0%} (mean share)",
        shown,
        checks,
        errors,
    )

    nonlinear = ok["nonlinear"]
    median, p90 = _median(nonlinear["ratio"]), _p90(nonlinear["ratio"])
    add(
        f"median RMSE / oracle <= {TARGET_RMSE_NONLINEAR:.2f} on the nonlinear truth, rates "
        f"{RATES[0]:.0%} to {RATES[-1]:.0%}",
        [f"median {_fmt(median)}, p90 {_fmt(p90)}"],
        [bool(np.isfinite(median) and median <= TARGET_RMSE_NONLINEAR)],
        int((~subs["nonlinear"]["ok"]).sum()),
    )

    gauss = {t: part(DEFAULTS, clean=True, truth=t, noise=GAUSSIAN) for t in TRUTHS}
    shown, checks = value_check(
        {t: _mean(gauss[t].loc[gauss[t]["ok"], "flagged_share"]) for t in TRUTHS},
        lambda v: v <= TARGET_CLEAN_FLAGGED,
        percent,
    )
    add(
        f"clean Gaussian data: <= {TARGET_CLEAN_FLAGGED:.0%} of rows flagged (mean share)",
        shown,
        checks,
        errors_of(list(gauss.values())),
    )

    student = {t: part(DEFAULTS, clean=True, truth=t, noise=STUDENT) for t in TRUTHS}
    shown, checks = [], []
    for t in TRUTHS:
        ours = _mean(student[t].loc[student[t]["ok"], "flagged_share"])
        lm = part(LMROB, clean=True, truth=t, noise=STUDENT)
        theirs = _mean(lm.loc[lm["ok"], "flagged_share"]) if LMROB in methods else float("nan")
        shown.append(f"{t} {percent(ours)} vs lmrob {percent(theirs)}")
        checks.append(
            bool(
                np.isfinite(ours) and np.isfinite(theirs) and ours <= TARGET_STUDENT_FACTOR * theirs
            )
        )
    add(
        f"clean Student-t(3) data: flagged share <= {TARGET_STUDENT_FACTOR:g}x lmrob's (means)",
        shown,
        checks,
        errors_of(list(student.values())),
        needs=LMROB,
    )

    shown, checks, subs_clean = [], [], []
    for noise, name in ((GAUSSIAN, "Gaussian"), (STUDENT, "Student-t(3)")):
        for t in TRUTHS:
            sub = part(DEFAULTS, clean=True, truth=t, noise=noise)
            subs_clean.append(sub)
            value = _median(sub.loc[sub["ok"], "ratio"])
            shown.append(f"{t} {name} {_fmt(value, 3)}")
            checks.append(bool(np.isfinite(value) and value <= TARGET_CLEAN_RMSE))
    add(
        f"clean data: median RMSE / KernelRidge+GridSearchCV <= {TARGET_CLEAN_RMSE:.2f}",
        shown,
        checks,
        errors_of(subs_clean),
    )
    return pd.DataFrame(rows), missed


def error_lines(frame: pd.DataFrame, limit: int = 8) -> list[str]:
    """The distinct errors per method with their counts, at most ``limit`` lines.

    Parameters
    ----------
    frame : DataFrame
        Every result row.
    limit : int, default=8
        Most lines.

    Returns
    -------
    lines : list of str
        "method: N x error: message".
    """
    failed = frame[frame["error"].notna()]
    counts = failed.groupby(["method", "error"]).size().sort_values(ascending=False)
    lines = [f"{method}: {count} x error: {error}" for (method, error), count in counts.items()]
    return lines[:limit] + ([f"... and {len(lines) - limit} more"] if len(lines) > limit else [])


# ----------------------------------------------------------------------------------------------
# Main.


def _loads(values: Sequence[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def report(
    outcome: Outcome,
    specs: list[Spec],
    command: str,
    loads: tuple[Sequence[float], Sequence[float]],
    wall: float,
    cpu: float,
    krr_max_rows: int,
) -> str:
    """The Markdown section: header, design, targets and the four tables.

    Parameters
    ----------
    outcome : Outcome
        The rows and notes of :func:`evaluate`.
    specs : list of Spec
        The data sets.
    command : str
        The command line.
    loads : pair of sequences of float
        Load averages before and after.
    wall, cpu : float
        Seconds of the whole run (CPU: this process and its children, R included).
    krr_max_rows : int
        Row cap of the KernelRidge searches.

    Returns
    -------
    body : str
        Starts with :data:`SECTION`.
    """
    frame = with_ratios(outcome.frame)
    kernel = default_kernel()
    targets, missed = targets_table(frame)
    sizes = sorted({s.n for s in specs})
    features = sorted({s.p for s in specs})
    seeds = max(s.seed for s in specs) + 1
    capped = [n for n in sizes if n > krr_max_rows]
    r_text = (
        f"R ({outcome.r_note}) through `Rscript`, one process per batch of at most "
        f"{R_BATCH_ROWS} training rows: `ltsReg(X, y)` after `set.seed(0)`, flags `lts.wt == 0`; "
        "`lmrob(y ~ X)` after `set.seed(0)`, flags `rweights < 0.1 / n`; test predictions from "
        "their coefficients; times taken inside R around each fit."
        if outcome.r_ran
        else f"R's robustbase did not run ({outcome.r_note}); to have it: `{R_INSTALL}`."
    )
    cap_text = (
        f" At n = {', '.join(map(str, capped))} both KernelRidge searches were fitted on a "
        f"seeded random subset of {krr_max_rows} of their rows (`--krr-max-rows`): the oracle "
        "is then weaker than one on every clean row, and RMSE / oracle is flattered there."
        if capped
        else ""
    )
    lines = [
        SECTION,
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {cpu_description()}, Python {platform.python_version()}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}, scikit-learn {sklearn.__version__}, "
        f"robustkernel {robustkernel.__version__}"
        + (f", {outcome.r_note}" if outcome.r_ran else "")
        + ". One BLAS / OpenMP thread.  ",
        f"Load average before: {_loads(loads[0])}; after: {_loads(loads[1])}. Wall time "
        f"{wall:.0f} s, CPU time {cpu:.0f} s (this process and R). Data sets read from the cache "
        "(their times are those of the run that computed them): "
        + "; ".join(f"{label} {count}" for label, count in outcome.cached.items())
        + ".",
        "",
        f"Design (see the docstring of `benchmarks/bench_masking.py`): {len(specs)} data sets, "
        f"n in {sizes}, p in {features}, seeds 0-{seeds - 1}; x ~ N(0, I_p); truths linear "
        "(y = x.beta) and nonlinear (y = sin(x.w) + (x.v)^2 / 2), random unit beta, w, v; "
        f"noise N(0, {NOISE_SD}^2) (clean variants: Gaussian and {NOISE_SD} x Student-t(3)); "
        f"contamination at {', '.join(f'{r:.0%}' for r in RATES)}: vertical "
        "(y += U(10, 15) sd(y)), bad leverage (a tight cluster at distance U(5, 10) along a "
        "random direction, one constant target U(5, 10) sd(y) off the truth there), mixed "
        "(half each); every contaminated set has good leverage rows (max(2, 3 % of n), "
        "along an orthogonal direction at distance U(5, 10) for the linear truth, U(2, 3) "
        "for the nonlinear one, targets f(x) + noise). Test: 2000 clean rows. The oracle: "
        "KernelRidge + 5-fold GridSearchCV (linear and rbf kernels, alpha 1e-3..10, gamma "
        f"(0.25..4) / p) on the clean and good leverage rows.{cap_text} RMSE against the "
        f"noisy test targets. {r_text} Methods with `random_state` get the data set's seed.",
        "",
        f"Targets of the issue for `SubquantileKernelRegressor()` (default kernel {kernel!r}); "
        "recall, precision, good leverage and RMSE on the contaminated sets, per truth:",
        "",
        markdown_table(targets),
        (
            "Missed or not checked: " + "; ".join(missed) + "."
            if missed
            else "All targets met on this configuration."
        ),
        "",
        "(a) Contaminated sets (all kinds and rates), per method and truth. Precision: a method "
        "that flags nothing counts 0. KernelRidge + GridSearchCV flags nothing.",
        "",
        markdown_table(summary_table(frame, kernel)),
        "(b) Clean sets (no contamination, no leverage rows): mean % of rows flagged, and median "
        "RMSE / KernelRidge + GridSearchCV (on clean data the oracle and the all-rows search are "
        "the same fit).",
        "",
        markdown_table(clean_table(frame, kernel)),
        "(c) The defaults against ltsReg per contamination kind and rate (medians over n, p and "
        "seeds; good leverage: mean % flagged).",
        "",
        markdown_table(kind_table(frame)),
        "(d) Fit seconds per n: median wall (median CPU) over every data set of that n; the "
        "oracle's and the all-rows search's include the grid search.",
        "",
        markdown_table(time_table(outcome.frame, kernel)),
    ]
    errors = error_lines(outcome.frame)
    if errors:
        lines += ["Errors:", "", *(f"* {line}" for line in errors), ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the study and print (and, unless ``--no-write``, write) its tables.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    status : int
        0.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=SEEDS, help="seeds 0 .. SEEDS - 1")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="n values")
    parser.add_argument("--features", type=int, nargs="+", default=list(FEATURES), help="p values")
    parser.add_argument("--large", action="store_true", help=f"add n = {LARGE_SIZE}")
    parser.add_argument(
        "--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="contamination kinds"
    )
    parser.add_argument(
        "--rates", type=float, nargs="+", default=list(RATES), help="contamination rates"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: n = 100, p in {2, 5}, one seed (overrides --sizes, --features, "
        "--seeds; writes neither BENCHMARKS.md nor the CSV)",
    )
    parser.add_argument("--krr-max-rows", type=int, default=KRR_MAX_ROWS)
    parser.add_argument("--n-jobs", type=int, default=1, help="processes of the Python passes")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--no-cache", action="store_true", help="recompute every run")
    parser.add_argument(
        "--no-write", action="store_true", help="write neither BENCHMARKS.md nor the CSV"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--csv", type=Path, default=DEFAULT_CSV)
    parser.add_argument(
        "--json", type=Path, default=None, help="also write every run's row (the scorecard)"
    )
    args = parser.parse_args(argv)
    sizes, features, seeds = args.sizes, args.features, args.seeds
    if args.quick:
        sizes, features, seeds = list(QUICK["sizes"]), list(QUICK["features"]), QUICK["seeds"]
    if args.large and LARGE_SIZE not in sizes:
        sizes = [*sizes, LARGE_SIZE]
    if seeds < 1 or min(sizes) < 20 or min(features) < 1:
        parser.error("need --seeds >= 1, every n >= 20 and every p >= 1")
    specs = build_specs(sizes, features, seeds, args.kinds, args.rates)
    load_before = os.getloadavg()
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    version, r_note = r_version()
    if version is None:
        print(
            f"note: R's robustbase methods left out ({r_note}); to have them: {R_INSTALL}",
            file=sys.stderr,
        )
    with tempfile.TemporaryDirectory(prefix="bench_masking_cache_") as scratch:
        cache_dir = Path(scratch) if args.no_cache else args.cache_dir
        outcome = evaluate(specs, cache_dir, args.krr_max_rows, args.n_jobs, (version, r_note))
    wall, cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
    command = "python benchmarks/bench_masking.py " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    body = report(
        outcome,
        specs,
        command.strip(),
        (load_before, os.getloadavg()),
        wall,
        cpu,
        args.krr_max_rows,
    )
    print(body)
    if args.json is not None:
        frame = with_ratios(outcome.frame)
        targets, _ = targets_table(frame)
        payload = {
            # pandas writes NaN as null and numpy scalars as plain numbers
            "rows": json.loads(frame.to_json(orient="records", double_precision=15)),
            "targets": targets.to_dict(orient="records"),
            "default_kernel": default_kernel(),
            "r_note": outcome.r_note,
            "r_ran": outcome.r_ran,
            "cached": outcome.cached,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(args.json, json.dumps(payload, allow_nan=False))
    if not (args.no_write or args.quick):
        replace_markdown_section(args.out, SECTION, body)
        args.csv.parent.mkdir(parents=True, exist_ok=True)
        with_ratios(outcome.frame).to_csv(args.csv, index=False)
        print(f"wrote the section {SECTION[3:]!r} of {args.out} and every run to {args.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
