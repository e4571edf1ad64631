"""What ``robustkernel learn-metric`` runs: the fit of the learned metric, its tables and report.

Imported when the command runs (:mod:`.learn_metric` holds the options and says what the
command writes): it brings the estimator, pandas and matplotlib. The table goes through the
same :func:`._layout.decide_layout` as ``fit`` (index column left out, ``--drop-columns``, ISO
dates as days; stored with the model for ``predict``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import TransformedTargetRegressor
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MaxAbsScaler, StandardScaler

from ..metric_kernel_ridge import MetricKernelRidge
from ..persistence import save_model
from . import _fit_report as report
from ._common import atomic_folder, progress
from ._csv_output import write_csv
from ._fit_run import outlier_table
from ._layout import decide_layout
from ._model_file import PICKLE_MODEL_FILE, PICKLE_NOTE, model_file, model_file_description
from ._tabular import DataError, Table, read_csv, training_table


def target_scaler() -> Pipeline:
    """The target's standardization, (y - mean) / std, safe at any magnitude.

    ``StandardScaler`` alone squares the targets for their variance: at |y| ~ 1e155 and above
    the variance overflows (NaN or infinity, and the targets pass unscaled or as NaN), at
    |y| ~ 1e-155 and below it underflows to 0 (the targets pass unscaled). Dividing by the
    largest magnitude first (``MaxAbsScaler``) leaves targets in [-1, 1]; the two affine steps
    compose to the same standardization, and ``inverse_transform`` undoes both.
    """
    return make_pipeline(MaxAbsScaler(), StandardScaler())


SMALLEST_TARGET = 1e-150
"""Below this largest magnitude the target's variance underflows and it cannot be standardized."""


def check_target_range(y: np.ndarray) -> None:
    """Refuse a target that cannot be standardized in float64.

    Two ways: values of magnitude below :data:`SMALLEST_TARGET` (their squares underflow, so
    scikit-learn's scalers take the target for a constant and leave it unscaled), and values
    spanning a wider range than float64 keeps (1e200 among values near 1: about 16 significant
    digits of the largest magnitude survive, and the smaller values come back from
    :func:`target_scaler` and its inverse lost to rounding; each must come back to a relative
    1e-6, zeros to 1e-6 of the median nonzero magnitude).

    Raises
    ------
    DataError
        Naming the magnitudes, and what to do.
    """
    y = np.asarray(y, dtype=float).reshape(-1, 1)
    magnitudes = np.abs(y[y != 0])
    if magnitudes.size == 0:
        return
    largest, typical = float(magnitudes.max()), float(np.median(magnitudes))
    if largest < SMALLEST_TARGET and np.ptp(y) > 0:
        raise DataError(
            f"the target's values are too small to standardize in float64 (largest |y| "
            f"{largest:.3g}: their squares underflow); multiply the target by a power of ten"
        )
    scaler = target_scaler().fit(y)
    if not np.allclose(scaler.inverse_transform(scaler.transform(y)), y, 1e-6, 1e-6 * typical):
        raise DataError(
            f"the target's values span too wide a range to standardize in float64 (largest "
            f"|y| {largest:.3g}, median |y| {typical:.3g}): the smaller values would be lost to "
            "rounding; remove or correct the extreme values, or transform the target (e.g. its "
            "logarithm)"
        )


def _root_mean_squared_error(observed: np.ndarray, predicted: np.ndarray) -> float:
    """RMSE in the target's units, without overflow: the residuals are divided by their largest
    magnitude before they are squared."""
    residuals = np.asarray(observed, dtype=float) - np.asarray(predicted, dtype=float)
    largest = float(np.max(np.abs(residuals), initial=0.0))
    if largest == 0.0 or not np.isfinite(largest):
        return largest
    return largest * float(np.sqrt(np.mean((residuals / largest) ** 2)))


def run(args: argparse.Namespace) -> int:
    """Run ``robustkernel learn-metric`` with the parsed ``args``; returns the exit code."""
    with progress(3, "learn-metric", args.quiet) as bar, atomic_folder(args.out) as folder:
        frame = read_csv(args.data)
        layout = decide_layout(
            frame,
            keep=(args.target,),
            drop_columns=args.drop_columns,
            index_column=args.index_column,
        )
        table = training_table(frame, args.target, drop_na=args.drop_na, layout=layout)
        check_target_range(table.y)
        bar.update()
        pipeline = TransformedTargetRegressor(
            make_pipeline(
                StandardScaler(),
                MetricKernelRidge(
                    lam=args.lam, epsilon=args.epsilon, max_iter=args.max_iter, random_state=0
                ),
            ),
            transformer=target_scaler(),
        )
        start = time.perf_counter()
        pipeline.fit(table.X, table.y)
        seconds = time.perf_counter() - start
        layout.store(pipeline)
        scaler, model = pipeline.regressor_[0], pipeline.regressor_[-1]
        X = scaler.transform(table.X)
        model_name = model_file()
        save_model(pipeline, folder / model_name)
        bar.update()
        components = _write_tables(folder, table, pipeline, X)
        _write_report(folder, args, table, pipeline, X, components, model_name, seconds)
        bar.update()
    if not args.quiet:
        print(
            f"rank {model.rank_} of {X.shape[1]}, epsilon_ = {model.epsilon_:.3f}; wrote {args.out}"
        )
        if model_name == PICKLE_MODEL_FILE:
            print(PICKLE_NOTE)
    return 0


def _write_tables(
    folder: Path, table: Table, pipeline: TransformedTargetRegressor, X: np.ndarray
) -> pd.DataFrame:
    """components.csv, eigenvalues.csv, transformed.csv, outliers.csv and eigenvalues.png of
    the fitted ``pipeline`` (``X``: the standardized rows); returns the components."""
    model = pipeline.regressor_[-1]
    names = [f"component_{j + 1}" for j in range(model.rank_)]
    components = pd.DataFrame(model.components_.T, columns=names)
    components.insert(0, "feature", table.X.columns)
    write_csv(components, folder / "components.csv")
    eigenvalues = pd.DataFrame(
        {
            "index": np.arange(1, model.eigenvalues_.size + 1),
            "eigenvalue": model.eigenvalues_,
            "in_subspace": model.eigenvalues_ > 0,
        }
    )
    write_csv(eigenvalues, folder / "eigenvalues.csv")
    transformed = pd.DataFrame(model.transform(X), columns=names)
    transformed.insert(0, "row", table.rows)
    write_csv(transformed, folder / "transformed.csv")
    write_csv(outlier_table(table, pipeline.regressor_), folder / "outliers.csv")
    report.plot_eigenvalues(model.eigenvalues_, folder / "eigenvalues.png")
    return components


def _write_report(
    folder: Path,
    args: argparse.Namespace,
    table: Table,
    pipeline: TransformedTargetRegressor,
    X: np.ndarray,
    components: pd.DataFrame,
    model_name: str,
    seconds: float,
) -> None:
    """report.md: the settings, the fit statistics, the spectrum and the learned directions."""
    model = pipeline.regressor_[-1]
    fitted = pipeline.predict(table.X)
    kept, left_out = model.inlier_mask_, int((~model.inlier_mask_).sum())
    statistics = {
        "rows used": len(table.rows),
        "rows dropped (missing values)": table.n_dropped,
        "rows left out (epsilon_)": f"{left_out} ({model.epsilon_:.3f})",
        "features": X.shape[1],
        "rank of Sigma (rank_)": int(model.rank_),
        "eigenvalues > 1e-6 x largest": int(model.numerical_rank_),
        "objective J_n": float(model.objective_),
        "KKT residual (0 at a stationary point)": float(model.kkt_residual_),
        "training RMSE on the kept rows (target units)": _root_mean_squared_error(
            np.asarray(table.y)[kept], fitted[kept]
        ),
        "iterations": int(model.n_iter_),
        "converged": bool(model.converged_),
        "fit seconds": round(seconds, 3),
    }
    settings = {
        "data": str(args.data),
        "target": args.target,
        "lam": args.lam,
        "epsilon": args.epsilon,
    }
    report.write_report(
        folder / "report.md",
        f"Learned metric of {args.data}",
        {
            "Settings": report.key_value_table(
                {
                    **settings,
                    "max_iter": args.max_iter,
                    "scaling": "standardized x and y",
                    "model file": model_file_description(model_name),
                }
            ),
            "Fit statistics": report.key_value_table(statistics),
            "Spectrum of Sigma": (
                "The prediction depends on x only through the directions with a positive "
                "eigenvalue; their number is the rank.\n\n"
                + report.image("eigenvalues.png", "eigenvalues of Sigma")
            ),
            "Learned directions": (
                "Columns: orthonormal directions spanning the learned subspace, in units of "
                "standardized features (largest eigenvalue first). A feature with weight "
                "near 0 in every column does not influence the prediction.\n\n"
                + report.markdown_table(components.round(4))
            ),
        },
    )
