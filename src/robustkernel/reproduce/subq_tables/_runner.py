"""Running a SubQ table: one fit per method x corruption x eps x seed, cached; CSV and Markdown.

Each run splits the data 80/20 with the seed, corrupts eps of the training rows, fits the method
on them and scores it on the clean test rows; alpha, where the table leaves it open, is chosen
per seed by cross-validation of Oracle ERM's learner on the clean training rows
(:func:`clean_data_alpha`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold

from ..._atomic import atomic_write
from ...baselines import BASELINES
from ...corruption import ContaminatedSplit, contaminated_split, outlier_precision_recall
from ...datasets import load_dataset, make_polynomial_regression
from ...subquantile import SubquantileKernelClassifier, SubquantileKernelRegressor
from .._runs import run_cached
from ._report import table_markdown
from ._specs import METHOD_NAMES, SUBQ_STARTS, SUBQ_VARIANTS, TABLE_SPECS, SubqTable

__all__ = [
    "ALPHA_GRID",
    "SUBQ_TABLES",
    "clean_data_alpha",
    "make_model",
    "run_subq_table",
    "table_data",
    "table_split",
]

ALPHA_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)  # alpha chosen on clean data (clean_data_alpha)
TUNING_ROWS = 1000  # at most this many clean training rows (seeded subset) in that CV


@lru_cache(maxsize=4)
def _dataset(name: str, data_home: str | None, max_rows: int | None) -> tuple[np.ndarray, ...]:
    X, y = load_dataset(name, data_home=data_home)
    if max_rows is not None and max_rows < X.shape[0]:
        rows = np.sort(np.random.default_rng(0).permutation(X.shape[0])[:max_rows])
        X, y = X[rows], y[rows]
    return X, y


def table_data(
    spec: SubqTable, seed: int, data_home: str | None = None, max_rows: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(X, y) of a table: its data set (a fixed subset of ``max_rows`` rows if given), or the
    polynomial data of 002 Table 1 drawn with ``seed`` (``max_rows`` rows, default 1000)."""
    if spec.data == "polynomial":
        return make_polynomial_regression(max_rows or 1000, random_state=seed)
    return _dataset(spec.data, data_home, max_rows)


def make_model(
    spec: SubqTable, method: str, epsilon: float, n_features: int, alpha: float
) -> BaseEstimator:
    """The unfitted estimator of ``method`` for one cell of ``spec``.

    Parameters
    ----------
    spec : SubqTable
        The table.
    method : str
        A key of ``METHOD_NAMES``.
    epsilon : float
        The cell's corrupted fraction (SubQ's, SEVER's and CRR's assumed fraction).
    n_features : int
        Number of features (RBF gamma = 1 / n_features unless the table sets gamma).
    alpha : float
        Ridge penalty of every kernel method (SVM: C = 1 / (2 alpha)).

    Returns
    -------
    estimator : estimator object
        Ready to fit (Oracle ERM expects ``clean_mask=`` at fit).
    """
    kernel = {
        "kernel": spec.kernel,
        "gamma": spec.gamma if spec.gamma is not None else 1.0 / n_features,
        "degree": spec.degree,
        "coef0": spec.coef0,
    }
    regression = spec.task == "regression"
    learner = SubquantileKernelRegressor if regression else SubquantileKernelClassifier
    features = {"n_components": spec.n_components, "random_state": 0}
    if method == "subq_auto":
        return learner(kernel=spec.kernel, degree=spec.degree, coef0=spec.coef0, **features)
    if method in SUBQ_VARIANTS:
        return learner(
            epsilon=epsilon,
            alpha=alpha,
            radius=spec.radius,
            init="erm" if method == "subq_erm" else spec.init,
            n_init=SUBQ_STARTS if method == "subq_starts" else 1,
            refine=None,
            **kernel,
            **features,
        )
    if method == "oracle":
        return BASELINES["oracle"](
            estimator=learner(epsilon=0.0, alpha=alpha, **kernel, **features)
        )
    if method == "sever" and regression:
        return BASELINES["sever"](epsilon=epsilon, alpha=alpha, **kernel, **spec.sever)
    if method == "crr":
        return BASELINES["crr"](epsilon=epsilon, alpha=alpha, **kernel)
    return BASELINES[method](spec.task, alpha=alpha, **kernel)


def table_split(
    spec: SubqTable,
    kind: str,
    eps: float,
    seed: int,
    data_home: str | None = None,
    max_rows: int | None = None,
) -> ContaminatedSplit:
    """The seed's split of the table's data with eps of the training rows corrupted by ``kind``
    (:func:`robustkernel.corruption.contaminated_split` under the table's standardization)."""
    X, y = table_data(spec, seed, data_home, max_rows)
    return contaminated_split(X, y, kind, eps, standardize=spec.standardize, random_state=seed)


def clean_data_alpha(
    spec: SubqTable, seed: int, data_home: str | None = None, max_rows: int | None = None
) -> float:
    """alpha of ``ALPHA_GRID`` with the best 5-fold CV score of Oracle ERM's learner on the clean
    training split of ``seed`` (the split is the same for every eps and kind of the seed); on
    at most ``TUNING_ROWS`` of its rows, a random subset drawn with ``seed``.

    Parameters
    ----------
    spec : SubqTable
        The table.
    seed : int
        The seed of the split.
    data_home : str, default=None
        Folder of the data files.
    max_rows : int, default=None
        As in :func:`run_subq_table`.

    Returns
    -------
    alpha : float
        The chosen ridge penalty (ties go to the larger alpha).
    """
    split = table_split(spec, spec.kinds[0], 0.0, seed, data_home, max_rows)
    X, y = split.X_train_clean, split.y_train_clean
    if X.shape[0] > TUNING_ROWS:
        rows = np.random.default_rng(seed).choice(X.shape[0], TUNING_ROWS, replace=False)
        X, y = X[rows], y[rows]
    regression = spec.task == "regression"
    folds = (KFold if regression else StratifiedKFold)(5, shuffle=True, random_state=seed)
    learner = make_model(spec, "oracle", 0.0, X.shape[1], 1.0)  # alpha set by the search
    search = GridSearchCV(
        learner,
        {"estimator__alpha": sorted(ALPHA_GRID, reverse=True)},  # first best wins: larger alpha
        scoring="neg_root_mean_squared_error" if regression else "accuracy",
        cv=folds,
        refit=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search.fit(X, y)
    return float(search.best_params_["estimator__alpha"])


def _tune_one(
    key: dict[str, Any], *, table: str, data_home: str | None, max_rows: int | None
) -> dict[str, Any]:
    return {"alpha": clean_data_alpha(TABLE_SPECS[table], key["seed"], data_home, max_rows)}


def _run_one(
    key: dict[str, Any], *, table: str, data_home: str | None, max_rows: int | None
) -> dict[str, Any]:
    spec = TABLE_SPECS[table]
    split = table_split(spec, key["kind"], key["eps"], key["seed"], data_home, max_rows)
    model = make_model(spec, key["method"], key["eps"], split.X_train.shape[1], key["alpha"])
    fit_params = {"clean_mask": ~split.corrupted_mask} if key["method"] == "oracle" else {}
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(split.X_train, split.y_train, **fit_params)
    seconds = time.perf_counter() - start
    prediction = model.predict(split.X_test)
    if spec.metric == "rmse":
        value = float(np.sqrt(np.mean((prediction - split.y_test) ** 2)))
    else:
        value = float(np.mean(prediction == split.y_test))
    precision = recall = None
    if key["method"] != "oracle" and hasattr(model, "inlier_mask_") and key["eps"] > 0:
        precision, recall = outlier_precision_recall(model.inlier_mask_, split.corrupted_index)
    return {
        "metric": spec.metric,
        "value": value,
        "fit_seconds": seconds,
        "outlier_precision": precision,
        "outlier_recall": recall,
        "n_train": int(split.X_train.shape[0]),
        "n_test": int(split.X_test.shape[0]),
    }


def run_subq_table(
    table: str,
    *,
    n_jobs: int = 1,
    out_dir: str | Path = "results",
    progress: bool = True,
    repetitions: int = 5,
    backend: str | None = None,
    data_home: str | Path | None = None,
    methods: Sequence[str] | None = None,
    max_rows: int | None = None,
) -> dict[str, Path]:
    """Run every method x corruption x eps x seed of a SubQ table; write its CSV and Markdown.

    Parameters
    ----------
    table : str
        A key of :data:`TABLE_SPECS`.
    n_jobs : int, default=1
        Parallel runs (joblib; one BLAS thread each).
    out_dir : str or Path, default="results"
        Output folder; finished runs are cached in ``out_dir/.cache/<table>/``.
    progress : bool, default=True
        Show a progress bar.
    repetitions : int, default=5
        Seeds 0, ..., repetitions - 1.
    backend : str, default=None
        joblib backend (see :func:`robustkernel.reproduce._runs.run_cached`), e.g. "dask".
    data_home : str or Path, default=None
        Folder of the data files (default: ``ROBUSTKERNEL_DATA`` or the user cache).
    methods : sequence of str, default=None
        Run only these methods (default: the table's).
    max_rows : int, default=None
        Use a fixed random subset of this many rows of the data set (quick checks).

    Returns
    -------
    paths : dict of str to Path
        ``"csv"`` and ``"table"`` (Markdown).
    """
    if table not in TABLE_SPECS:
        raise ValueError(f"Unknown SubQ table {table!r}; choose from {sorted(TABLE_SPECS)}.")
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1; got {repetitions}.")
    spec = TABLE_SPECS[table]
    methods = tuple(spec.methods if methods is None else methods)
    unknown = sorted(set(methods) - set(METHOD_NAMES))
    if unknown:
        raise ValueError(f"Unknown method(s) {unknown}; choose from {sorted(METHOD_NAMES)}.")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    home = None if data_home is None else str(data_home)
    options = {"n_jobs": n_jobs, "backend": backend, "progress": progress}
    fingerprint = spec.settings() + repr(max_rows)
    seeds = range(repetitions)
    if spec.alpha is None:
        tuned = run_cached(
            partial(_tune_one, table=table, data_home=home, max_rows=max_rows),
            [{"tune": "alpha", "seed": seed} for seed in seeds],
            out / ".cache" / table,
            fingerprint=fingerprint + repr(ALPHA_GRID),
            description=f"{table} alpha",
            **options,
        )
        alphas = dict(zip(tuned["seed"], tuned["alpha"], strict=True))
    else:
        alphas = dict.fromkeys(seeds, spec.alpha)
    keys = [
        {"method": method, "kind": kind, "eps": eps, "seed": seed, "alpha": float(alphas[seed])}
        for kind in spec.kinds
        for eps in spec.epsilons
        for seed in seeds
        for method in methods
    ]
    frame = run_cached(
        partial(_run_one, table=table, data_home=home, max_rows=max_rows),
        keys,
        out / ".cache" / table,
        fingerprint=fingerprint,
        description=table,
        **options,
    )
    csv_path, md_path = out / f"{table}.csv", out / f"{table}.md"
    atomic_write(csv_path, frame.to_csv(index=False))
    atomic_write(md_path, table_markdown(frame, spec, repetitions))
    return {"csv": csv_path, "table": md_path}


def _runner(table: str) -> Callable[..., dict[str, Path]]:
    runner = partial(run_subq_table, table)
    runner.__doc__ = f"Reproduce {table} ({TABLE_SPECS[table].source})."
    return runner


SUBQ_TABLES: dict[str, Callable[..., dict[str, Path]]] = {
    name: _runner(name) for name in TABLE_SPECS
}
