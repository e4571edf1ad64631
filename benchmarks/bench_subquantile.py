"""Fit time and accuracy of the Subquantile solvers against scikit-learn's KernelRidge.

RBF kernel ridge regression with 20% of the training labels replaced by N(5, variance 5), at
n = 500 ... 4000 training rows. For each n and solver: the median fit time over ``--repeats``
runs as a ratio to one KernelRidge fit on the same rows in the same process, the number of
iterations, and the test RMSE as a ratio to Oracle ERM (KRR with intercept on the clean rows).

    python benchmarks/bench_subquantile.py [--sizes 500 1000 2000 4000] [--repeats 3]

prints the table and writes it into BENCHMARKS.md (section "Subquantile solvers").
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from harness.data import EPSILON, PARAMS, make_data
from harness.report import cpu_description, markdown_table, replace_markdown_section
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import root_mean_squared_error

from robustkernel import SubquantileKernelRegressor

SOLVERS = {
    "alternating": {"solver": "alternating"},
    "gd": {"solver": "gd", "max_iter": 500},
    "momentum": {"solver": "momentum", "max_iter": 500},
    "nesterov": {"solver": "nesterov", "max_iter": 500},
}
SECTION = "## Subquantile solvers"




def median_fit(make, X, y, repeats: int):
    """Median wall time of ``repeats`` fits and the last fitted model."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        model = make().fit(X, y)
        times.append(time.perf_counter() - start)
    return statistics.median(times), model


def bench_size(n: int, repeats: int) -> list[dict]:
    X, y, X_test, y_test, clean = make_data(n)
    krr_time, _ = median_fit(lambda: KernelRidge(**PARAMS), X, y, repeats)
    oracle = SubquantileKernelRegressor(epsilon=0.0, **PARAMS).fit(X[clean], y[clean])
    oracle_rmse = root_mean_squared_error(y_test, oracle.predict(X_test))
    rows = []
    for name, options in SOLVERS.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning at the 500-iteration cap
            seconds, model = median_fit(
                lambda options=options: SubquantileKernelRegressor(
                    epsilon=EPSILON, **PARAMS, **options
                ),
                X,
                y,
                repeats,
            )
        rmse = root_mean_squared_error(y_test, model.predict(X_test))
        recall = np.mean(~model.inlier_mask_[np.setdiff1d(np.arange(n), clean)])
        rows.append(
            {
                "n": n,
                "solver": name,
                "fit s (median)": round(seconds, 3),
                "KernelRidge fit s": round(krr_time, 3),
                "time / KernelRidge": round(seconds / krr_time, 2),
                "iterations": model.n_iter_,
                "converged": model.converged_,
                "test RMSE / Oracle": round(rmse / oracle_rmse, 4),
                "outlier recall": round(recall, 3),
            }
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 4000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(  # the repository's BENCHMARKS.md, wherever the script runs from
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
    )
    args = parser.parse_args()
    rows = [row for n in args.sizes for row in bench_size(n, args.repeats)]
    table = markdown_table(pd.DataFrame(rows))
    print(table)
    command = "python benchmarks/bench_subquantile.py " + " ".join(
        ["--sizes", *map(str, args.sizes), "--repeats", str(args.repeats)]
    )
    body = (
        f"{SECTION}\n\n"
        f"RBF kernel ridge regression (alpha={PARAMS['alpha']}, gamma={PARAMS['gamma']}, 5 "
        f"features), eps = {EPSILON} of the training labels replaced by N(5, variance 5), "
        "1000 clean test rows. Times are medians of the repeats; 'time / KernelRidge' divides "
        "by the median time of one `sklearn.kernel_ridge.KernelRidge` fit on the same rows in "
        "the same process. Gradient solvers are capped at 500 iterations.\n\n"
        f"Command: `{command}`  \n"
        f"Machine: {platform.machine()}, {cpu_description()}, "
        f"Python {platform.python_version()}, numpy {np.__version__}.\n\n" + table
    )
    replace_markdown_section(Path(args.out), SECTION, body)


if __name__ == "__main__":
    main()
