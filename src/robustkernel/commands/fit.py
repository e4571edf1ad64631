"""``robustkernel fit DATA.csv --target COL --out DIR``: a Subquantile fit of a CSV table.

The features are scaled with a :class:`~sklearn.preprocessing.RobustScaler` (median and
interquartile range, which corrupted rows barely move) inside the saved pipeline, so the model
file predicts from raw feature values. DIR receives the model file, ``outliers.csv``,
``predictions.csv``, ``report.md`` and its PNG figures. The model file is ``model.skops``
(skops' format, safe to load) when skops is installed, else ``model.joblib``, a pickle that
``robustkernel predict`` loads only with ``--trust-pickle``; the output and the report say which.

This module holds the command's options and imports nothing heavy, so that ``robustkernel
--help`` starts at once; the fit itself (:mod:`._fit_run`, with the estimators, pandas and
matplotlib) is imported when the command runs. A seed (``--random-state``, 0 by default) makes
two runs of one command give the same fit.
"""

from __future__ import annotations

import argparse

from ._common import add_table_arguments, guarded

PROG = "robustkernel fit"
# The estimators' choices and sizes, written out so that the parser imports no estimator;
# tests/test_cli_tables.py checks them against robustkernel.subquantile and its kernels.
KERNELS = (
    "additive_chi2", "chi2", "cosine", "laplacian", "linear", "poly", "polynomial", "rbf",
    "sigmoid",
)  # fmt: skip
SOLVERS = ("alternating", "gd", "momentum", "nesterov")
EXACT_ROWS = 4000
DEFAULT_RANDOM_STATE = 0
RANDOM_STATE_HELP = (
    "seed of everything random in the fit (default 0, so that two runs of one command give the "
    "same result): the rows the high-breakdown start samples (tables beyond 1000 rows) and its "
    "random starts, the rows that choose alpha and gamma on large tables, the Nystroem "
    "landmarks (--n-components) and the rows a Parquet fit samples; another seed can flag "
    "other rows where the data leave the choice open"
)


def epsilon_argument(text: str) -> float | str:
    """``auto`` or a fraction in [0, 0.5)."""
    if text == "auto":
        return text
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number, got {text!r}") from error
    if not 0.0 <= value < 0.5:
        raise argparse.ArgumentTypeError(f"epsilon must be in [0, 0.5), got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from error
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive finite number, got {value}")
    return value


def positive_float_or_auto(text: str) -> float | str:
    """``auto`` or a finite number > 0."""
    return text if text == "auto" else positive_float(text)


def _integer(text: str, smallest: int) -> int:
    """An integer >= ``smallest``."""
    try:
        value = int(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from error
    if value < smallest:
        raise argparse.ArgumentTypeError(f"expected an integer >= {smallest}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    return _integer(text, 1)


def positive_int_or_auto(text: str) -> int | str:
    """``auto`` or an integer >= 1."""
    return text if text == "auto" else positive_int(text)


def seed_argument(text: str) -> int:
    """A seed: an integer in [0, 2**32 - 1] (what NumPy's generators take)."""
    value = _integer(text, 0)
    if value > 2**32 - 1:
        raise argparse.ArgumentTypeError(f"expected an integer below 2**32, got {value}")
    return value


def _run(args: argparse.Namespace) -> int:
    from ._fit_run import run  # the estimators, pandas, matplotlib: imported when fit runs

    return run(args)


def _add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the Subquantile estimator: epsilon, kernel, alpha, gamma, solver, the
    number of features and the seed."""
    parser.add_argument(
        "--epsilon",
        type=epsilon_argument,
        default="auto",
        help="fraction of rows to trim, in [0, 0.5), or 'auto' to estimate it (default)",
    )
    parser.add_argument(
        "--kernel",
        choices=["auto", *KERNELS],
        default="auto",
        help=(
            "'auto' (default): for a regression of any size, a high-breakdown start (kernel "
            "least trimmed squares from the linear kernel, an adaptive cutoff, the linear, "
            "degree-2 or cubic polynomial or rbf kernel chosen on the rows kept; on a sample "
            "of 1000 "
            "rows for larger tables, features and Parquet); rbf for classification"
        ),
    )
    parser.add_argument(
        "--alpha",
        type=positive_float_or_auto,
        default="auto",
        help="ridge penalty, or 'auto' to choose it on the data (default)",
    )
    parser.add_argument(
        "--gamma",
        type=positive_float_or_auto,
        default="auto",
        help="kernel gamma, or 'auto' to choose it on the data (default)",
    )
    parser.add_argument("--solver", choices=SOLVERS, default="alternating")
    parser.add_argument(
        "--n-components",
        type=positive_int_or_auto,
        default="auto",
        metavar="N",
        help=(
            "fit on N approximate kernel features (Nystroem) instead of the exact n x n kernel "
            "matrix: memory and time linear in the rows, for large tables; 'auto' (default): "
            f"the exact kernel up to {EXACT_ROWS} rows, about 5 sqrt(rows) features beyond"
        ),
    )
    parser.add_argument(
        "--random-state",
        type=seed_argument,
        default=DEFAULT_RANDOM_STATE,
        metavar="SEED",
        help=RANDOM_STATE_HELP,
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``fit`` subcommand."""
    parser = subparsers.add_parser(
        "fit",
        help="fit a Subquantile model to a CSV table and report the suspect rows",
        description=(
            "Fit a Subquantile kernel model to DATA.csv (comma, semicolon, tab, | or space "
            "delimited; sniffed) and "
            "write the model (model.skops; model.joblib, a pickle, if skops is not installed), "
            "outliers.csv, predictions.csv and report.md into DIR, which must not exist yet (or "
            "be empty). Feature columns must be numeric; ISO dates (YYYY-MM-DD) are fitted as "
            "days since their first date, and the file's index column (R's write.csv and "
            "pandas' to_csv write one) is left out. A Parquet file or folder (DATA.parquet, "
            "needs the dask extra and --n-components) is fitted on Dask as passes over its row "
            "groups and gives outliers.parquet and predictions.parquet."
        ),
    )
    parser.add_argument(
        "data", metavar="DATA.csv", help="the table (header line first), or Parquet file(s)"
    )
    parser.add_argument("--target", required=True, help="name of the target column")
    parser.add_argument(
        "--task",
        choices=("regression", "classification"),
        default="regression",
        help="regression (default; a numeric target) or classification (class labels: text, "
        "or a few whole numbers such as 0 / 1)",
    )
    _add_model_arguments(parser)
    parser.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="Dask scheduler (tcp://HOST:8786) to fit a Parquet table on (default: local threads)",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder (new)")
    parser.add_argument(
        "--known-outliers",
        default=None,
        metavar="COLUMN",
        help=(
            "a column of 0 / 1 (or true / false) marking rows known to be wrong, e.g. labels "
            "found flipped in an audit: not a feature; the report gives the precision and "
            "recall of the flagged rows against it (CSV tables)"
        ),
    )
    add_table_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar or messages")
    parser.set_defaults(handler=guarded(PROG, _run))
