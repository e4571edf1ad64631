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
  carry it. Encode them yourself (e.g. ``pandas.get_dummies``) or drop them. ISO dates are the
  exception: :mod:`._layout` turns them into days (and leaves out the file's index column).
* Missing values are an error unless ``drop_na`` is set; infinite values are always an error.
* A regression target must be numeric; a classification target may hold any labels.
* A table with several problems gets one error naming them all (numbered): every non-numeric
  column with an example (text, dates not in ISO form, numbers with a few text cells), every
  column with infinite values, the missing values per column with the rows ``--drop-na`` would
  keep, and the column whose missing values cost the most rows when leaving it out
  (``--drop-columns``) would keep many more.
"""

from __future__ import annotations

import csv
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ._common import DataError
from ._layout import Layout, looks_like_dates

MIN_TRAINING_ROWS = 10
MAX_CLASS_LIKE_VALUES = 5
"""A regression target with at most this many distinct whole numbers looks like classes."""
DELIMITERS = ",;\t| "
ENCODING = "utf-8-sig"  # UTF-8, with or without a byte order mark
_SNIFF_CHARACTERS = 64 * 1024
_SNIFF_LINES = 50


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
    layout: Layout | None = None,
) -> Table:
    """Split ``frame`` into numeric features and the target column ``target``, validated.

    The columns ``exclude`` and those ``layout`` leaves out are no features (they stay in
    ``original``, the rows as read); ``layout`` also turns its date columns into days.

    Raises
    ------
    DataError
        The target is missing, no feature is left, or the table has problems: every one of
        them in the message (non-numeric or infinite values per column, missing values per
        column with what ``--drop-na`` would keep, too few rows, unusable class labels).
    """
    if target not in frame.columns:
        raise DataError(
            f"target column {target!r} not found; columns are {', '.join(map(str, frame.columns))}"
        )
    converted = frame if layout is None else layout.apply(frame)
    features = [name for name in converted.columns if name != target and name not in exclude]
    if not features:
        raise DataError("the table has no feature column besides the target")
    used = converted[[*features, target]]
    problems = [
        problem
        for column in features
        if (problem := _non_numeric(used[column], f"feature column {column!r}", droppable=True))
    ]
    if not classification and (
        problem := _non_numeric(used[target], f"target column {target!r}", target=True)
    ):
        problems.append(problem)
    problems += _infinite(used)
    complete = ~used.isna().any(axis=1).to_numpy()
    problems += _rows_problems(used, complete, drop_na, min_rows, droppable=features)
    y = used[target][complete]
    if classification and not problems:
        try:
            check_class_counts(y.value_counts(), target)
        except DataError as error:
            problems.append(str(error))
    raise_problems(problems)
    X = used[features][complete].astype(np.float64)
    if not classification:
        y = y.astype(np.float64)
    return Table(
        X=X,
        y=y,
        rows=frame.index.to_numpy()[complete],
        original=frame[complete],
        n_dropped=int((~complete).sum()),
    )


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


def class_like_target(y: pd.Series, target: str) -> str | None:
    """A warning when the numeric target ``y`` of a regression looks like class labels: at
    most :data:`MAX_CLASS_LIKE_VALUES` distinct whole numbers (0 / 1, say); else None."""
    values = np.unique(np.asarray(y, dtype=np.float64))
    if len(values) > MAX_CLASS_LIKE_VALUES or not np.all(values == np.round(values)):
        return None
    return (
        f"target column {target!r} holds only the values {', '.join(f'{v:g}' for v in values)}: "
        "it looks like class labels, but this fit is a regression (the default --task); pass "
        "--task classification to fit classes"
    )


def feature_table(
    frame: pd.DataFrame, columns: list[str], *, drop_na: bool = False, min_rows: int = 1
) -> Table:
    """The numeric feature columns ``columns`` of ``frame`` (other columns are ignored).

    Raises
    ------
    DataError
        A column is missing, or the columns have problems: every one of them in the message.
    """
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        hint = ""
        if any(re.fullmatch(r"Unnamed: \d+", column) for column in missing):
            hint = (
                " (the model was fitted with the file's index column as a feature: refit it, "
                "fit now leaves the index out)"
            )
        raise DataError(f"feature column(s) missing from the table: {', '.join(missing)}{hint}")
    used = frame[columns]
    problems = [
        problem
        for column in columns
        if (problem := _non_numeric(used[column], f"feature column {column!r}"))
    ]
    problems += _infinite(used)
    complete = ~used.isna().any(axis=1).to_numpy()
    problems += _rows_problems(used, complete, drop_na, min_rows)
    raise_problems(problems)
    return Table(
        X=used[complete].astype(np.float64),
        y=None,
        rows=frame.index.to_numpy()[complete],
        original=used[complete],
        n_dropped=int((~complete).sum()),
    )


def raise_problems(problems: list[str]) -> None:
    """Raise one :class:`DataError` naming every problem (numbered when there are several)."""
    if len(problems) == 1:
        raise DataError(problems[0])
    if problems:
        numbered = "; ".join(f"({number}) {text}" for number, text in enumerate(problems, 1))
        raise DataError(f"the table has {len(problems)} problems: {numbered}")


def _non_numeric(
    values: pd.Series, name: str, *, droppable: bool = False, target: bool = False
) -> str | None:
    """What is wrong with a column that is not numeric (None when it is, or holds no value),
    and what to do."""
    present = values.dropna()
    if (
        pd.api.types.is_numeric_dtype(values)
        or pd.api.types.is_bool_dtype(values)
        or present.empty
    ):
        return None
    text = [value for value in present if not _is_number(value)]
    leave_out = f" or leave it out with --drop-columns {values.name}" if droppable else ""
    example = repr(text[0]) if text else repr(present.iloc[0])
    if text and len(text) < len(present):
        row = present.index[[not _is_number(value) for value in present]][0]
        return (
            f"{name} holds numbers but text in {len(text)} row(s) (e.g. {example}, row {row}): "
            "correct those cells, or empty them to make them missing values"
        )
    if target:
        return (
            f"{name} holds text (e.g. {example}): a regression needs numbers; for class labels "
            "pass --task classification"
        )
    if looks_like_dates(values):
        return (
            f"{name} holds dates not written as ISO dates (e.g. {example}): write them as "
            f"YYYY-MM-DD (fit then counts days since the first date){leave_out}"
        )
    return (
        f"{name} holds text (e.g. {example}); categorical columns are not encoded "
        "automatically: encode it as numbers (e.g. one-hot with pandas.get_dummies)"
        f"{leave_out or ' or drop it'}"
    )


def _infinite(frame: pd.DataFrame) -> list[str]:
    """One problem per numeric column holding infinite values: how many rows, the first."""
    problems = []
    for column in frame.columns:
        values = frame[column]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            infinite = np.isinf(values.to_numpy(dtype=np.float64))
            if infinite.any():
                problems.append(
                    f"column {column!r} holds an infinite value in {int(infinite.sum())} row(s) "
                    f"(first: row {values.index[infinite][0]})"
                )
    return problems


def _rows_problems(
    frame: pd.DataFrame,
    complete: np.ndarray,
    drop_na: bool,
    min_rows: int,
    droppable: list[str] | None = None,
) -> list[str]:
    """The missing values (a problem unless ``drop_na``: rows per column and what --drop-na
    would keep) and too few usable rows; with ``drop_na``, a column that costs many rows is
    named in a warning. ``droppable``: the columns ``--drop-columns`` may leave out."""
    n_rows, n_complete = len(frame), int(complete.sum())
    saving = _costly_column(frame, complete, droppable or [])
    problems = []
    if n_complete < n_rows and not drop_na:
        missing = frame.isna().sum()
        columns = ", ".join(
            f"{column!r} {int(count)} ({_kind(frame[column])}; first: row "
            f"{frame.index[frame[column].isna()][0]})"
            for column, count in missing[missing > 0].items()
        )
        problems.append(
            f"{n_rows - n_complete} row(s) have missing values, per column: {columns}; "
            f"--drop-na would keep {n_complete} of {n_rows} rows{saving}"
        )
    usable = n_complete if drop_na else n_rows
    if usable < min_rows:
        after = f" after --drop-na{saving}" if drop_na and n_complete < n_rows else ""
        problems.append(f"too few rows: {usable} usable{after}, at least {min_rows} needed")
    elif drop_na and saving:
        warnings.warn(
            f"--drop-na dropped {n_rows - n_complete} of {n_rows} rows{saving}", stacklevel=2
        )
    return problems


def _kind(values: pd.Series) -> str:
    """The kind of values a column holds, in words: numbers, true/false, text or empty."""
    if values.isna().all():
        return "empty"
    if pd.api.types.is_bool_dtype(values.dropna()):
        return "true/false"
    return "numbers" if pd.api.types.is_numeric_dtype(values) else "text"


def _costly_column(frame: pd.DataFrame, complete: np.ndarray, droppable: list[str]) -> str:
    """``, leaving out 'c' (--drop-columns c) would keep N`` for the column of ``droppable``
    whose missing values cost the most rows, when leaving it out keeps at least 5% of the
    rows more (and one row); else ``""``."""
    missing = frame.isna().to_numpy()
    best, kept = None, int(complete.sum())
    for j, column in enumerate(frame.columns):
        if column in droppable and missing[:, j].any():
            without = int((~np.delete(missing, j, axis=1).any(axis=1)).sum())
            if without > kept:
                best, kept = column, without
    if best is None or kept - int(complete.sum()) < max(1, 0.05 * len(frame)):
        return ""
    return f", leaving out {best!r} (--drop-columns {best}) would keep {kept}"


def _is_number(value: object) -> bool:
    try:
        float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return True


def first_line(error: Exception) -> str:
    """The first line of an error's message (its type's name when it has none)."""
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
