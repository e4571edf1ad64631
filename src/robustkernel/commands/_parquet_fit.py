"""``robustkernel fit DATA.parquet``: the fit of a Parquet file or folder as passes on Dask.

A table too large for one machine is read with pyarrow, one Dask chunk per row group, and
fitted by the Subquantile estimator's Dask path: the rows are never gathered in one process,
only the per-row results (scores, flags, predictions: a few numbers per row) come back to write
the outputs. The rules of the CSV tables hold (numeric features, missing values an error unless
``--drop-na``, infinite values an error, a classification target that looks like an identifier
refused); the features are scaled by a :class:`~sklearn.preprocessing.RobustScaler` fitted on
the sample of rows the automatic configuration also uses. DIR receives the model file (the
scaler and the model, as for a CSV: ``robustkernel predict`` takes it), ``outliers.parquet``
(row, outlier_score, flagged), ``predictions.parquet`` (row, observed, predicted) and
``report.md``.

A folder is the ``.parquet`` / ``.pq`` files under it in name order, names starting with ``.``
or ``_`` skipped (as Dask and pyarrow skip them: partial writes, ``_SUCCESS``, ``_metadata``).
Before any row is read, every file's schema is read from its footer and checked: the same
column names in every file (matched by name, in any order; pandas' stored index is not a
column), no name twice, numeric features (and target, for a regression) in every file; an error
names the file and the column. :func:`predict_parquet` predicts such a table row group by row
group for ``robustkernel predict``.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import is_classifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import RobustScaler

from ..persistence import save_model
from ..subquantile import sample_rows
from . import _fit_report as report
from ._common import fitting
from ._predictions import prediction_frame
from ._tabular import MIN_TRAINING_ROWS, DataError, Table, check_class_counts, first_line

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
    """The Parquet files of ``path``: the file itself, or a folder's in name order (names
    starting with ``.`` or ``_``, of files or of folders under it, skipped)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"no such file or folder: {os.fspath(path)}")
    if path.is_file():
        return [path]
    files = sorted(
        p for p in path.rglob("*")
        if p.is_file() and p.suffix in PARQUET_SUFFIXES
        and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts)
    )
    if not files:
        raise DataError(
            f"no .parquet files in {os.fspath(path)} (names starting with . or _ are skipped)"
        )
    return files


@dataclass(frozen=True)
class _Schema:
    """The columns of one Parquet file (pandas' stored index left out) and their Arrow types."""

    file: Path
    types: dict[str, Any]


def read_group(file: str | os.PathLike[str], group: int, columns: list[str]) -> pd.DataFrame:
    """``columns`` of row group ``group`` of ``file`` as pandas reads them (a range index);
    a damaged page raises :class:`DataError` naming the file."""
    import pyarrow.parquet as pq

    try:
        frame = pq.ParquetFile(file).read_row_group(group, columns=columns).to_pandas()
    except (OSError, ValueError) as error:  # ArrowInvalid, ArrowIOError, thrift errors
        raise DataError(
            f"cannot read row group {group} of {os.fspath(file)}: {first_line(error)}"
        ) from error
    return frame.reset_index(drop=True)  # positions in the group, never a stored index


def _read_schemas(files: list[Path]) -> list[_Schema]:
    """Every file's schema, from its footer; an unreadable file or a repeated name is named."""
    _, pq = _parquet_modules()
    schemas = []
    for file in files:
        try:
            schema = pq.read_schema(file)
        except (OSError, ValueError) as error:  # ArrowInvalid, ArrowIOError
            reason = first_line(error)
            raise DataError(f"cannot read {os.fspath(file)} as Parquet: {reason}") from error
        metadata = schema.pandas_metadata or {}
        index = {name for name in metadata.get("index_columns", []) if isinstance(name, str)}
        names = [name for name in schema.names if name not in index]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise DataError(
                f"{os.fspath(file)} repeats the column name(s) {', '.join(map(repr, repeated))}; "
                "give every column its own name"
            )
        schemas.append(_Schema(file, {name: schema.field(name).type for name in names}))
    return schemas


def _numeric_type(kind: Any) -> bool:
    """Numbers (booleans and decimals included) or the null type (a column without values)."""
    import pyarrow as pa

    return any(
        check(kind)
        for check in (
            pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean,
            pa.types.is_decimal, pa.types.is_null,
        )
    )


def _refuse_non_numeric(schemas: list[_Schema], columns: list[str], what: str) -> None:
    """DataError naming the ``columns`` (``what``: their role) that are not numeric in some
    file, with the first such file."""
    bad = {  # column -> the first file where it is not numeric (later files written first)
        column: schema
        for column in columns
        for schema in reversed(schemas)
        if column in schema.types and not _numeric_type(schema.types[column])
    }
    if bad:
        column, schema = next(iter(bad.items()))
        raise DataError(
            f"{what} {', '.join(map(repr, bad))} are not numeric ({column!r} is "
            f"{schema.types[column]} in {os.fspath(schema.file)}); encode them (e.g. "
            "pandas.get_dummies) or drop them"
        )


def _refuse_missing_columns(schemas: list[_Schema], columns: list[str], what: str) -> None:
    """DataError naming the first file that lacks one of ``columns``."""
    for schema in schemas:
        lacking = [column for column in columns if column not in schema.types]
        if lacking:
            raise DataError(
                f"{what} {', '.join(map(repr, lacking))} missing from {os.fspath(schema.file)}; "
                f"its columns: {', '.join(map(repr, schema.types))}"
            )


def _table_columns(
    path: str, schemas: list[_Schema], target: str, classification: bool
) -> tuple[list[str], np.dtype]:
    """The feature columns (the first file's order) and the target's dtype, once every file
    holds the same columns (by name), numeric features and a target of one kind."""
    first = schemas[0]
    if target not in first.types:
        raise DataError(
            f"no column {target!r} in {os.fspath(first.file)}; columns: "
            f"{', '.join(map(repr, first.types))}"
        )
    for schema in schemas[1:]:
        extra = [name for name in schema.types if name not in first.types]
        lacking = [name for name in first.types if name not in schema.types]
        if extra or lacking:
            differs = (
                f"has column(s) {', '.join(map(repr, extra))} that {os.fspath(first.file)} has "
                "not" if extra else f"lacks column(s) {', '.join(map(repr, lacking))} of "
                f"{os.fspath(first.file)}"
            )
            raise DataError(
                f"the Parquet files of {path} disagree: {os.fspath(schema.file)} {differs}; "
                "every file needs the same columns"
            )
    features = [name for name in first.types if name != target]
    if not features:
        raise DataError("the table has no feature column besides the target")
    _refuse_non_numeric(schemas, features, "feature column(s)")
    if not classification:
        _refuse_non_numeric(schemas, [target], "the regression target")
        return features, np.dtype(np.float64)
    import pyarrow as pa

    # the labels' type: of the files where the target has values (not of the null type)
    typed = [(s.file, s.types[target]) for s in schemas if not pa.types.is_null(s.types[target])]
    numbers = [(file, kind) for file, kind in typed if _numeric_type(kind)]
    others = [(file, kind) for file, kind in typed if not _numeric_type(kind)]
    if numbers and others:
        raise DataError(
            f"the target column {target!r} holds numbers ({numbers[0][1]}) in "
            f"{os.fspath(numbers[0][0])} and {others[0][1]} in {os.fspath(others[0][0])}; give "
            "it one type in every file"
        )
    if others or not numbers:
        return features, np.dtype(object)
    return features, np.result_type(*[np.dtype(kind.to_pandas_dtype()) for _, kind in numbers])


@dataclass(frozen=True)
class _GroupSummary:
    """What the first pass learns of one row group: its rows, its complete rows (no missing
    value), the values present per column, the first missing and the first infinite value
    (position in the group, column index) and, for a classification, the counts of the labels
    of the complete rows."""

    rows: int
    complete: int
    present: np.ndarray
    first_missing: tuple[int, int] | None
    first_infinite: tuple[int, int] | None
    labels: pd.Series | None


def _first(mask: np.ndarray) -> tuple[int, int] | None:
    """(row, column) of the first True of the 2-d ``mask``, or None."""
    rows = np.flatnonzero(mask.any(axis=1))
    return None if rows.size == 0 else (int(rows[0]), int(np.flatnonzero(mask[rows[0]])[0]))


def _group_summary(file: str, group: int, columns: list[str], classification: bool) -> Any:
    """The :class:`_GroupSummary` of row group ``group`` of ``file`` (``columns``, target
    last)."""
    frame = read_group(file, group, columns)
    missing = frame.isna().to_numpy()
    complete = ~missing.any(axis=1)
    numeric = frame.iloc[:, :-1] if classification else frame
    infinite = np.isinf(numeric.to_numpy(np.float64, na_value=np.nan)) & complete[:, None]
    labels = None
    if classification:
        labels = frame.iloc[complete, -1].value_counts()
        labels = labels[labels > 0]  # a categorical's unused categories
    return _GroupSummary(
        len(frame), int(complete.sum()), (~missing).sum(axis=0), _first(missing),
        _first(infinite), labels,
    )


def _complete_rows(file: str, group: int, columns: list[str]) -> pd.DataFrame:
    """Row group ``group`` of ``file`` (``columns``, target last), rows with a missing value
    dropped; the index holds each row's position in the group."""
    frame = read_group(file, group, columns)
    return frame[frame.notna().all(axis=1).to_numpy()]


def _group_block(
    file: str, group: int, offset: int, columns: list[str], part: str, dtype: Any
) -> np.ndarray:
    """The features (float64), target (``dtype``) or 1-based row numbers of a row group's
    complete rows."""
    frame = _complete_rows(file, group, columns)
    if part == "features":
        return frame.iloc[:, :-1].to_numpy(np.float64)
    if part == "target":
        return frame.iloc[:, -1].to_numpy(dtype)
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

        da, pq = _parquet_modules()
        files = parquet_files(path)
        schemas = _read_schemas(files)
        self.features, target_dtype = _table_columns(path, schemas, target, classification)
        columns = [*self.features, target]
        groups = [
            (os.fspath(file), group)
            for file in files
            for group in range(pq.ParquetFile(file).num_row_groups)
        ]
        summaries: list[_GroupSummary] = list(dask.compute(*[
            dask.delayed(_group_summary)(file, group, columns, classification)
            for file, group in groups
        ]))
        offsets = np.cumsum([0] + [summary.rows for summary in summaries])
        n_total = int(offsets[-1])
        n_missing = n_total - sum(summary.complete for summary in summaries)

        def first(found: str) -> tuple[str, str]:
            """('row R in FILE', column) of the first ``found`` (missing / infinite) value."""
            at = next(i for i, s in enumerate(summaries) if getattr(s, found) is not None)
            row, column = getattr(summaries[at], found)
            return f"row {offsets[at] + row + 1} in {Path(groups[at][0]).name}", columns[column]

        if n_total:
            present = np.sum([summary.present for summary in summaries], axis=0)
            empty = [column for column, count in zip(columns, present, strict=True) if not count]
            if empty:
                raise DataError(
                    f"column(s) {', '.join(map(repr, empty))} hold no value (every value is "
                    "missing); drop them"
                )
        if n_missing and not drop_na:
            row, column = first("first_missing")
            raise DataError(
                f"{n_missing} row(s) have missing values (first: {row}, column {column!r}); "
                "pass --drop-na to drop them"
            )
        if any(summary.first_infinite is not None for summary in summaries):
            row, column = first("first_infinite")
            what = "target" if column == target else "feature"
            raise DataError(f"{what} column {column!r} holds an infinite value ({row})")
        if n_total - n_missing < MIN_TRAINING_ROWS:
            raise DataError(
                f"{n_total - n_missing} usable row(s); a fit needs at least {MIN_TRAINING_ROWS}"
            )
        if classification:
            labels = pd.concat([s.labels for s in summaries]).groupby(level=0).sum()
            check_class_counts(labels, target)
        parts: dict[str, list[Any]] = {"features": [], "target": [], "rows": []}
        for (file, group), offset, summary in zip(groups, offsets, summaries, strict=False):
            if summary.complete == 0:
                continue
            for part, shape, dtype in (
                ("features", (summary.complete, len(self.features)), np.float64),
                ("target", (summary.complete,), target_dtype),
                ("rows", (summary.complete,), np.int64),
            ):
                block = dask.delayed(_group_block)(file, group, int(offset), columns, part, dtype)
                parts[part].append(da.from_delayed(block, shape=shape, dtype=dtype))
        self.X = da.concatenate(parts["features"])
        self.y = da.concatenate(parts["target"])
        self.rows = da.concatenate(parts["rows"])
        self.n_dropped = n_missing
        sample = sample_rows(self.X.shape[0], random_state)
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
    bar.set_postfix_str("reading")
    table = ParquetTable(
        args.data,
        args.target,
        args.task == "classification",
        args.drop_na,
        random_state=args.random_state,
    )
    bar.update()
    scaler = RobustScaler().fit(table.sample)
    features = table.features

    def scaled(block: np.ndarray) -> np.ndarray:
        return scaler.transform(pd.DataFrame(block, columns=features))

    subq = model[-1].set_params(random_state=args.random_state, verbose=int(not args.quiet))
    start = time.perf_counter()
    with fitting(bar):
        subq.fit(table.X.map_blocks(scaled, dtype=np.float64), table.y)
    seconds = time.perf_counter() - start
    fitted = Pipeline([("scale", scaler), ("model", subq)])
    bar.update()
    bar.set_postfix_str("writing tables")
    predicted, observed, rows = _per_row(fitted, table)
    save_model(fitted, folder / model_name)
    scores = np.asarray(subq.outlier_scores_)  # Dask arrays on the cluster: computed here
    outliers = pd.DataFrame(
        {"row": rows, "outlier_score": scores, "flagged": ~np.asarray(subq.inlier_mask_)}
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
    report.plot_outlier_scores(scores, subq.threshold_, folder / "outliers.png")
    most_suspect = np.argsort(-scores, kind="stable")[:N_MOST_SUSPECT]
    sections = {
        "Settings": report.key_value_table(
            report.fit_settings(
                args,
                model=f"{subq.n_components_} Nystroem features, fitted on Dask "
                + (f"(scheduler {args.scheduler})" if args.scheduler else "(local threads)"),
                scaling="RobustScaler (median, interquartile range of "
                f"{len(table.sample)} sampled rows)",
                model_file=model_note,
                kernel=report.kernel_description(subq),
            )
        ),
        "Fit statistics": report.key_value_table(statistics),
        "Outlier scores": (
            report.flags_explained(subq)
            + " All rows are in outliers.parquet (join on row with the table).\n\n"
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


def predict_parquet(
    model: Any, path: str, columns: list[str], drop_na: bool, coverage: float | None = None
) -> Iterator[pd.DataFrame]:
    """The predictions of every row of the Parquet table ``path``, one frame per row group:
    ``row`` (1-based across the files in name order), ``predicted`` and, for a classifier, a
    probability per class (with ``coverage``, the interval's ``lower`` and ``upper``);
    ``model`` reads the feature ``columns`` (others are ignored).

    Raises :class:`DataError`, naming the file, the row and the column, for a file lacking a
    feature or holding one that is not numeric (checked on every schema first), for missing
    values (unless ``drop_na``: such rows are skipped), for infinite values, and when no row is
    left.
    """
    _, pq = _parquet_modules()
    files = parquet_files(path)
    schemas = _read_schemas(files)
    _refuse_missing_columns(schemas, columns, "feature column(s)")
    _refuse_non_numeric(schemas, columns, "feature column(s)")
    offset = used = 0
    for file in files:
        for group in range(pq.ParquetFile(file).num_row_groups):
            frame = read_group(file, group, columns)
            frame.index = offset + 1 + np.arange(len(frame))
            offset += len(frame)
            missing = frame.isna().to_numpy()
            found = _first(missing)
            if found is not None and not drop_na:
                raise DataError(
                    f"missing values (first: row {frame.index[found[0]]} in {file.name}, column "
                    f"{columns[found[1]]!r}); pass --drop-na to skip such rows"
                )
            X = frame[~missing.any(axis=1)].astype(np.float64)
            found = _first(np.isinf(X.to_numpy()))
            if found is not None:
                raise DataError(
                    f"feature column {columns[found[1]]!r} holds an infinite value (row "
                    f"{X.index[found[0]]} in {file.name})"
                )
            if len(X):
                used += len(X)
                yield prediction_frame(
                    model, Table(X, None, X.index.to_numpy(), X, 0), coverage
                )
    if not used:
        raise DataError("too few rows: 0 usable, at least 1 needed")
