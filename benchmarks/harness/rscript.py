"""R's robustbase through ``Rscript``: ``ltsReg`` and ``lmrob`` on tables written as CSV files.

One ``Rscript --vanilla`` process fits a batch of tables (each a CSV in a temporary folder,
features ``x1 .. xp`` then the target ``y``). Per table and method it prints one line,

    FIT <tab> <table> <tab> <method> <tab> <elapsed s> <tab> <cpu s> <tab> ok <tab>
        <1-based flagged rows> <tab> <coefficients>

or ``... <tab> error <tab> <message> <tab>`` (coefficients: intercept first, comma-separated),
which :func:`parse_fit_line` reads. The fits, each after ``set.seed(0)``:

* ``ltsReg(X, y)``: flags the rows its reweighting drops, ``lts.wt == 0``;
* ``lmrob(y ~ X)``: flags the rows with robustness weight below robustbase's own
  ``eps.outlier = 0.1 / n``.

Times are taken inside R around each fit (``proc.time``). Without ``Rscript`` or robustbase,
:func:`r_version` says why; on Debian or Ubuntu: ``apt-get install r-base-core
r-cran-robustbase`` (:data:`R_INSTALL`).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "R_INSTALL",
    "R_METHODS",
    "R_SCRIPT",
    "R_VERSION_SCRIPT",
    "RFit",
    "parse_fit_line",
    "parse_numbers",
    "r_version",
    "run_robustbase_batch",
    "write_table_csv",
]

R_INSTALL = "apt-get install r-base-core r-cran-robustbase"
R_METHODS = ("ltsReg", "lmrob")  # the methods of R_SCRIPT, in the order it fits them

R_VERSION_SCRIPT = (
    'if (!requireNamespace("robustbase", quietly = TRUE)) quit(save = "no", status = 3); '
    'cat("VERSION", R.version.string, format(packageVersion("robustbase")), sep = "\\t"); '
    'cat("\\n")'
)

# Argument: a file listing CSV paths (last column y). Lines out, per fit:
# "FIT\t<set>\t<method>\t<elapsed s>\t<cpu s>\tok\t<1-based flagged rows>\t<coefficients>" or
# "FIT\t<set>\t<method>\t<elapsed s>\t<cpu s>\terror\t<message>\t" (coefficients: intercept
# first, comma-separated).
R_SCRIPT = r"""
suppressPackageStartupMessages(library("robustbase"))
report <- function(name, method, fit) {
  t0 <- proc.time()
  res <- tryCatch(suppressWarnings(fit()), error = function(e) list(error = conditionMessage(e)))
  dt <- proc.time() - t0
  cpu <- dt[["user.self"]] + dt[["sys.self"]]
  status <- if (is.null(res$error)) {
    paste("ok", paste(res$rows, collapse = ","),
          paste(sprintf("%.17g", res$coef), collapse = ","), sep = "\t")
  } else {
    paste0("error\t", gsub("[\t\r\n]+", " ", res$error), "\t")
  }
  cat("FIT", name, method, sprintf("%.6f", dt[["elapsed"]]), sprintf("%.6f", cpu), status,
      sep = "\t")
  cat("\n")
  flush(stdout())
}
for (path in readLines(commandArgs(trailingOnly = TRUE)[1])) {
  name <- sub("\\.csv$", "", basename(path))
  d <- read.csv(path)
  X <- as.matrix(d[, -ncol(d), drop = FALSE])
  y <- d[[ncol(d)]]
  n <- length(y)
  report(name, "ltsReg", function() {
    set.seed(0)
    fit <- ltsReg(X, y)
    list(rows = which(fit$lts.wt == 0), coef = fit$coefficients)
  })
  report(name, "lmrob", function() {
    set.seed(0)
    fit <- lmrob(y ~ X)
    list(rows = which(fit$rweights < 0.1 / n), coef = coef(fit))
  })
}
"""


def r_version() -> tuple[str | None, str]:
    """R's and robustbase's versions, or why they are not available.

    Returns
    -------
    version : str or None
        "R version ..., robustbase x.y-z"; None when Rscript or robustbase is missing.
    note : str
        The version, or the reason.
    """
    rscript = shutil.which("Rscript")
    if rscript is None:
        return None, "Rscript is not on PATH"
    try:
        done = subprocess.run(
            [rscript, "--vanilla", "-e", R_VERSION_SCRIPT],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        reason = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        return None, f"Rscript failed: {reason[:100]}"
    for line in done.stdout.splitlines():
        fields = line.split("\t")
        if fields[0] == "VERSION" and len(fields) == 3:
            version = f"{fields[1]}, robustbase {fields[2]}"
            return version, version
    return None, "robustbase is not installed in R"


def parse_numbers(text: str) -> np.ndarray:
    """The comma-separated numbers of an R output field ("NA" and "NaN" read as NaN).

    Parameters
    ----------
    text : str
        E.g. ``"1,4,17"`` or ``"0.5,NA,-2"``; empty fields are skipped.

    Returns
    -------
    values : ndarray of float
        The numbers (empty for an empty text).
    """
    values = [float("nan") if v in ("NA", "NaN") else float(v) for v in text.split(",") if v]
    return np.asarray(values, dtype=float)


@dataclass(frozen=True)
class RFit:
    """One R fit of one table, as read from its FIT line.

    Attributes
    ----------
    method : str
        "ltsReg" or "lmrob".
    wall, cpu : float
        Elapsed and CPU seconds of the fit, taken inside R.
    error : str or None
        R's error message (None when the fit succeeded).
    flagged : ndarray of int
        The flagged rows, 0-based (empty on error).
    coef : ndarray of float
        The coefficients, intercept first (empty on error).
    """

    method: str
    wall: float
    cpu: float
    error: str | None = None
    flagged: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    coef: np.ndarray = field(default_factory=lambda: np.zeros(0))


def parse_fit_line(line: str) -> tuple[str, RFit] | None:
    """The table name and the fit of one line of :data:`R_SCRIPT`'s output.

    Parameters
    ----------
    line : str
        A line of Rscript's standard output (a trailing newline is ignored).

    Returns
    -------
    parsed : (str, RFit) or None
        None for a line that is not a well-formed FIT line.
    """
    fields = line.rstrip("\r\n").split("\t")
    if fields[0] != "FIT" or len(fields) != 8:
        return None
    _, name, method, wall, cpu, status, payload, coefficients = fields
    try:
        seconds = float(wall), float(cpu)
        if status != "ok":
            return name, RFit(method, *seconds, error=payload or "failed in R")
        flagged = parse_numbers(payload).astype(int) - 1
        return name, RFit(method, *seconds, flagged=flagged, coef=parse_numbers(coefficients))
    except ValueError:
        return None


def write_table_csv(path: Path, X: np.ndarray, y: np.ndarray) -> None:
    """Write a table as a CSV file that R reads back exactly (17 significant digits).

    Parameters
    ----------
    path : Path
        The file.
    X : ndarray of shape (n, p)
        Features, written as columns ``x1 .. xp``.
    y : ndarray of shape (n,)
        Target, the last column ``y``.
    """
    columns = {f"x{j + 1}": X[:, j] for j in range(X.shape[1])}
    pd.DataFrame({**columns, "y": y}).to_csv(path, index=False, float_format="%.17g")


def run_robustbase_batch(
    tables: Mapping[str, tuple[np.ndarray, np.ndarray]],
    *,
    timeout: float,
    on_done: Callable[[str, dict[str, RFit]], None] | None = None,
    rscript: str | None = None,
    prefix: str = "robustbase_",
) -> tuple[dict[str, dict[str, RFit]], str | None]:
    """ltsReg and lmrob on every table, in one Rscript process.

    Parameters
    ----------
    tables : mapping of str to (X, y)
        The tables by name (a name must be usable as a file name: letters, digits, ``_``).
    timeout : float
        Seconds before the process is killed (the tables not finished by then get no fits).
    on_done : callable, optional
        Called as ``on_done(name, fits)`` as soon as both fits of a table have been read (e.g.
        to cache them, or to show progress).
    rscript : str, optional
        Path of ``Rscript`` (default: the one on PATH).
    prefix : str, default="robustbase_"
        Prefix of the temporary folder.

    Returns
    -------
    fits : dict
        ``fits[name][method]``: the :class:`RFit` of every fit read; a table that R did not
        finish has fewer than ``len(R_METHODS)`` entries (or none).
    failure : str or None
        Why some tables are unfinished ("Rscript exited with status N: <last stderr line>");
        None when every table has both fits.

    Raises
    ------
    FileNotFoundError
        When no ``rscript`` is given and none is on PATH.
    """
    rscript = rscript or shutil.which("Rscript")
    if rscript is None:
        raise FileNotFoundError("Rscript is not on PATH")
    fits: dict[str, dict[str, RFit]] = {}
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        folder = Path(tmp)
        (folder / "robustbase.R").write_text(R_SCRIPT)
        for name, (X, y) in tables.items():
            write_table_csv(folder / f"{name}.csv", np.asarray(X, float), np.asarray(y, float))
        (folder / "manifest.txt").write_text("".join(f"{folder / name}.csv\n" for name in tables))
        with open(folder / "stderr.txt", "w") as stderr:
            process = subprocess.Popen(
                [rscript, "--vanilla", str(folder / "robustbase.R"), str(folder / "manifest.txt")],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
            timer = threading.Timer(timeout, process.kill)
            timer.start()
            try:
                assert process.stdout is not None
                for line in process.stdout:
                    parsed = parse_fit_line(line)
                    if parsed is None or parsed[0] not in tables:
                        continue
                    name, fit = parsed
                    fits.setdefault(name, {})[fit.method] = fit
                    if len(fits[name]) == len(R_METHODS) and on_done is not None:
                        on_done(name, fits[name])
                returncode = process.wait()
            finally:
                timer.cancel()
                if process.poll() is None:
                    process.kill()
                    process.wait()
        tail = (folder / "stderr.txt").read_text(errors="replace").strip().splitlines()
    if all(len(fits.get(name, {})) == len(R_METHODS) for name in tables):
        return fits, None
    return fits, f"Rscript exited with status {returncode}" + (f": {tail[-1]}" if tail else "")
