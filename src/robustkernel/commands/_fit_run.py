"""What ``robustkernel fit`` runs: the table read and checked, the fit, its outputs and report.

Imported when the command runs, not when the parser is built (:mod:`.fit` holds the options):
it brings the estimators, pandas and matplotlib. A CSV table goes through
:func:`._layout.decide_layout` (its index column left out, ``--drop-columns``, ISO dates as
days; stored with the model for ``predict``) and :func:`._tabular.training_table` (every
problem of the table in one error); a Parquet table goes to :mod:`._parquet_fit`.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import RobustScaler

from ..corruption import outlier_precision_recall
from ..persistence import save_model
from ..subquantile import SubquantileKernelClassifier, SubquantileKernelRegressor
from . import _fit_report as report
from ._common import atomic_folder, fitting, progress
from ._csv_output import write_csv
from ._layout import Layout, decide_layout
from ._model_file import PICKLE_MODEL_FILE, PICKLE_NOTE, model_file, model_file_description
from ._parquet_fit import dask_client, fit_parquet, is_parquet
from ._predictions import prediction_frame, prediction_intervals
from ._tabular import DataError, Table, class_like_target, known_outliers, read_csv, training_table

INTERVAL_COVERAGE = 0.9
"""The coverage of the report's plot of prediction intervals (intervals.png)."""

N_MOST_SUSPECT = 10


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
    """The robust scaler and the Subquantile estimator the arguments describe (seeded with
    ``--random-state``)."""
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
        random_state=args.random_state,
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


EVIDENCE_REPORTED = ("kind", "residual", "fitted", "robust_z", "pvalue", "x_distance")
"""The columns of the regressor's ``outlier_evidence_`` that outliers.csv and the report show."""


def outlier_table(table: Table, model: Pipeline) -> pd.DataFrame:
    """row, outlier_score and flagged (and, where the fit has them, the evidence columns
    ``EVIDENCE_REPORTED``), then every column of the file (whose names win: an added column
    that would repeat one gets a leading underscore)."""
    subq = model[-1]
    original = table.original.reset_index(drop=True)
    added = {
        "row": table.rows,
        "outlier_score": subq.outlier_scores_,
        "flagged": ~subq.inlier_mask_,
    }
    evidence = getattr(subq, "outlier_evidence_", None)
    if evidence is not None:  # kernel="auto": why each row is (not) flagged, in target units
        added.update({name: evidence[name] for name in EVIDENCE_REPORTED})
    scores = pd.DataFrame({_free_name(name, original.columns): v for name, v in added.items()})
    return pd.concat([scores, original], axis=1)


def _shown(rows: pd.DataFrame) -> pd.DataFrame:
    """The report's rows: numbers to 4 decimals, p-values to 2 significant digits (a p-value
    of 1e-6 is not 0)."""
    shown = rows.round(4)
    if "pvalue" in rows.columns:
        shown["pvalue"] = [f"{value:.2g}" for value in rows["pvalue"]]
    return shown


def known_outlier_section(column: str, known: np.ndarray, subq: Any) -> str:
    """The report's comparison of the flagged rows with the rows ``known`` (the column
    ``column``) to be wrong: counts, precision and recall (precision undefined when no row is
    flagged, recall when no row is known)."""
    flagged = ~subq.inlier_mask_
    precision, recall = outlier_precision_recall(subq.inlier_mask_, np.flatnonzero(known))
    values = {
        "rows known to be wrong": int(known.sum()),
        "rows flagged": int(flagged.sum()),
        "flagged and known": int(np.sum(flagged & known)),
        "precision (flagged rows that are known)": (
            float(precision) if flagged.any() else "undefined (no row flagged)"
        ),
        "recall (known rows that are flagged)": (
            float(recall) if known.any() else "undefined (no row known)"
        ),
    }
    return (
        f"The column {column!r} marks the rows known to be wrong; it is not a feature.\n\n"
        + report.key_value_table(values)
    )


def _report(
    folder: Path,
    args: argparse.Namespace,
    table: Table,
    model: Pipeline,
    seconds: float,
    notes: dict[str, str],
) -> None:
    subq = model[-1]
    report.plot_outlier_scores(subq.outlier_scores_, subq.threshold_, folder / "outliers.png")
    evidence = getattr(subq, "outlier_evidence_", None)
    # most suspect: largest |robust z| where the fit gives evidence, else largest score
    suspicion = subq.outlier_scores_ if evidence is None else np.abs(evidence["robust_z"])
    most_suspect = np.argsort(-suspicion, kind="stable")[:N_MOST_SUSPECT]
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
        "Columns": (
            f"Features ({table.X.shape[1]}): {', '.join(map(str, table.X.columns))}\n\n"
            + (report.key_value_table(notes) if notes else "")
        ),
        "Fit statistics": report.key_value_table(_statistics(table, model, seconds)),
        "Outlier scores": (
            report.flags_explained(subq)
            + " All rows are in outliers.csv.\n\n"
            + report.image("outliers.png", "sorted outlier scores and threshold")
            + "\nMost suspect rows:\n\n"
            + report.markdown_table(_shown(outlier_table(table, model).iloc[most_suspect]))
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
        if "refused" not in getattr(subq, "interval_calibration_", {"refused": ""}):
            predicted = model.predict(table.X)
            report.plot_intervals(
                table.y.to_numpy(), prediction_intervals(model, table.X, INTERVAL_COVERAGE),
                predicted, ~subq.inlier_mask_, INTERVAL_COVERAGE, folder / "intervals.png",
            )
            sections["Prediction intervals"] = (
                f"Each row's {INTERVAL_COVERAGE:.0%} prediction interval "
                "(`robustkernel predict --coverage`), calibrated on every row's honest "
                "residual with the flagged rows' contamination left out; a training row's "
                "own target is not a new row, so the share inside is only a check.\n\n"
                + report.image("intervals.png", "prediction intervals over the fitted values")
            )
    report.write_report(
        folder / "report.md", f"Subquantile fit of {Path(args.data).name}", sections
    )


def run(args: argparse.Namespace) -> int:
    """Run ``robustkernel fit`` with the parsed ``args``; returns the exit code."""
    parquet = is_parquet(args.data)
    if args.scheduler is not None and not parquet:
        raise DataError("--scheduler fits a Parquet table on a Dask cluster; DATA is not one")
    if parquet:
        for option, given in (("--known-outliers", args.known_outliers is not None),
                              ("--drop-columns", bool(args.drop_columns))):  # fmt: skip
            if given:
                raise DataError(f"{option} works on CSV tables; DATA is Parquet")
    notes: dict[str, str] = {}
    with progress(4, "fit", args.quiet) as bar, atomic_folder(args.out) as folder:
        model_name = model_file()
        if parquet:
            with dask_client(args.scheduler):
                model = fit_parquet(
                    args, build_model(args), folder, bar,
                    model_name=model_name, model_note=model_file_description(model_name),
                )
        else:
            model, notes = _fit_csv(args, folder, bar, model_name)
    if not args.quiet:
        print(f"epsilon_ = {model[-1].epsilon_:.3f}; wrote {args.out}")
        for subject, note in notes.items():
            if subject != "--drop-columns":  # what fit decided, not what it was told
                print(f"{subject}: {note}")
        if model_name == PICKLE_MODEL_FILE:
            print(PICKLE_NOTE)
    return 0


def _read(args: argparse.Namespace) -> tuple[Table, Layout]:
    """The training table of the CSV file ``args.data`` and the layout decided on it."""
    frame = read_csv(args.data)
    exclude: tuple[str, ...] = ()
    if args.known_outliers is not None:
        if args.known_outliers == args.target:
            raise DataError("--known-outliers must name another column than --target")
        known_outliers(frame, args.known_outliers)  # a clear error before the fit
        exclude = (args.known_outliers,)
    layout = decide_layout(
        frame,
        keep=(args.target, *exclude),
        drop_columns=args.drop_columns,
        index_column=args.index_column,
    )
    table = training_table(
        frame,
        args.target,
        classification=args.task == "classification",
        drop_na=args.drop_na,
        exclude=exclude,
        layout=layout,
    )
    return table, layout


def _fit_csv(
    args: argparse.Namespace, folder: Path, bar: Any, model_name: str
) -> tuple[Pipeline, dict[str, str]]:
    """Fit the CSV table of ``args`` and write every output into ``folder``; returns the
    fitted pipeline and the notes on the table (its columns left out or converted, a target
    that looks like classes) that the report and the output give."""
    bar.set_postfix_str("reading")
    table, layout = _read(args)
    notes = layout.notes()
    if args.task == "regression" and (advice := class_like_target(table.y, args.target)):
        warnings.warn(advice, stacklevel=1)
        notes[f"target {args.target!r}"] = advice
    bar.update()
    model = build_model(args)
    start = time.perf_counter()
    with fitting(bar):
        model.fit(table.X, table.y)
    seconds = time.perf_counter() - start
    layout.store(model)
    bar.update()
    bar.set_postfix_str("writing tables")
    save_model(model, folder / model_name)
    write_csv(outlier_table(table, model), folder / "outliers.csv")
    write_csv(_predictions(table, model), folder / "predictions.csv")
    bar.update()
    bar.set_postfix_str("writing report")
    _report(folder, args, table, model, seconds, notes)
    bar.update()
    return model, layout.notes()
