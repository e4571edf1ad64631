"""What the automatic configuration costs: fit time against the grid search it replaces.

Regression: ``SubquantileKernelRegressor()`` (kernel, epsilon, alpha, gamma "auto": the
high-breakdown start and the kernel choice), and the same with kernel="rbf" (the previous
defaults: epsilon, alpha, gamma "auto" on the rbf kernel), against KernelRidge(rbf) + 5-fold
GridSearchCV over the same grid (the 7 gammas of ``gamma_grid`` x the 11 alphas of ``ALPHAS``)
and against the scorecard's KernelRidge + GridSearchCV (``StandardScaler`` and rbf, 5 alphas x 5
gammas, 5 folds: ``harness.peers.issue_krr_search``), on the generated problem of
``bench_robust.py`` (sin(2 x1) + x2 x3 + 0.5 x4^2 + noise, 5 features) with 20% of the training
targets replaced by N(5, variance 5), n training rows. Classification (left out with
``--scorecard``, which also keeps only the defaults and the 25-point grid search): the
multiclass fit on scikit-learn's digits (1797 x 64, 10 classes, features / 16, 20% of the labels
replaced by a random class) against SVC(rbf) with its defaults and against SVC + 5-fold
GridSearchCV over the C x gamma grid of ``bench_robust.py``; also the classifier with epsilon,
alpha and gamma given (gamma = SVC's "scale", 1 / (n_features Var(X))), with refine="reject"
(the default before refine="auto") and with refine=None (the papers' estimator; the default
refine="auto" at a given epsilon is the same fit). Every fit runs with one BLAS thread in this
process; each time is the median of ``--repeats`` fits; the table also gives the process CPU
time of the fits and the test metric on clean rows.

    python benchmarks/bench_fit_time.py [--n 2000 ...] [--repeats 3] [--scorecard]
                                        [--no-write] [--json FILE]

prints the table and writes it into BENCHMARKS.md (section "Fit time of the automatic
configuration (bench_fit_time.py)"); several ``--n`` give the regression rows at each (the cost
curve); ``--json`` also writes the rows unrounded as JSON (the scorecard). Run it alone: no
other job on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from harness.peers import (  # the SVC grid search of bench_robust.py; the issue's KRR grid
    CV_FOLDS,
    Context,
    issue_krr_search,
    svc_cv,
)
from harness.timing import timed, write_section
from sklearn.datasets import load_digits
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.subquantile._automatic.hyperparameters import ALPHAS, gamma_grid

SECTION = "## Fit time of the automatic configuration (bench_fit_time.py)"
ISSUE_GRID = "KernelRidge + GridSearchCV (25 x 5 fits, scaled)"  # the scorecard's cost reference
SCORECARD_METHODS = ("SubquantileKernelRegressor()", ISSUE_GRID)


def regression_data(n_train: int, seed: int = 0):
    """The generated problem, 20% of the training targets replaced; 1000 clean test rows."""
    rng = np.random.default_rng(seed)
    n = n_train + 1000
    X = rng.uniform(-2, 2, size=(n, 5))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * X[:, 3] ** 2 + 0.1 * rng.normal(size=n)
    y_train = y[:n_train].copy()
    bad = rng.choice(n_train, size=n_train // 5, replace=False)
    y_train[bad] = rng.normal(5.0, np.sqrt(5.0), size=bad.size)
    return X[:n_train], y_train, X[n_train:], y[n_train:]


def digits_data(seed: int = 0):
    """Digits / 16, a stratified 80/20 split, 20% of the training labels replaced."""
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), dtype=bool)
    for label in np.unique(y):
        rows = np.flatnonzero(y == label)
        test[rng.choice(rows, size=len(rows) // 5, replace=False)] = True
    y_train = y[~test].copy()
    bad = rng.choice(y_train.size, size=y_train.size // 5, replace=False)
    y_train[bad] = rng.integers(0, 10, size=bad.size)
    return X[~test], y_train, X[test], y[test]




def rows_for(
    problem: str,
    methods: dict[str, Callable[[], object]],
    data: tuple,
    metric: Callable,
    metric_name: str,
    reference: str,
    repeats: int,
    raw: list[dict] | None = None,
) -> list[dict]:
    """The table's rows; ``raw`` (if given) gets the same unrounded, with the metric a number."""
    X, y, X_test, y_test = data
    results = {name: timed(make, X, y, repeats) for name, make in methods.items()}
    base = results[reference][0]
    scores = {
        name: float(metric(model.predict(X_test), y_test))
        for name, (_, _, model) in results.items()
    }
    if raw is not None:
        raw.extend(
            {
                "problem": problem,
                "task": problem.split(",")[0],
                "n": int(X.shape[0]),
                "method": name,
                "fit s (median)": wall,
                "CPU s": cpu,
                "fit-time ratio": wall / base,
                "ratio to": reference,
                "metric": metric_name,
                "test metric": scores[name],
                "repeats": repeats,
            }
            for name, (wall, cpu, _) in results.items()
        )
    return [
        {
            "problem": problem,
            "method": name,
            "fit s (median)": round(wall, 3),
            "CPU s": round(cpu, 3),
            "fit-time ratio": round(wall / base, 2),
            "ratio to": reference,
            "test metric": f"{metric_name} {scores[name]:.4f}",
        }
        for name, (wall, cpu, _) in results.items()
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--n", type=int, nargs="+", default=[2000], help="regression training rows (one or more)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--scorecard",
        action="store_true",
        help="only what the scorecard reads: the regression rows of the defaults and of the "
        "25-point grid search",
    )
    parser.add_argument("--no-write", action="store_true", help="do not update BENCHMARKS.md")
    parser.add_argument(
        "--json", type=Path, default=None, help="also write the rows, unrounded (the scorecard)"
    )
    args = parser.parse_args(argv)
    raw: list[dict] = []
    regression: list[dict] = []
    load_before = os.getloadavg()
    start = time.perf_counter()
    with threadpool_limits(1):
        for n in args.n:
            data = regression_data(n)
            X = data[0]
            grid = {"alpha": list(ALPHAS), "gamma": gamma_grid(X)}
            folds = KFold(CV_FOLDS, shuffle=True, random_state=0)
            methods = {
                "SubquantileKernelRegressor()": SubquantileKernelRegressor,
                'SubquantileKernelRegressor(kernel="rbf")': lambda: SubquantileKernelRegressor(
                    kernel="rbf"
                ),
                "KernelRidge + GridSearchCV (77 x 5 fits)": lambda grid=grid, folds=folds: (
                    GridSearchCV(KernelRidge(kernel="rbf"), grid, cv=folds)
                ),
                ISSUE_GRID: lambda: issue_krr_search(0),
            }
            if args.scorecard:
                methods = {name: methods[name] for name in SCORECARD_METHODS}
            regression += rows_for(
                f"regression, generated, n = {n}, 20% labels",
                methods,
                data,
                lambda p, t: np.sqrt(np.mean((p - t) ** 2)),
                "RMSE",
                ISSUE_GRID if args.scorecard else "KernelRidge + GridSearchCV (77 x 5 fits)",
                args.repeats,
                raw,
            )
        classification: list[dict] = []
        if not args.scorecard:
            digits = digits_data()
            scale = 1.0 / (digits[0].shape[1] * digits[0].var())  # SVC's gamma="scale"
            given = {"epsilon": 0.2, "alpha": 0.1, "gamma": scale}
            classification = rows_for(
                f"classification, digits, n = {digits[0].shape[0]}, 10 classes, 20% labels",
                {
                    "SubquantileKernelClassifier()": lambda: SubquantileKernelClassifier(
                        random_state=0
                    ),
                    'SubquantileKernelClassifier(epsilon=0.2, alpha=0.1, gamma=scale, '
                    'refine="reject")': lambda: SubquantileKernelClassifier(
                        **given, refine="reject"
                    ),
                    "... the same, refine=None": lambda: SubquantileKernelClassifier(
                        **given, refine=None
                    ),
                    "SVC()": SVC,
                    "SVC + GridSearchCV (20 x 5 fits)": lambda: svc_cv(
                        Context(0.2, digits[0].shape[0], digits[0].shape[1], 0)
                    ),
                },
                digits,
                lambda p, t: np.mean(p == t),
                "accuracy",
                "SVC()",
                args.repeats,
                raw,
            )
    write_section(
        SECTION,
        "bench_fit_time.py",
        sys.argv[1:] if argv is None else argv,
        load_before,
        start,
        __doc__.split("\n\n")[1],
        pd.DataFrame(regression + classification),
        args.no_write,
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"rows": raw}))
    return 0




if __name__ == "__main__":
    raise SystemExit(main())
