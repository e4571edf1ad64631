"""Subquantile minimization beyond kernel ridge: GLM links, any estimator, two-layer networks.

Each cell fits three models on the same contaminated training rows: the **oracle** (the model on
the clean rows only), the **plain** model (every row) and the **Subquantile** version, and
reports test RMSE against the noiseless function, as ratios to the oracle's. Data:

* ``friedman``: Friedman #1 (10 features, noise sd 1), 1000 training rows, targets standardized,
  20% replaced by N(5, variance 5) (``corrupt(kind="label")``);
* ``teacher``: a fixed two-layer tanh network (10 inputs, 16 hidden units), noise sd 0.1,
  1000 rows, 20% of the targets replaced by N(5, variance 5);
* ``proportions``: targets in (0, 1), logistic(2 sin x1 + x2) + noise sd 0.05 on 300 rows of
  [-2, 2]^2, 20% replaced by uniform draws on (0, 1): the kernelized GLM
  (``SubquantileKernelRegressor(link="logistic")``, rbf kernel, alpha 1e-3, gamma 0.1 for every
  fit) against the identity link.

Models: ``SubquantileRegressor`` around ``HistGradientBoostingRegressor`` and around a scaled
``MLPRegressor`` (epsilon="auto"; and a given epsilon = 0.2 with in-sample or 5-fold losses);
``SubquantileMLPRegressor`` (16 hidden units, epsilon = 0.2) full-batch Nesterov, and mini-batches
of 64 with the kept rows refreshed from the full data every epoch (``selection="refresh"``) or
chosen within each batch (``"batch"``), at the same number of epochs. The plain and oracle fits
are the same estimators with epsilon = 0 (networks) or the bare estimator.

Writes ``benchmarks/results/models.md`` and the section "Beyond kernels" of BENCHMARKS.md.

    python benchmarks/bench_models.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from harness.report import cpu_description, markdown_table, replace_markdown_section
from sklearn.base import clone
from sklearn.datasets import make_friedman1
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from robustkernel import (
    SubquantileKernelRegressor,
    SubquantileMLPRegressor,
    SubquantileRegressor,
)
from robustkernel.corruption import corrupt

ROOT = Path(__file__).resolve().parents[1]
HEADING = "## Beyond kernel ridge: GLM links, any estimator, two-layer networks (20% bad targets)"


def friedman(seed: int):
    X, y = make_friedman1(n_samples=1000, noise=1.0, random_state=seed)
    X_test, f_test = make_friedman1(n_samples=2000, noise=0.0, random_state=100 + seed)
    mean, sd = y.mean(), y.std()
    bad = corrupt(X, (y - mean) / sd, "label", 0.2, random_state=seed)
    return X, (y - mean) / sd, bad.y, bad.index, X_test, (f_test - mean) / sd


def teacher(seed: int):
    weights = np.random.default_rng(1000)
    W = weights.normal(size=(10, 16)) / np.sqrt(10)
    a = 2.0 * weights.normal(size=16) / 4.0

    def draw(s: int, n: int):
        X = np.random.default_rng(s).normal(size=(n, 10))
        return X, np.tanh(X @ W) @ a

    X, f = draw(seed, 1000)
    X_test, f_test = draw(100 + seed, 2000)
    rng = np.random.default_rng(seed)
    y = f + 0.1 * rng.normal(size=1000)
    index = rng.choice(1000, 200, replace=False)
    y_bad = y.copy()
    y_bad[index] = rng.normal(5.0, np.sqrt(5.0), size=200)
    return X, y, y_bad, np.sort(index), X_test, f_test


def proportions(seed: int):
    def draw(s: int, n: int):
        rng = np.random.default_rng(s)
        X = rng.uniform(-2, 2, size=(n, 2))
        p = 1.0 / (1.0 + np.exp(-(2.0 * np.sin(X[:, 0]) + X[:, 1])))
        return X, np.clip(p + 0.05 * rng.normal(size=n), 0.001, 0.999), p

    X, y, _ = draw(seed, 300)
    X_test, _, p_test = draw(100 + seed, 1000)
    rng = np.random.default_rng(seed)
    index = rng.choice(300, 60, replace=False)
    y_bad = y.copy()
    y_bad[index] = rng.uniform(0.0, 1.0, size=60)
    return X, y, y_bad, np.sort(index), X_test, p_test


DATA = {"friedman": friedman, "teacher": teacher, "proportions": proportions}


def mlp() -> object:
    return make_pipeline(
        StandardScaler(), MLPRegressor(hidden_layer_sizes=(64, 64), max_iter=300, random_state=0)
    )


def network(**settings) -> SubquantileMLPRegressor:
    return SubquantileMLPRegressor(hidden_units=16, random_state=0, **settings)


MINI_BATCH = {"batch_size": 64, "learning_rate": 0.01, "max_iter": 200}
GLM = {"kernel": "rbf", "alpha": 1e-3, "gamma": 0.1}  # the regressor's default kernel is "auto"


def glm(epsilon: float | str, link: str) -> SubquantileKernelRegressor:
    return SubquantileKernelRegressor(epsilon, link=link, **GLM)


# The kernelized GLM runs on the targets in (0, 1) only; the other models on the other data.
GLM_METHODS = {
    "kernel GLM, logistic link, eps 0.2": (
        lambda: glm(0.0, "logistic"),
        lambda: glm(0.2, "logistic"),
    ),
    "kernel GLM, logistic link, auto": (
        lambda: glm(0.0, "logistic"),
        lambda: glm("auto", "logistic"),
    ),
    "kernel ridge (identity link), eps 0.2": (
        lambda: glm(0.0, "identity"),
        lambda: glm(0.2, "identity"),
    ),
}
# method -> (oracle and plain model, Subquantile model)
METHODS = {
    "HGB, auto": (HistGradientBoostingRegressor, lambda: SubquantileRegressor(random_state=0)),
    "HGB, eps 0.2": (
        HistGradientBoostingRegressor,
        lambda: SubquantileRegressor(epsilon=0.2, random_state=0),
    ),
    "MLPRegressor, auto": (mlp, lambda: SubquantileRegressor(mlp(), random_state=0)),
    "MLPRegressor, eps 0.2 in-sample": (
        mlp,
        lambda: SubquantileRegressor(mlp(), epsilon=0.2, random_state=0),
    ),
    "MLPRegressor, eps 0.2 5-fold": (
        mlp,
        lambda: SubquantileRegressor(mlp(), epsilon=0.2, n_folds=5, random_state=0),
    ),
    "SubQ network, full batch": (
        lambda: network(epsilon=0.0),
        lambda: network(epsilon=0.2),
    ),
    "SubQ network, mini-batch refresh": (
        lambda: network(epsilon=0.0, **MINI_BATCH),
        lambda: network(epsilon=0.2, selection="refresh", **MINI_BATCH),
    ),
    "SubQ network, mini-batch per batch": (
        lambda: network(epsilon=0.0, **MINI_BATCH),
        lambda: network(epsilon=0.2, selection="batch", **MINI_BATCH),
    ),
}


def rmse(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(np.mean((a - b) ** 2)))


def run_cell(data: str, method: str, seed: int) -> dict:
    X, y, y_bad, index, X_test, f_test = DATA[data](seed)
    clean = np.ones(len(y), dtype=bool)
    clean[index] = False
    bare, robust = {**METHODS, **GLM_METHODS}[method]
    oracle = rmse(bare().fit(X[clean], y[clean]).predict(X_test), f_test)
    plain = rmse(bare().fit(X, y_bad).predict(X_test), f_test)
    model = clone(robust())
    wall, cpu = time.perf_counter(), time.process_time()
    model.fit(X, y_bad)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "data": data,
        "method": method,
        "seed": seed,
        "oracle RMSE": oracle,
        "plain / oracle": plain / oracle,
        "SubQ / oracle": rmse(model.predict(X_test), f_test) / oracle,
        "corrupted rows kept": float(model.inlier_mask_[index].mean()),
        "fit wall s": wall,
        "fit CPU s": cpu,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for data in DATA:
            for method in GLM_METHODS if data == "proportions" else METHODS:
                for seed in args.seeds:
                    rows.append(run_cell(data, method, seed))
                    print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    summary = (
        frame.groupby(["data", "method"], sort=False)
        .median(numeric_only=True)
        .drop(columns="seed")
        .reset_index()
    )
    for column in ("oracle RMSE", "plain / oracle", "SubQ / oracle", "corrupted rows kept"):
        summary[column] = summary[column].map(lambda v: f"{v:.3f}")
    for column in ("fit wall s", "fit CPU s"):
        summary[column] = summary[column].map(lambda v: f"{v:.1f}")
    table = markdown_table(summary)
    body = (
        f"{HEADING}\n\n"
        f"Command: `OMP_NUM_THREADS=1 python benchmarks/bench_models.py --seeds "
        f"{' '.join(map(str, args.seeds))}` ({cpu_description()}, load average {load:.2f} at "
        f"the start; nothing else running). Medians over the seeds; test RMSE against the "
        f"noiseless function as a ratio to the oracle's (the same model on the clean rows); "
        f"fit times of the Subquantile model.\n\n{table}"
    )
    print(body)
    if not args.no_write:
        out = ROOT / "benchmarks" / "results"
        out.mkdir(exist_ok=True)
        (out / "models.md").write_text(body)
        replace_markdown_section(ROOT / "BENCHMARKS.md", HEADING, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
