"""What ``fit`` decides about a CSV table's columns before it takes the features.

Three decisions, written into the report and stored with the model (:data:`ATTRIBUTE`, plain
strings, so that skops loads it), so that ``predict`` applies the same to a new table:

* **The index column** is left out. R's ``write.csv`` writes the row names as a first column
  with an empty header (``""``, rows ``1..n``), pandas' ``to_csv()`` writes its index the same
  way (an empty header, rows ``0..n-1``) or under the index's name. Fitted as a feature, the
  row number would steer the kernel's distances, and ``predict`` would need the column. A first
  column is the index when its header is empty (pandas reads it as ``Unnamed: 0``) and its
  values are distinct, or when its values are the row numbers ``0..n-1`` or ``1..n``.
  ``--index-column none`` keeps it as a feature.
* **Columns dropped on request** (``--drop-columns``) are left out.
* **ISO dates** (``2024-03-31``, ``2024-03-31T12:00``, an offset allowed) become numbers: days
  since the first date of the column in the training table (fractions of a day for times;
  offsets converted to UTC). ``predict`` counts from the same first date, which the model stores.

``predict`` accepts a table with or without the index column: it takes the model's features
by name and converts the dates the model names.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ._common import INDEX_CHOICES, DataError

ATTRIBUTE = "table_layout_"
"""The model attribute that stores the layout (a dict of strings) for ``predict``."""

ISO_DATE = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
)
"""An ISO 8601 date, optionally with a time and an offset (what pandas' ``ISO8601`` reads)."""

OTHER_DATE = re.compile(
    r"(?:\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}|\d{4}[/.]\d{1,2}[/.]\d{1,2})(?:[ T]\d{1,2}:\d{2}.*)?"
)
"""Dates in another order or with other separators (``31/03/2024``, ``3.31.24``,
``2024/03/31``): named as dates in the error, not guessed (day or month first is ambiguous)."""


@dataclass(frozen=True)
class Layout:
    """The columns ``fit`` left out or converted, as stored with the model.

    Attributes
    ----------
    index_column : str or None
        The table's index column, left out (None: no index column).
    dropped : tuple of str
        Columns left out by ``--drop-columns``.
    dates : tuple of (str, str)
        ``(column, first date)`` of each ISO date column, counted in days since its first date
        (an ISO timestamp in UTC).
    """

    index_column: str | None = None
    dropped: tuple[str, ...] = ()
    dates: tuple[tuple[str, str], ...] = ()

    @property
    def left_out(self) -> list[str]:
        """The columns that are no features: the index column and the dropped ones."""
        return [*([self.index_column] if self.index_column is not None else []), *self.dropped]

    def to_dict(self) -> dict[str, Any]:
        """The layout as plain strings and lists (what the model file stores)."""
        return {
            "index_column": self.index_column,
            "dropped_columns": list(self.dropped),
            "date_origins": dict(self.dates),
        }

    @classmethod
    def of_model(cls, model: Any) -> Layout:
        """The layout stored with ``model`` (none for a model fitted before layouts were)."""
        stored = getattr(model, ATTRIBUTE, None) or {}
        return cls(
            index_column=stored.get("index_column"),
            dropped=tuple(stored.get("dropped_columns", ())),
            dates=tuple(stored.get("date_origins", {}).items()),
        )

    def store(self, model: Any) -> None:
        """Attach the layout to ``model`` before it is saved."""
        setattr(model, ATTRIBUTE, self.to_dict())

    def apply(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` without the columns left out (those present) and with its date columns
        as days since the stored first dates.

        Raises
        ------
        DataError
            A date column holds a value that is not an ISO date (named, with its row).
        """
        frame = frame.drop(columns=[name for name in self.left_out if name in frame.columns])
        for column, origin in self.dates:
            if column in frame.columns:
                frame[column] = _days_since(frame[column], column, pd.Timestamp(origin))
        return frame

    def notes(self) -> dict[str, str]:
        """The report's lines on the columns left out or converted (empty when none): the
        index column and the date columns (decided by ``fit``), the columns dropped on
        request (under the key ``--drop-columns``)."""
        notes = {}
        if self.index_column is not None:
            notes[f"index column {self.index_column!r}"] = (
                "the file's row names or numbers (as R's write.csv and pandas' to_csv write "
                "them): left out of the features (--index-column none keeps it)"
            )
        for column, origin in self.dates:
            notes[f"date column {column!r}"] = (
                f"ISO dates, fitted as days since the first date, {_day(origin)} "
                "(fractions of a day for times)"
            )
        if self.dropped:
            notes["--drop-columns"] = f"left out: {', '.join(map(repr, self.dropped))}"
        return notes


def split_column_lists(names: Collection[str], columns: Collection[object]) -> list[str]:
    """``names`` as given (``a b``, ``a,b`` or the option repeated) read as column names: a name
    that is a column of ``columns`` stays whole (a header may hold a comma), any other is split
    at its commas, the parts stripped of spaces and the empty ones left out."""
    present = set(columns)
    split: list[str] = []
    for name in names:
        if name in present or "," not in name:
            split.append(name)
        else:
            split.extend(part.strip() for part in name.split(",") if part.strip())
    return split


def decide_layout(
    frame: pd.DataFrame,
    *,
    keep: Collection[str],
    drop_columns: Collection[str] = (),
    index_column: str = "auto",
) -> Layout:
    """What ``fit`` leaves out of ``frame`` and converts: the index column (``index_column``
    "auto": detected; "none": no index column), the columns ``drop_columns``, the ISO date
    columns. The columns ``keep`` (the target, ``--known-outliers``) are never touched.

    Raises
    ------
    DataError
        ``drop_columns`` names a column the table lacks, or one of ``keep``.
    """
    if index_column not in INDEX_CHOICES:
        raise DataError(f"--index-column must be one of {', '.join(INDEX_CHOICES)}")
    drop_columns = split_column_lists(drop_columns, frame.columns)
    absent = [name for name in drop_columns if name not in frame.columns]
    if absent:
        raise DataError(
            f"--drop-columns: no column {', '.join(map(repr, absent))}; columns are "
            f"{', '.join(map(str, frame.columns))}"
        )
    kept = [name for name in drop_columns if name in keep]
    if kept:
        raise DataError(
            f"--drop-columns names {kept[0]!r}, which the command needs (the --target or "
            "--known-outliers column)"
        )
    index = find_index_column(frame) if index_column == "auto" else None
    if index is not None and (index in keep or index in drop_columns):
        index = None
    left_out = {*drop_columns, *([index] if index is not None else [])}
    dates = tuple(
        (column, _first_date(frame[column]).isoformat())
        for column in frame.columns
        if column not in left_out and column not in keep and is_iso_dates(frame[column])
    )
    return Layout(index_column=index, dropped=tuple(dict.fromkeys(drop_columns)), dates=dates)


def find_index_column(frame: pd.DataFrame) -> str | None:
    """The first column of ``frame`` if it is the file's index (R's or pandas' row names or
    numbers), else None: an empty header with distinct values, or the values ``0..n-1`` or
    ``1..n`` under any header. A table of one column has none."""
    if frame.shape[1] < 2 or len(frame) == 0:
        return None
    name, values = frame.columns[0], frame.iloc[:, 0]
    if values.isna().any():
        return None
    unnamed = re.fullmatch(r"Unnamed: 0|\s*", str(name)) is not None
    if unnamed and values.is_unique:
        return str(name)
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        numbers = values.to_numpy(dtype=np.float64)
        start = numbers[0]
        if start in (0, 1) and np.array_equal(numbers, np.arange(start, start + len(numbers))):
            return str(name)
    return None


def is_iso_dates(values: pd.Series) -> bool:
    """Whether ``values`` are text holding ISO dates only (missing values aside; at least one
    date), every one of them a valid date."""
    present = values.dropna()
    if present.empty or pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return False
    text = present.astype(str).str.strip()
    return bool(text.str.fullmatch(ISO_DATE).all() and _parse(text).notna().all())


def looks_like_dates(values: pd.Series) -> bool:
    """Whether the text ``values`` are dates (ISO or not) that :func:`is_iso_dates` refuses."""
    text = values.dropna().astype(str).str.strip()
    dates = text.str.fullmatch(ISO_DATE) | text.str.fullmatch(OTHER_DATE)
    return not text.empty and bool(dates.all())


def _parse(text: pd.Series) -> pd.Series:
    """ISO dates as UTC timestamps (NaT where invalid, e.g. 2024-02-30)."""
    return pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")


def _first_date(values: pd.Series) -> pd.Timestamp:
    return _parse(values.dropna().astype(str).str.strip()).min()


def _days_since(values: pd.Series, column: str, origin: pd.Timestamp) -> pd.Series:
    """The ISO dates ``values`` as days since ``origin`` (missing values stay missing)."""
    present = values.notna()
    text = values[present].astype(str).str.strip()
    parsed = _parse(text)
    valid = text.str.fullmatch(ISO_DATE) & parsed.notna()
    if not valid.all():
        row = valid.index[~valid.to_numpy()][0]
        raise DataError(
            f"date column {column!r} holds {values[row]!r} (row {row}), not an ISO date "
            "(YYYY-MM-DD); the model counts this column in days since its first date"
        )
    days = pd.Series(np.nan, index=values.index, dtype=np.float64)
    days[present] = (parsed - origin) / pd.Timedelta(days=1)
    return days


def _day(timestamp: str) -> str:
    """``2024-03-31`` for a timestamp at midnight, the full ISO timestamp otherwise."""
    moment = pd.Timestamp(timestamp)
    return moment.date().isoformat() if moment == moment.normalize() else moment.isoformat()
