"""Reading and validating the CSV tables of the command line.

Rules, shared by ``fit``, ``predict`` and ``learn-metric``:

* The file must be UTF-8 text (a byte order mark is fine). The delimiter is sniffed from its
  first lines among comma, semicolon, tab, ``|`` and space (:data:`DELIMITERS`; in that order of
  preference when several fit); a file where none of them is found has one column and is read
  with commas. The first line is the header; its names
  must be distinct (pandas would silently rename a repeated ``x`` to ``x.1``).
* Rows are numbered from 1 (the first line after the header), and keep their number when rows
  with missing values are dropped.
* Feature columns must be numeric (booleans count as 0/1). Categorical (text) feature columns are
  **rejected** with a message naming them, not encoded: an encoding chosen silently (one-hot, or
  codes in order of appearance) changes the kernel's geometry, and the saved model would have to
  carry it. Encode them yourself (e.g. ``pandas.get_dummies``) or drop them.
* Missing values are an error unless ``drop_na`` is set; infinite values are always an error.
* A regression target must be numeric; a classification target may hold any labels.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

MIN_TRAINING_ROWS = 10
DELIMITERS = ",;\t| "
ENCODING = "utf-8-sig"  # UTF-8, with or without a byte order mark
_SNIFF_CHARACTERS = 64 * 1024
_SNIFF_LINES = 50


class DataError(ValueError):
    """The table cannot be used as given; the message says why, in one line."""


@dataclass(frozen=True)
class Table:
    """A validated table: numeric features, an optional target and the rows they came from.

    Attributes
    ----------
    X : DataFrame
        Numeric feature columns (float64) of the rows used.
    y : Series or None
        Target of the rows used (None when no target was asked for).
    rows : ndarray of int
        1-based row numbers of the rows used in the file.
    original : DataFrame
        Every column of the rows used, as read.
    n_dropped : int
        Rows dropped for missing values.
    """

    X: pd.DataFrame
    y: pd.Series | None
    rows: np.ndarray
    original: pd.DataFrame
    n_dropped: int


def read_csv(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a CSV file with a sniffed delimiter; errors become :class:`DataError`.

    Raises
    ------
    DataError
        The path is missing or a folder, the file is empty, binary or not UTF-8, its header
        repeats a column name, or pandas cannot parse it.
    """
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{os.fspath(path)} is a folder, not a CSV file")
    if not path.exists():
        raise DataError(f"no such file: {os.fspath(path)}")
    try:
        dialect, header = _dialect_and_header(path)
        frame = pd.read_csv(
            path,
            sep=dialect.delimiter,
            quotechar=dialect.quotechar or '"',
            skipinitialspace=dialect.skipinitialspace,
            encoding=ENCODING,
        )
    except FileNotFoundError as error:
        raise DataError(f"no such file: {os.fspath(path)}") from error
    except UnicodeDecodeError as error:
        raise DataError(
            f"cannot read {os.fspath(path)} as CSV: it is not UTF-8 text ({error.reason} at byte "
            f"{error.start}); save it as UTF-8"
        ) from error
    except (pd.errors.EmptyDataError, pd.errors.ParserError, csv.Error) as error:
        raise DataError(f"cannot read {os.fspath(path)} as CSV: {first_line(error)}") from error
    _refuse_repeated_names(path, header)
    frame.index = np.arange(1, len(frame) + 1)
    return frame


def _dialect_and_header(path: Path) -> tuple[type[csv.Dialect] | csv.Dialect, list[str]]:
    """The dialect sniffed from the first lines (comma when unsure) and the header's names."""
    with open(path, encoding=ENCODING, newline="") as file:
        sample = file.read(_SNIFF_CHARACTERS)
        if "\0" in sample:
            raise DataError(f"cannot read {os.fspath(path)} as CSV: it is a binary file")
        if not sample.strip():
            raise DataError(f"cannot read {os.fspath(path)} as CSV: the file is empty")
        lines = sample.splitlines()
        if len(sample) == _SNIFF_CHARACTERS and len(lines) > 1:
            lines = lines[:-1]  # the last line may be cut
        dialect = _sniff("\n".join(lines[:_SNIFF_LINES]), lines[0])
        file.seek(0)
        reader = csv.reader(
            file,
            delimiter=dialect.delimiter,
            quotechar=dialect.quotechar or '"',
            skipinitialspace=dialect.skipinitialspace,
        )
        header = next((row for row in reader if any(cell.strip() for cell in row)), [])
    return dialect, header


def _sniff(sample: str, first_line: str) -> type[csv.Dialect] | csv.Dialect:
    """The dialect of ``sample`` among :data:`DELIMITERS`; of its first line; else commas.

    Restricting the candidates matters: left free, the sniffer takes a letter for the delimiter
    of a one-column file (``y`` in a file whose header is ``y``). The first line alone is not
    trusted with spaces (a one-column header ``my target`` is one name).
    """
    candidates = ((sample, DELIMITERS), (first_line, DELIMITERS.replace(" ", "")))
    for text, delimiters in candidates:
        try:
            return csv.Sniffer().sniff(text, delimiters=delimiters)
        except csv.Error:
            continue
    return csv.excel


def _refuse_repeated_names(path: Path, header: list[str]) -> None:
    counts = pd.Series([name for name in header if name.strip()]).value_counts()
    repeated = [str(name) for name in counts.index[counts > 1]]
    if repeated:
        raise DataError(
            f"the header of {os.fspath(path)} repeats the column name(s) "
            f"{', '.join(map(repr, repeated))}; give every column its own name"
        )


def training_table(
    frame: pd.DataFrame,
    target: str,
    *,
    classification: bool = False,
    drop_na: bool = False,
    min_rows: int = MIN_TRAINING_ROWS,
    exclude: tuple[str, ...] = (),
) -> Table:
    """Split ``frame`` into numeric features and the target column ``target``, validated; the
    columns ``exclude`` are left out of the features (they stay in ``original``)."""
    if target not in frame.columns:
        raise DataError(
            f"target column {target!r} not found; columns are {', '.join(map(str, frame.columns))}"
        )
    features = [column for column in frame.columns if column != target and column not in exclude]
    if not features:
        raise DataError("the table has no feature column besides the target")
    frame, n_dropped = _missing_values(frame, drop_na)
    if len(frame) < min_rows:
        raise DataError(f"too few rows: {len(frame)} usable, at least {min_rows} needed")
    y = frame[target]
    if not classification:
        y = _numeric(frame[[target]], "target column").iloc[:, 0]
    else:
        check_class_counts(y.value_counts(), target)
    X = _numeric(frame[features], "feature column")
    return Table(X=X, y=y, rows=frame.index.to_numpy(), original=frame, n_dropped=n_dropped)


def known_outliers(frame: pd.DataFrame, column: str) -> np.ndarray:
    """The column ``column`` of ``frame`` as a boolean mask of rows known to be wrong: 0 / 1,
    true / false (any case) or booleans; anything else raises :class:`DataError`."""
    if column not in frame.columns:
        raise DataError(
            f"--known-outliers column {column!r} not found; columns are "
            f"{', '.join(map(str, frame.columns))}"
        )
    values = frame[column]
    text = values.astype(str).str.strip().str.lower()
    truth = text.isin(["1", "1.0", "true"])
    valid = truth | text.isin(["0", "0.0", "false"])
    if not valid.all():
        example = values[~valid].iloc[0]
        example = example.item() if isinstance(example, np.generic) else example
        raise DataError(
            f"--known-outliers column {column!r} must hold 0 / 1 or true / false, got {example!r}"
        )
    return truth.to_numpy()


def check_class_counts(counts: pd.Series, target: str) -> None:
    """Refuse a classification target whose class ``counts`` (rows per label) show one class,
    or (almost) one class per row.

    A target with a class for every row, or more classes than half the rows, is an identifier
    or a continuous value, not a label: the fit would succeed and mean nothing.
    """
    n_rows = int(counts.sum())
    if len(counts) < 2:
        raise DataError(f"target column {target!r} has a single class; classification needs two")
    if counts.max() == 1:
        raise DataError(
            f"target column {target!r} has a different value in every row ({n_rows} classes for "
            f"{n_rows} rows): it looks like an identifier or a continuous value, not a class "
            "label; use --task regression for a numeric target"
        )
    if len(counts) > n_rows / 2:
        raise DataError(
            f"target column {target!r} has {len(counts)} classes for {n_rows} rows (more than "
            "half the rows): too few rows per class to fit or to tell outliers apart; use --task "
            "regression for a numeric target, or merge rare classes"
        )


def feature_table(
    frame: pd.DataFrame, columns: list[str], *, drop_na: bool = False, min_rows: int = 1
) -> Table:
    """The numeric feature columns ``columns`` of ``frame`` (other columns are ignored)."""
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise DataError(f"feature column(s) missing from the table: {', '.join(missing)}")
    frame, n_dropped = _missing_values(frame[columns], drop_na)
    if len(frame) < min_rows:
        raise DataError(f"too few rows: {len(frame)} usable, at least {min_rows} needed")
    X = _numeric(frame, "feature column")
    return Table(X=X, y=None, rows=frame.index.to_numpy(), original=frame, n_dropped=n_dropped)


def _missing_values(frame: pd.DataFrame, drop_na: bool) -> tuple[pd.DataFrame, int]:
    missing = frame.isna().any(axis=1)
    if missing.any() and not drop_na:
        row = int(missing.idxmax())
        column = frame.columns[frame.loc[row].isna().to_numpy()][0]
        raise DataError(
            f"{int(missing.sum())} row(s) have missing values (first: row {row}, column "
            f"{column!r}); pass --drop-na to drop them"
        )
    return frame.loc[~missing], int(missing.sum())


def _numeric(frame: pd.DataFrame, what: str) -> pd.DataFrame:
    """The columns as float64; non-numeric or infinite values raise :class:`DataError`."""
    for column in frame.columns:
        values = frame[column]
        if not (pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values)):
            example = next((v for v in values if not _is_number(v)), values.iloc[0])
            raise DataError(
                f"{what} {column!r} is not numeric (e.g. {example!r}); categorical columns are "
                "not encoded automatically: encode them as numbers (e.g. one-hot) or drop them"
            )
    numeric = frame.astype(np.float64)
    infinite = ~np.isfinite(numeric.to_numpy())
    if infinite.any():
        row, col = np.argwhere(infinite)[0]
        raise DataError(
            f"{what} {numeric.columns[col]!r} holds an infinite value (row {numeric.index[row]})"
        )
    return numeric


def _is_number(value: object) -> bool:
    try:
        float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True


def first_line(error: Exception) -> str:
    """The first line of an error's message (its type's name when it has none)."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
