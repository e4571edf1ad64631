"""``robustkernel fit DATA.parquet``: the fit of a Parquet file or folder as passes on Dask.

A table too large for one machine is read by ``dask.dataframe.read_parquet`` (row groups as
chunks) and fitted by the Subquantile estimator's Dask path: the rows are never gathered in one
process, only the per-row results (scores, flags, predictions: a few numbers per row) come back
to write the outputs. The rules of the CSV tables hold (numeric features, missing values an
error unless ``--drop-na``, infinite values an error); the features are scaled by a
:class:`~sklearn.preprocessing.RobustScaler` fitted on the sample of rows the automatic
configuration also uses. DIR receives the model file (the scaler and the model, as for a CSV:
``robustkernel predict`` takes it), ``outliers.parquet`` (row, outlier_score, flagged),
``predictions.parquet`` (row, observed, predicted) and ``report.md``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import is_classifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import RobustScaler

from ..persistence import save_model
from ..subquantile import _distributed
from . import _fit_report as report
from ._tabular import MIN_TRAINING_ROWS, DataError

PARQUET_SUFFIXES = (".parquet", ".pq")
N_MOST_SUSPECT = 10


def is_parquet(path: str | os.PathLike[str]) -> bool:
    """A ``.parquet`` / ``.pq`` file, or a folder holding such files (a partitioned table)."""
    path = Path(path)
    if path.is_dir():
        return any(p.suffix in PARQUET_SUFFIXES for p in path.rglob("*") if p.is_file())
    return path.suffix in PARQUET_SUFFIXES


def _parquet_modules() -> tuple[Any, Any]:
    try:
        import dask.array as da
        import pyarrow.parquet as pq
    except ImportError as error:
        raise DataError(
            f"a Parquet table is fitted on Dask and read with pyarrow ({error.name} is not "
            "installed): pip install 'robustkernel[dask]'"
        ) from error
    return da, pq


def parquet_files(path: str | os.PathLike[str]) -> list[Path]:
    """The Parquet files of ``path`` (the file itself, or a folder's, sorted by name)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"no such file or folder: {os.fspath(path)}")
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in PARQUET_SUFFIXES)
    if not files:
        raise DataError(f"no .parquet files in {os.fspath(path)}")
    return files


def _complete_rows(file: str, group: int, columns: list[str]) -> pd.DataFrame:
    """Row group ``group`` of ``file`` (``columns``, target last), rows with a missing value
    dropped; the index holds each row's position in the group."""
    import pyarrow.parquet as pq

    frame = pq.ParquetFile(file).read_row_group(group, columns=columns).to_pandas()
    frame = frame.reset_index(drop=True)  # pandas' stored index (if any) replaced by positions
    return frame[frame.notna().all(axis=1).to_numpy()]


def _group_counts(file: str, group: int, columns: list[str]) -> tuple[int, int, bool]:
    """Rows, complete rows and whether a feature is infinite, in one row group."""
    import pyarrow.parquet as pq

    frame = pq.ParquetFile(file).read_row_group(group, columns=columns).to_pandas()
    complete = frame.notna().all(axis=1).to_numpy()
    features = frame.iloc[:, :-1].to_numpy(np.float64)
    return len(frame), int(complete.sum()), bool(np.isinf(features).any())


def _group_block(file: str, group: int, offset: int, columns: list[str], part: str) -> np.ndarray:
    """The features (float64), target or 1-based row numbers of a row group's complete rows."""
    frame = _complete_rows(file, group, columns)
    if part == "features":
        return frame.iloc[:, :-1].to_numpy(np.float64)
    if part == "target":
        return frame.iloc[:, -1].to_numpy()
    return offset + 1 + frame.index.to_numpy()


class ParquetTable:
    """The validated training columns of a Parquet table as Dask arrays, one chunk per row
    group (read again in every pass, never gathered).

    Attributes: ``X`` (n, d) float64 features, ``y`` (n,) targets, ``rows`` (n,) 1-based row
    numbers in the table (files in name order), ``features`` the feature column names,
    ``n_dropped`` rows dropped for missing values, ``sample`` the rows (a pandas DataFrame of
    the features) the scaler is fitted on.
    """

    def __init__(
        self, path: str, target: str, classification: bool, drop_na: bool, random_state: int
    ) -> None:
        import dask
        import pyarrow as pa

        da, pq = _parquet_modules()
        files = parquet_files(path)
        schema = pq.read_schema(files[0])
        if target not in schema.names:
            raise DataError(f"no column {target!r} in {path}; columns: {', '.join(schema.names)}")
        metadata = schema.pandas_metadata or {}
        index = {name for name in metadata.get("index_columns", []) if isinstance(name, str)}
        self.features = [name for name in schema.names if name != target and name not in index]

        def numeric(name: str) -> bool:
            kind = schema.field(name).type
            return pa.types.is_integer(kind) or pa.types.is_floating(kind) or (
                pa.types.is_boolean(kind) or pa.types.is_decimal(kind)
            )

        text = [name for name in self.features if not numeric(name)]
        if text:
            raise DataError(
                f"feature column(s) {', '.join(text)} are not numeric; encode them (e.g. "
                "pandas.get_dummies) or drop them"
            )
        if not classification and not numeric(target):
            raise DataError(f"the regression target {target!r} is not numeric")
        columns = [*self.features, target]
        groups = [
            (os.fspath(file), group)
            for file in files
            for group in range(pq.ParquetFile(file).num_row_groups)
        ]
        counts = dask.compute(*[
            dask.delayed(_group_counts)(file, group, columns) for file, group in groups
        ])
        n_total = sum(rows for rows, _, _ in counts)
        n_missing = n_total - sum(complete for _, complete, _ in counts)
        if n_missing and not drop_na:
            raise DataError(f"{n_missing} row(s) have missing values; pass --drop-na to drop them")
        if any(infinite for _, _, infinite in counts):
            raise DataError("the features hold infinite values")
        if n_total - n_missing < MIN_TRAINING_ROWS:
            raise DataError(
                f"{n_total - n_missing} usable row(s); a fit needs at least {MIN_TRAINING_ROWS}"
            )
        offsets = np.cumsum([0] + [rows for rows, _, _ in counts])
        target_dtype = _group_block(*groups[0], 0, columns, "target").dtype
        parts: dict[str, list[Any]] = {"features": [], "target": [], "rows": []}
        for (file, group), offset, (_, complete, _) in zip(groups, offsets, counts, strict=False):
            if complete == 0:
                continue
            for part, shape, dtype in (
                ("features", (complete, len(self.features)), np.float64),
                ("target", (complete,), target_dtype),
                ("rows", (complete,), np.int64),
            ):
                block = dask.delayed(_group_block)(file, group, int(offset), columns, part)
                parts[part].append(da.from_delayed(block, shape=shape, dtype=dtype))
        self.X = da.concatenate(parts["features"])
        self.y = da.concatenate(parts["target"])
        self.rows = da.concatenate(parts["rows"])
        self.n_dropped = n_missing
        sample = _distributed.sample_rows(self.X.shape[0], random_state)
        self.sample = pd.DataFrame(self.X[sample].compute(), columns=self.features)


@contextmanager
def dask_client(address: str | None) -> Iterator[None]:
    """Inside the block Dask computes on the scheduler at ``address`` (a ``distributed.Client``
    connected for the block), or on local threads when it is None."""
    if address is None:
        yield
        return
    try:
        from distributed import Client
    except ImportError as error:
        raise DataError(
            "--scheduler needs dask.distributed: pip install 'robustkernel[dask]'"
        ) from error
    with Client(address):
        yield


def fit_parquet(
    args: argparse.Namespace,
    model: Pipeline,
    folder: Path,
    bar: Any,
    *,
    model_name: str,
    model_note: str,
) -> Pipeline:
    """Fit ``model`` (RobustScaler, Subquantile estimator) on the Parquet table of ``args`` and
    write the outputs into ``folder``, the model as ``model_name``; returns the fitted
    pipeline."""
    if args.n_components is None:
        raise DataError(
            "a Parquet table is fitted on Dask as passes over its row groups, on Nystroem "
            "features: give --n-components N (e.g. 1000)"
        )
    bar.set_postfix_str("reading")
    table = ParquetTable(
        args.data, args.target, args.task == "classification", args.drop_na, random_state=0
    )
    bar.update()
    bar.set_postfix_str("fitting")
    scaler = RobustScaler().fit(table.sample)
    features = table.features

    def scaled(block: np.ndarray) -> np.ndarray:
        return scaler.transform(pd.DataFrame(block, columns=features))

    subq = model[-1].set_params(random_state=0, verbose=int(not args.quiet))
    start = time.perf_counter()
    subq.fit(table.X.map_blocks(scaled, dtype=np.float64), table.y)
    seconds = time.perf_counter() - start
    fitted = Pipeline([("scale", scaler), ("model", subq)])
    bar.update()
    bar.set_postfix_str("writing tables")
    predicted, observed, rows = _per_row(fitted, table)
    save_model(fitted, folder / model_name)
    outliers = pd.DataFrame(
        {"row": rows, "outlier_score": subq.outlier_scores_, "flagged": ~subq.inlier_mask_}
    )
    outliers.to_parquet(folder / "outliers.parquet", index=False)
    predictions = pd.DataFrame({"row": rows, "observed": observed, "predicted": predicted})
    predictions.to_parquet(folder / "predictions.parquet", index=False)
    bar.update()
    bar.set_postfix_str("writing report")
    statistics = {
        "rows used": int(rows.size),
        "rows dropped (missing values)": table.n_dropped,
        "features": len(features),
        **report.fit_statistics(subq, observed, predicted, seconds),
    }
    report.plot_outlier_scores(subq.outlier_scores_, subq.threshold_, folder / "outliers.png")
    most_suspect = np.argsort(-subq.outlier_scores_, kind="stable")[:N_MOST_SUSPECT]
    sections = {
        "Settings": report.key_value_table(
            report.fit_settings(
                args,
                model=f"{args.n_components} Nystroem features, fitted on Dask "
                + (f"(scheduler {args.scheduler})" if args.scheduler else "(local threads)"),
                scaling="RobustScaler (median, interquartile range of "
                f"{len(table.sample)} sampled rows)",
                model_file=model_note,
            )
        ),
        "Fit statistics": report.key_value_table(statistics),
        "Outlier scores": (
            "Each row's training loss under the final fit; rows above the threshold were "
            "trimmed (flagged). All rows are in outliers.parquet (join on row with the "
            "table).\n\n"
            + report.image("outliers.png", "sorted outlier scores and threshold")
            + "\nMost suspect rows:\n\n"
            + report.markdown_table(
                outliers.join(predictions[["observed", "predicted"]])
                .iloc[most_suspect].round(4)
            )
        ),
    }
    report.write_report(
        folder / "report.md", f"Subquantile fit of {Path(args.data).name}", sections
    )
    bar.update()
    return fitted


def _per_row(model: Pipeline, table: ParquetTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Predictions, observed targets and row numbers of every used row (one pass)."""
    import dask

    features = table.features

    def predict(block: np.ndarray) -> np.ndarray:
        return np.asarray(model.predict(pd.DataFrame(block, columns=features)))

    subq = model[-1]
    dtype = subq.classes_.dtype if is_classifier(subq) else np.float64
    predicted = table.X.map_blocks(predict, drop_axis=1, dtype=dtype)
    return dask.compute(predicted, table.y, table.rows)
