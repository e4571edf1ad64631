"""``robustkernel fit DATA.csv --target COL --out DIR``: a Subquantile fit of a CSV table.

The features are scaled with a :class:`~sklearn.preprocessing.RobustScaler` (median and
interquartile range, which corrupted rows barely move) inside the saved pipeline, so the model
file predicts from raw feature values. DIR receives the model file, ``outliers.csv``,
``predictions.csv``, ``report.md`` and its PNG figures. The model file is ``model.skops``
(skops' format, safe to load) when skops is installed, else ``model.joblib``, a pickle that
``robustkernel predict`` loads only with ``--trust-pickle``; the output and the report say which.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import RobustScaler

from .._kernel_model.kernels import KERNELS
from ..corruption import outlier_precision_recall
from ..persistence import save_model, skops_available
from ..subquantile import (
    EXACT_ROWS,
    SOLVERS,
    SubquantileKernelClassifier,
    SubquantileKernelRegressor,
)
from . import _fit_report as report
from ._common import atomic_folder, guarded, prediction_frame, progress
from ._csv_output import write_csv
from ._parquet_fit import dask_client, fit_parquet, is_parquet
from ._tabular import DataError, Table, known_outliers, read_csv, training_table

PROG = "robustkernel fit"
SKOPS_MODEL_FILE = "model.skops"
PICKLE_MODEL_FILE = "model.joblib"
PICKLE_NOTE = (
    "skops is not installed, so the model was saved as model.joblib, a pickle: 'robustkernel "
    "predict' loads it only with --trust-pickle (pip install 'robustkernel[skops]' and refit "
    "for the safe model.skops)"
)
N_MOST_SUSPECT = 10


def model_file() -> str:
    """The model file name: ``model.skops`` when skops is installed, else ``model.joblib``."""
    return SKOPS_MODEL_FILE if skops_available() else PICKLE_MODEL_FILE


def model_file_description(name: str) -> str:
    """The report's line on the model file ``name``: its format and whether it loads safely."""
    if name == SKOPS_MODEL_FILE:
        return f"{name} (skops format, safe to load)"
    return f"{name} ({PICKLE_NOTE})"


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


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from error
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def positive_int_or_auto(text: str) -> int | str:
    """``auto`` or an integer >= 1."""
    return text if text == "auto" else positive_int(text)


def model_kernel(args: argparse.Namespace) -> str:
    """The estimator's kernel: ``--kernel``, where "auto" (the default) is the high-breakdown
    start of ``SubquantileKernelRegressor(kernel="auto")`` for a regression of any size (on a
    sample of rows for large tables, features and Parquet), and rbf for a classification."""
    if args.kernel == "auto" and args.task == "classification":
        return "rbf"
    return args.kernel


def model_description(args: argparse.Namespace, subq: Any) -> str:
    """The fitted model's space: the exact kernel, or its features and where their number
    came from."""
    if subq.n_components_ is None:
        return "exact kernel"
    source = "--n-components" if args.n_components != "auto" else "chosen for the rows"
    return f"{subq.n_components_} Nystroem features ({source})"


def build_model(args: argparse.Namespace) -> Pipeline:
    """The robust scaler and the Subquantile estimator the arguments describe."""
    estimator = (
        SubquantileKernelClassifier if args.task == "classification" else SubquantileKernelRegressor
    )
    subq = estimator(
        epsilon=args.epsilon,
        alpha=args.alpha,
        kernel=model_kernel(args),
        gamma=args.gamma,
        solver=args.solver,
        n_components=args.n_components,
    )
    return Pipeline([("scale", RobustScaler()), ("model", subq)])


def _statistics(table: Table, model: Pipeline, seconds: float) -> dict[str, Any]:
    observed, predicted = np.asarray(table.y), np.asarray(model.predict(table.X))
    return {
        "rows used": len(table.rows),
        "rows dropped (missing values)": table.n_dropped,
        "features": table.X.shape[1],
        **report.fit_statistics(model[-1], observed, predicted, seconds),
    }


def _predictions(table: Table, model: Pipeline) -> pd.DataFrame:
    frame = prediction_frame(model, table)
    frame.insert(1, "observed", table.y.to_numpy())
    return frame


def _free_name(name: str, taken: pd.Index) -> str:
    """``name``, with leading underscores added until no column in ``taken`` has it."""
    while name in taken:
        name = "_" + name
    return name


def outlier_table(table: Table, model: Pipeline) -> pd.DataFrame:
    """row, outlier_score and flagged, then every column of the file (whose names win: an added
    column that would repeat one gets a leading underscore)."""
    subq = model[-1]
    original = table.original.reset_index(drop=True)
    added = {
        "row": table.rows,
        "outlier_score": subq.outlier_scores_,
        "flagged": ~subq.inlier_mask_,
    }
    scores = pd.DataFrame({_free_name(name, original.columns): v for name, v in added.items()})
    return pd.concat([scores, original], axis=1)


def known_outlier_section(column: str, known: np.ndarray, subq: Any) -> str:
    """The report's comparison of the flagged rows with the rows ``known`` (the column
    ``column``) to be wrong: counts, precision and recall."""
    flagged = ~subq.inlier_mask_
    precision, recall = outlier_precision_recall(subq.inlier_mask_, np.flatnonzero(known))
    values = {
        "rows known to be wrong": int(known.sum()),
        "rows flagged": int(flagged.sum()),
        "flagged and known": int(np.sum(flagged & known)),
        "precision (flagged rows that are known)": float(precision),
        "recall (known rows that are flagged)": float(recall),
    }
    return (
        f"The column {column!r} marks the rows known to be wrong; it is not a feature.\n\n"
        + report.key_value_table(values)
    )


def _report(
    folder: Path, args: argparse.Namespace, table: Table, model: Pipeline, seconds: float
) -> None:
    subq = model[-1]
    report.plot_outlier_scores(subq.outlier_scores_, subq.threshold_, folder / "outliers.png")
    most_suspect = np.argsort(-subq.outlier_scores_, kind="stable")[:N_MOST_SUSPECT]
    sections = {
        "Settings": report.key_value_table(
            report.fit_settings(
                args,
                model=model_description(args, subq),
                scaling="RobustScaler (median, interquartile range)",
                model_file=model_file_description(model_file()),
                kernel=report.kernel_description(subq),
            )
        ),
        "Fit statistics": report.key_value_table(_statistics(table, model, seconds)),
        "Outlier scores": (
            report.flags_explained(subq)
            + " All rows are in outliers.csv.\n\n"
            + report.image("outliers.png", "sorted outlier scores and threshold")
            + "\nMost suspect rows:\n\n"
            + report.markdown_table(outlier_table(table, model).iloc[most_suspect].round(4))
        ),
    }
    if args.known_outliers is not None:
        sections["Flags against the known outliers"] = known_outlier_section(
            args.known_outliers, known_outliers(table.original, args.known_outliers), subq
        )
    if args.task == "regression":
        report.plot_predicted_vs_observed(
            table.y.to_numpy(), model.predict(table.X), ~subq.inlier_mask_, folder / "fit.png"
        )
        sections["Predicted vs observed"] = report.image("fit.png", "predicted vs observed")
    report.write_report(
        folder / "report.md", f"Subquantile fit of {Path(args.data).name}", sections
    )


def _run(args: argparse.Namespace) -> int:
    parquet = is_parquet(args.data)
    if args.scheduler is not None and not parquet:
        raise DataError("--scheduler fits a Parquet table on a Dask cluster; DATA is not one")
    if args.known_outliers is not None and parquet:
        raise DataError("--known-outliers works on CSV tables; DATA is Parquet")
    with progress(4, "fit", args.quiet) as bar, atomic_folder(args.out) as folder:
        model_name = model_file()
        if parquet:
            with dask_client(args.scheduler):
                model = fit_parquet(
                    args, build_model(args), folder, bar,
                    model_name=model_name, model_note=model_file_description(model_name),
                )
        else:
            model = _fit_csv(args, folder, bar, model_name)
    if not args.quiet:
        print(f"epsilon_ = {model[-1].epsilon_:.3f}; wrote {args.out}")
        if model_name == PICKLE_MODEL_FILE:
            print(PICKLE_NOTE)
    return 0


def _fit_csv(args: argparse.Namespace, folder: Path, bar: Any, model_name: str) -> Pipeline:
    bar.set_postfix_str("reading")
    frame = read_csv(args.data)
    exclude: tuple[str, ...] = ()
    if args.known_outliers is not None:
        if args.known_outliers == args.target:
            raise DataError("--known-outliers must name another column than --target")
        known_outliers(frame, args.known_outliers)  # a clear error before the fit
        exclude = (args.known_outliers,)
    table = training_table(
        frame,
        args.target,
        classification=args.task == "classification",
        drop_na=args.drop_na,
        exclude=exclude,
    )
    bar.update()
    bar.set_postfix_str("fitting")
    model = build_model(args)
    start = time.perf_counter()
    model.fit(table.X, table.y)
    seconds = time.perf_counter() - start
    bar.update()
    bar.set_postfix_str("writing tables")
    save_model(model, folder / model_name)
    write_csv(outlier_table(table, model), folder / "outliers.csv")
    write_csv(_predictions(table, model), folder / "predictions.csv")
    bar.update()
    bar.set_postfix_str("writing report")
    _report(folder, args, table, model, seconds)
    bar.update()
    return model


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
            "be empty). Feature columns must be numeric. A Parquet file or folder (DATA.parquet, "
            "needs the dask extra and --n-components) is fitted on Dask as passes over its row "
            "groups and gives outliers.parquet and predictions.parquet."
        ),
    )
    parser.add_argument(
        "data", metavar="DATA.csv", help="the table (header line first), or Parquet file(s)"
    )
    parser.add_argument("--target", required=True, help="name of the target column")
    parser.add_argument("--task", choices=("regression", "classification"), default="regression")
    parser.add_argument(
        "--epsilon",
        type=epsilon_argument,
        default="auto",
        help="fraction of rows to trim, in [0, 0.5), or 'auto' to estimate it (default)",
    )
    parser.add_argument(
        "--kernel",
        choices=["auto", *sorted(set(KERNELS) - {"precomputed"})],
        default="auto",
        help=(
            "'auto' (default): for a regression of any size, a high-breakdown start (kernel "
            "least trimmed squares from the linear kernel, an adaptive cutoff, the linear, "
            "degree-2 polynomial or rbf kernel chosen on the rows kept; on a sample of 1000 "
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
    parser.add_argument("--drop-na", action="store_true", help="drop rows with missing values")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or messages")
    parser.set_defaults(handler=guarded(PROG, _run))
