"""A fair race: robustkernel against what a user would pick instead, on contaminated data.

Two sections of BENCHMARKS.md:

* ``subq``: on contaminated training data (the papers' protocol: 80/20 split by seed,
  standardization with clean-train statistics, corruption of the training rows only), test RMSE
  (regression) or accuracy (classification) of SubQ (with the true eps, and with
  ``epsilon="auto"``, which needs no eps) against scikit-learn's KernelRidge / SVC, HuberRegressor
  and RANSACRegressor on Nystroem features, scikit-learn-extra's RobustWeightedRegressor /
  RobustWeightedClassifier (on the same Nystroem features), and cleanlab's CleanLearning (around
  KernelRidge for regression, SVC for classification). Every kernel method uses the same RBF
  kernel (gamma = 1 / n_features) and, where it has one, the same ridge alpha; nothing is tuned.
* ``metric``: on the paper 003 simulations f (a) - (d) and a held-out oblique index model
  (``oblique_simulation``), MetricKernelRidge (the paper's lam) and
  MetricKernelRidgeCV (defaults) against recursive feature machines (PyPI ``xrfm``, its ``RFM``
  with the Laplace kernel), a Gaussian process with ARD length scales (scikit-learn) and sliced
  inverse regression (written here): test RMSE, subspace error ||P_hat - P_S*||_F (the top dim S*
  directions of the learned metric; for ARD, the coordinate axes with the shortest length
  scales), and fit seconds. ``--methods cv-coarse`` adds MetricKernelRidgeCV with the
  bandwidth search of the code before the neighbour search (every round coarse to fine), for a
  before / after comparison in one process.

A peer that is not installed is reported with its import error. Medians over ``--seeds`` seeds.

    python benchmarks/bench_peers.py [--section subq metric] [--seeds 3] [--data-home DIR]

(``make bench-peers`` installs the optional peers first.)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
from harness.report import markdown_table, replace_markdown_section
from sklearn.base import BaseEstimator
from sklearn.datasets import load_breast_cancer
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel
from sklearn.kernel_approximation import Nystroem
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import HuberRegressor, RANSACRegressor, Ridge
from sklearn.metrics import accuracy_score, root_mean_squared_error
from sklearn.pipeline import make_pipeline
from sklearn.svm import SVC
from threadpoolctl import threadpool_limits

from robustkernel import (
    MetricKernelRidge,
    MetricKernelRidgeCV,
    SubquantileKernelClassifier,
    SubquantileKernelRegressor,
)
from robustkernel.corruption import contaminated_split
from robustkernel.datasets import (
    KLSimulation,
    load_boston,
    load_concrete,
    make_kl_train_test,
    subspace_distance,
)

ALPHA = 1.0
N_LANDMARKS = 300
EPSILONS = (0.1, 0.2, 0.3, 0.4)
N_SLICES = 10
SUBQ_SECTION = "## Peers: robust kernel regression and classification"
METRIC_SECTION = "## Peers: learned metric (paper 003 simulations)"
STABILITY_SECTION = "## Learned metric: stability"


@dataclass(frozen=True)
class Task:
    """One data set of the race: how to load it, which corruption, which metric."""

    name: str
    load: Callable[[str | None], tuple[np.ndarray, np.ndarray]]
    kind: str
    classification: bool


def _generated(_: str | None) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(12345)
    X = rng.uniform(-2, 2, size=(1000, 5))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.1 * rng.normal(size=1000)
    return X, y


TASKS = (
    Task("generated (sin + product, n=1000, d=5)", _generated, "label", False),
    Task("Boston", lambda home: load_boston(data_home=home), "label", False),
    Task("Concrete", lambda home: load_concrete(data_home=home), "label", False),
    Task("Breast cancer", lambda _: load_breast_cancer(return_X_y=True), "flip", True),
)


def _nystroem(n_features: int, seed: int) -> Nystroem:
    return Nystroem(gamma=1.0 / n_features, n_components=N_LANDMARKS, random_state=seed)


def _optional(module: str) -> tuple[Any, str]:
    """Import ``module`` or return (None, the error); also its version string."""
    try:
        imported = __import__(module, fromlist=["_"])
    except Exception as error:  # any failure to import means "not available here"
        return None, f"not available: {type(error).__name__}: {str(error).splitlines()[0]}"
    distribution = {"sklearn_extra.robust": "scikit-learn-extra", "cleanlab": "cleanlab"}
    name = distribution.get(module, module.split(".")[0])
    return imported, importlib.metadata.version(name)


def regression_methods(
    eps: float, n_features: int, seed: int
) -> tuple[dict[str, BaseEstimator], dict[str, str]]:
    """Estimators of the regression race and the status line of every optional peer."""
    gamma = 1.0 / n_features
    methods: dict[str, BaseEstimator] = {
        # kernel="rbf": the kernel of every method here (the regressor's default is "auto").
        "SubQ (eps given)": SubquantileKernelRegressor(
            epsilon=eps, kernel="rbf", alpha=ALPHA, gamma=gamma
        ),
        "SubQ (eps='auto')": SubquantileKernelRegressor(
            epsilon="auto", kernel="rbf", alpha=ALPHA, gamma=gamma
        ),
        "KernelRidge": KernelRidge(alpha=ALPHA, kernel="rbf", gamma=gamma),
        "Huber on Nystroem": make_pipeline(
            _nystroem(n_features, seed), HuberRegressor(alpha=ALPHA, max_iter=1000)
        ),
        "RANSAC on Nystroem": RANSACRegressor(
            make_pipeline(_nystroem(n_features, seed), Ridge(alpha=ALPHA)),
            min_samples=0.5,
            random_state=seed,
        ),
    }
    status = {}
    robust, status["scikit-learn-extra"] = _optional("sklearn_extra.robust")
    if robust is not None:
        methods["RobustWeighted on Nystroem"] = make_pipeline(
            _nystroem(n_features, seed), robust.RobustWeightedRegressor(random_state=seed)
        )
    cleanlab, status["cleanlab"] = _optional("cleanlab.regression.learn")
    if cleanlab is not None:
        methods["cleanlab CleanLearning(KRR)"] = cleanlab.CleanLearning(
            KernelRidge(alpha=ALPHA, kernel="rbf", gamma=gamma), seed=seed, verbose=False
        )
    return methods, status


def classification_methods(
    eps: float, n_features: int, seed: int
) -> tuple[dict[str, BaseEstimator], dict[str, str]]:
    """Estimators of the classification race and the status line of every optional peer."""
    gamma = 1.0 / n_features
    methods: dict[str, BaseEstimator] = {
        "SubQ (eps given)": SubquantileKernelClassifier(epsilon=eps, alpha=ALPHA, gamma=gamma),
        "SubQ (eps='auto')": SubquantileKernelClassifier(epsilon="auto", alpha=ALPHA, gamma=gamma),
        "SVC": SVC(C=1.0 / (2 * ALPHA), gamma=gamma),
    }
    status = {}
    robust, status["scikit-learn-extra"] = _optional("sklearn_extra.robust")
    if robust is not None:
        methods["RobustWeighted on Nystroem"] = make_pipeline(
            _nystroem(n_features, seed), robust.RobustWeightedClassifier(random_state=seed)
        )
    cleanlab, status["cleanlab"] = _optional("cleanlab.classification")
    if cleanlab is not None:
        methods["cleanlab CleanLearning(SVC)"] = cleanlab.CleanLearning(
            SVC(C=1.0 / (2 * ALPHA), gamma=gamma, probability=True, random_state=seed),
            seed=seed,
            verbose=False,
        )
    return methods, status


def race_subq(seeds: list[int], data_home: str | None) -> tuple[pd.DataFrame, dict[str, str]]:
    """Every task x eps x seed x method: test metric and fit seconds."""
    rows = []
    status: dict[str, str] = {}
    for task in TASKS:
        X, y = task.load(data_home)
        for eps in EPSILONS:
            for seed in seeds:
                split = contaminated_split(X, y, task.kind, eps, random_state=seed)
                make = classification_methods if task.classification else regression_methods
                methods, status = make(eps, X.shape[1], seed)
                for name, model in methods.items():
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        start = time.perf_counter()
                        model.fit(split.X_train, split.y_train)
                        seconds = time.perf_counter() - start
                    predicted = model.predict(split.X_test)
                    metric = (
                        accuracy_score(split.y_test, predicted)
                        if task.classification
                        else root_mean_squared_error(split.y_test, predicted)
                    )
                    rows.append(
                        {
                            "data": task.name,
                            "eps": eps,
                            "seed": seed,
                            "method": name,
                            "metric": metric,
                            "seconds": seconds,
                        }
                    )
                print(f"{task.name} eps={eps} seed={seed} done", flush=True)
    return pd.DataFrame(rows), status


def _winner_table(frame: pd.DataFrame, classification: bool) -> pd.DataFrame:
    """Median metric per (data, eps) x method, and the best method of each row."""
    table = frame.pivot_table(
        index=["data", "eps"], columns="method", values="metric", aggfunc="median"
    )
    best = table.idxmax(axis=1) if classification else table.idxmin(axis=1)
    table = table.round(3)
    table["best"] = best
    return table.reset_index()


def _time_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Median fit seconds of every method as a ratio to SubQ (eps given) on the same fit."""
    base = frame[frame["method"] == "SubQ (eps given)"].set_index(["data", "eps", "seed"])[
        "seconds"
    ]
    ratio = frame.join(base.rename("subq"), on=["data", "eps", "seed"])
    ratio["ratio"] = ratio["seconds"] / ratio["subq"]
    summary = ratio.groupby(["data", "method"])["ratio"].median().unstack("method").round(2)
    return summary.reset_index()


def subq_section(seeds: list[int], data_home: str | None) -> str:
    """The Markdown section of the SubQ race."""
    frame, status = race_subq(seeds, data_home)
    regression = frame[~frame["data"].eq("Breast cancer")]
    classification = frame[frame["data"].eq("Breast cancer")]
    wins = []
    for part, is_class in ((regression, False), (classification, True)):
        table = _winner_table(part, is_class)
        subq = table[["SubQ (eps given)", "SubQ (eps='auto')"]]
        peers = table.drop(columns=["data", "eps", "best", "SubQ (eps given)", "SubQ (eps='auto')"])
        best_peer = peers.max(axis=1) if is_class else peers.min(axis=1)
        beats = (subq.max(axis=1) >= best_peer) if is_class else (subq.min(axis=1) <= best_peer)
        wins.append(f"{int(beats.sum())} of {len(table)}")
    command = f"python benchmarks/bench_peers.py --section subq --seeds {' '.join(map(str, seeds))}"
    lines = [
        SUBQ_SECTION,
        "",
        f"Command: `{command}` (data home: the benchmark CSV folder).  ",
        f"Medians over seeds {seeds}. Label noise N(5, variance 5) for regression (test RMSE, "
        "standardized units, lower is better); flipped labels for breast cancer (test accuracy, "
        f"higher is better). RBF gamma = 1 / n_features and alpha = {ALPHA} for every kernel "
        f"method; Nystroem peers use {N_LANDMARKS} landmarks. Peers: "
        + "; ".join(f"{name} {line}" for name, line in status.items())
        + ".",
        "",
        f"SubQ (either variant) at least as good as the best peer: regression cells "
        f"{wins[0]}, classification cells {wins[1]}.",
        "",
        "### Regression: test RMSE",
        "",
        markdown_table(_winner_table(regression, False)),
        "### Classification: test accuracy",
        "",
        markdown_table(_winner_table(classification, True)),
        "### Fit time as a ratio to SubQ (eps given) on the same rows (median)",
        "",
        markdown_table(_time_table(frame)),
    ]
    return "\n".join(lines)


def _ard_axes(model: GaussianProcessRegressor, dim: int, p: int) -> np.ndarray:
    """Coordinate axes of the ``dim`` shortest ARD length scales, as a p x dim basis."""
    scales = np.asarray(model.kernel_.k1.k2.length_scale)
    basis = np.zeros((p, dim))
    basis[np.argsort(scales)[:dim], np.arange(dim)] = 1.0
    return basis


def _top_directions(matrix: np.ndarray, dim: int) -> np.ndarray:
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    return vectors[:, np.argsort(values)[::-1][:dim]]


Fit = Callable[[KLSimulation, int], tuple[np.ndarray, np.ndarray]]


def fit_metric_kernel_ridge(sim: KLSimulation, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Test predictions and learned subspace of MetricKernelRidge (lam = 0.1)."""
    model = MetricKernelRidge(lam=0.1).fit(sim.X_train, sim.y_train)
    return model.predict(sim.X_test), _top_directions(model.Sigma_, sim.subspace.shape[1])


def fit_metric_kernel_ridge_cv(sim: KLSimulation, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """MetricKernelRidgeCV with its defaults: lam on held-out rows, a final ridge by LOO."""
    model = MetricKernelRidgeCV(random_state=seed).fit(sim.X_train, sim.y_train)
    return model.predict(sim.X_test), _top_directions(model.Sigma_, sim.subspace.shape[1])


def fit_metric_cv_coarse(sim: KLSimulation, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """MetricKernelRidgeCV with the bandwidth search of the code before the neighbour search:
    every round of the gradient metric searches s coarse to fine, as its first round does
    (the previous round's s, which ``_scale_and_ridge`` takes as ``near``, is dropped)."""
    search = MetricKernelRidgeCV.__dict__["_scale_and_ridge"].__func__

    def coarse(argument, y, grids, family, near=None):
        return search(argument, y, grids, family)

    with mock.patch.object(MetricKernelRidgeCV, "_scale_and_ridge", staticmethod(coarse)):
        return fit_metric_kernel_ridge_cv(sim, seed)


def fit_metric_cv_then_gp(sim: KLSimulation, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """MetricKernelRidgeCV(predictor="gaussian_process"): the learned coordinates, then an ARD
    GP on them (RBF with one length scale per learned direction, amplitude and noise by
    marginal likelihood). The seconds include the metric fit."""
    model = MetricKernelRidgeCV(random_state=seed, predictor="gaussian_process")
    model.fit(sim.X_train, sim.y_train)
    return model.predict(sim.X_test), _top_directions(model.Sigma_, sim.subspace.shape[1])


def fit_sir(sim: KLSimulation, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Sliced inverse regression (Li 1991, 10 slices), written here: directions only.

    Whitens X, averages the whitened rows within 10 slices of sorted y, and maps the top
    eigenvectors of the weighted covariance of the slice means back (Sigma_X^{-1/2} eta).
    No predictor: its test RMSE is reported as NaN.
    """
    X, y = sim.X_train, sim.y_train
    dim = sim.subspace.shape[1]
    values, vectors = np.linalg.eigh(np.cov(X, rowvar=False))
    inverse_root = (vectors / np.sqrt(values)) @ vectors.T
    Z = (X - X.mean(axis=0)) @ inverse_root
    slices = np.array_split(np.argsort(y), N_SLICES)
    means = np.array([Z[rows].mean(axis=0) for rows in slices])
    weights = np.array([len(rows) for rows in slices]) / len(y)
    eta = _top_directions((means * weights[:, None]).T @ means, dim)
    basis, _ = np.linalg.qr(inverse_root @ eta)
    return np.full(len(sim.y_test), np.nan), basis


def fit_ard_gp(sim: KLSimulation, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Test predictions and the most relevant axes of a GP with ARD RBF length scales."""
    p = sim.X_train.shape[1]
    kernel = ConstantKernel() * RBF(length_scale=np.full(p, np.sqrt(p))) + WhiteKernel(0.01)
    model = GaussianProcessRegressor(kernel, normalize_y=True, random_state=seed)
    model.fit(sim.X_train, sim.y_train)
    return model.predict(sim.X_test), _ard_axes(model, sim.subspace.shape[1], p)


def fit_rfm(sim: KLSimulation, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Test predictions and top directions of M of xrfm's RFM (Laplace, 5 iterations, reg 1e-3).

    RFM selects its iteration on a validation split: the last 20% of the training rows.
    """
    import torch
    from xrfm.rfm_src.recursive_feature_machine import RFM

    torch.set_num_threads(1)

    cut = int(0.8 * sim.X_train.shape[0])
    model = RFM(kernel="laplace", bandwidth=10.0, iters=5, device="cpu", verbose=False)
    model.fit(
        (sim.X_train[:cut], sim.y_train[:cut, None]),
        (sim.X_train[cut:], sim.y_train[cut:, None]),
        reg=1e-3,
    )
    # M is None when RFM's validation chose its first iteration (the plain Laplace kernel, M = I)
    p = sim.X_train.shape[1]
    M = np.eye(p) if model.M is None else np.asarray(model.M.cpu().numpy(), dtype=float)
    predicted = np.asarray(model.predict(sim.X_test)).ravel()
    return predicted, _top_directions(M, sim.subspace.shape[1])


def oblique_simulation(n: int, p: int, seed: int) -> KLSimulation:
    """A held-out index model, none of the paper's f (a) - (d): ``y = sin(2 z1) + z2^2 / 2`` plus
    N(0, 0.1^2) noise, ``z = X B`` with ``B`` a random orthonormal p x 2 basis drawn from the
    seed (oblique: the central subspace is spanned by no coordinate axes), X ~ N(0, I), a test
    set of n / 2 rows."""
    rng = np.random.default_rng(1000 + seed)
    basis = np.linalg.qr(rng.normal(size=(p, 2)))[0]
    X = rng.normal(size=(n + n // 2, p))
    z = X @ basis
    y = np.sin(2 * z[:, 0]) + 0.5 * z[:, 1] ** 2 + 0.1 * rng.normal(size=len(X))
    return KLSimulation(X[:n], y[:n], X[n:], y[n:], basis)


def rotated(sim: KLSimulation, seed: int) -> KLSimulation:
    """The same simulation in a random orthonormal basis ``Q`` drawn from the seed: rows
    ``x Q``, subspace ``Q^T B``. X ~ N(0, I) has the same law in any basis, so a method that
    treats every direction alike (a full metric, its path, the gradient outer product) meets
    the same problem, and one that favours the coordinate axes (ARD length scales) loses that
    advantage."""
    p = sim.X_train.shape[1]
    Q = np.linalg.qr(np.random.default_rng(2000 + seed).normal(size=(p, p)))[0]
    return KLSimulation(
        sim.X_train @ Q, sim.y_train, sim.X_test @ Q, sim.y_test, Q.T @ sim.subspace
    )


# the methods of the learned-metric race: key (--methods) -> (name in the tables, fit)
METRIC_METHODS: dict[str, tuple[str, Fit]] = {
    "paper": ("MetricKernelRidge (lam=0.1, the paper's)", fit_metric_kernel_ridge),
    "cv": ("MetricKernelRidgeCV (defaults)", fit_metric_kernel_ridge_cv),
    "cv-gp": ("MetricKernelRidgeCV, then ARD GP on its coordinates", fit_metric_cv_then_gp),
    "cv-coarse": (
        "MetricKernelRidgeCV, every round's s searched coarse to fine (before)",
        fit_metric_cv_coarse,
    ),
    "gp": ("GP, ARD RBF (sklearn)", fit_ard_gp),
    "sir": ("SIR, 10 slices (directions only)", fit_sir),
    "rfm": ("RFM, Laplace (xrfm)", fit_rfm),
}


# methods run only when --methods names them: the code's own earlier behaviour, for a before /
# after comparison in one process
ASKED_ONLY = frozenset({"cv-coarse"})


def race_metric(
    seeds: list[int], n: int, ps: list[int], rotate: bool = False,
    functions: list[str] | None = None, methods: list[str] | None = None,
) -> tuple[pd.DataFrame, str]:
    """MetricKernelRidge(CV) vs RFM vs ARD Gaussian process vs SIR on f (a)-(d) and oblique
    (``rotate``: f (a)-(d) in a random basis, see `rotated`), or on ``functions`` of those;
    ``methods``: keys of `METRIC_METHODS` (default: all but `ASKED_ONLY`; "cv" and "gp" always
    run)."""
    keys = set(METRIC_METHODS.keys() - ASKED_ONLY if methods is None else [*methods, "cv", "gp"])
    rfm_module, rfm_status = _optional("xrfm")
    if rfm_module is None and "rfm" in keys:
        keys.discard("rfm")
        print(
            f"WARNING: xrfm {rfm_status} (`make bench-peers` installs it): the RFM rows are "
            "left out and every 'best of every method' comparison of this run is without RFM",
            file=sys.stderr, flush=True,
        )
    fits = dict(value for key, value in METRIC_METHODS.items() if key in keys)
    rows = []
    for p in ps:
        every = ("a", "b", "c", "d") if rotate else ("a", "b", "c", "d", "oblique")
        for f in [f for f in every if functions is None or f in functions]:
            for seed in seeds:
                sim = (
                    oblique_simulation(n, p, seed)
                    if f == "oblique"
                    else make_kl_train_test(n, p, f, random_state=seed)
                )
                if rotate:
                    sim = rotated(sim, seed)
                for name, fit in fits.items():
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        start, cpu = time.perf_counter(), time.process_time()
                        predicted, basis = fit(sim, seed)
                        seconds = time.perf_counter() - start
                        cpu = time.process_time() - cpu
                    rows.append(
                        {
                            "p": p,
                            "f": f,
                            "dim S*": sim.subspace.shape[1],
                            "seed": seed,
                            "method": name,
                            "test RMSE": root_mean_squared_error(sim.y_test, predicted)
                            if np.all(np.isfinite(predicted))
                            else np.nan,
                            "subspace error": subspace_distance(basis, sim.subspace),
                            "seconds": seconds,
                            "CPU seconds": cpu,
                        }
                    )
                print(f"p={p} f={f} seed={seed} done:", flush=True)
                for row in rows[-len(fits):]:
                    print(
                        f"  {row['method']}: test RMSE {row['test RMSE']:.3f}, subspace error "
                        f"{row['subspace error']:.3f}, {row['seconds']:.1f} s "
                        f"({row['CPU seconds']:.1f} s CPU)", flush=True,
                    )
    return pd.DataFrame(rows), rfm_status


def metric_heading(n: int, rotate: bool = False) -> str:
    """The section's heading: the n = 300 race on the paper's axes keeps the plain one."""
    heading = METRIC_SECTION if n == 300 else f"{METRIC_SECTION}, n = {n}"
    return f"{heading}, rotated" if rotate else heading


def seed_wins(frame: pd.DataFrame, ours: str, peer: str) -> dict[tuple, str]:
    """Per (p, f): on how many seeds ``ours`` has a test RMSE at most ``peer``'s, as "k / m"
    (a seed where either failed counts as a loss)."""
    rmse = frame.pivot_table(
        index=["p", "f", "seed"], columns="method", values="test RMSE", dropna=False
    )
    won = (rmse[ours] <= rmse[peer]).groupby(level=["p", "f"])
    return {key: f"{int(w.sum())} / {w.size}" for key, w in won}


def metric_section(
    seeds: list[int], n: int, ps: list[int], rotate: bool = False,
    functions: list[str] | None = None, methods: list[str] | None = None,
) -> str:
    """The Markdown section of the learned-metric race (on ``functions`` and ``methods`` only,
    when given)."""
    load_before = os.getloadavg()
    wall = time.perf_counter()
    with threadpool_limits(limits=1):  # BLAS and OpenMP; PyTorch's own pool in fit_rfm
        frame, rfm_status = race_metric(seeds, n, ps, rotate, functions, methods)
    wall = time.perf_counter() - wall
    load_after = os.getloadavg()
    keys = ["p", "f", "dim S*", "method"]
    summary = (
        frame.groupby(keys)[["test RMSE", "subspace error", "seconds", "CPU seconds"]]
        .median()
        .round(3)
        .reset_index()
    )
    ours = "MetricKernelRidgeCV (defaults)"
    wins = seed_wins(frame, ours, "GP, ARD RBF (sklearn)")
    versus = []
    for (p, f), cell in summary.groupby(["p", "f"]):
        mine = cell[cell["method"] == ours].iloc[0]
        gp = cell[cell["method"] == "GP, ARD RBF (sklearn)"].iloc[0]
        others = cell[cell["method"] != ours]
        best_peer = others[~others["method"].str.startswith("MetricKernelRidge")][
            "subspace error"
        ].min()
        versus.append(
            {
                "p": p,
                "f": f,
                "RMSE <= GP's": bool(mine["test RMSE"] <= gp["test RMSE"]),
                "RMSE / GP's": round(float(mine["test RMSE"] / gp["test RMSE"]), 2),
                "seeds with RMSE <= GP's": wins[(p, f)],
                "subspace error below every peer's": bool(mine["subspace error"] < best_peer),
                "subspace error - best peer's": round(float(mine["subspace error"] - best_peer), 3),
                "seconds <= GP's": bool(mine["seconds"] <= gp["seconds"]),
            }
        )
    command = (
        f"python benchmarks/bench_peers.py --section metric --seeds {' '.join(map(str, seeds))} "
        f"--n {n} --p {' '.join(map(str, ps))}" + (" --rotate" if rotate else "")
        + (f" --f {' '.join(functions)}" if functions else "")
        + (f" --methods {' '.join(methods)}" if methods else "")
    )
    rotation = (
        "Rotated: every simulation's rows are multiplied by a random orthonormal p x p matrix Q "
        "drawn from the seed and its subspace by Q^T (`rotated`): the same problems in a basis "
        "where the central subspace lies along no coordinate axis. "
        if rotate
        else ""
    )
    lines = [
        metric_heading(n, rotate),
        "",
        f"Command: `{command}`  ",
        f"Load average (1, 5, 15 min) before: {_loads(load_before)}; after: "
        f"{_loads(load_after)}. Wall time {wall:.0f} s; one thread for every method (BLAS, "
        "OpenMP, PyTorch); 'seconds' is the wall time of one fit, 'CPU seconds' its process "
        "CPU time.  ",
        f"n = {n}, p in {ps}, Gaussian X, sigma = 0.1, test n/2; medians over seeds {seeds}. "
        + rotation
        + "Subspace error = $\\lVert \\hat P - P_{S^*} \\rVert_F$ with $\\hat P$ the projection on "
        "the top dim S* "
        "directions of the learned metric (MetricKernelRidge: Sigma; RFM: M; ARD GP: the "
        "coordinate axes with the shortest length scales; SIR: its dim S* directions). "
        + (
            ""
            if rotate
            else "f = oblique: a held-out index model, none of the paper's: y = sin(2 z1) + "
            "z2^2 / 2 + N(0, 0.1^2) noise, z = X B with B a random orthonormal p x 2 basis per "
            "seed (`oblique_simulation`). "
        )
        + f"xrfm: {rfm_status}.",
        "",
        markdown_table(summary),
        "",
        f"{ours} against the targets (GP = the ARD Gaussian process; 'every peer' = GP, SIR, RFM):",
        "",
        markdown_table(pd.DataFrame(versus)),
    ]
    return "\n".join(lines)


def _loads(loads: tuple[float, float, float]) -> str:
    return ", ".join(f"{value:.2f}" for value in loads)


# the fits of the stability section: name -> MetricKernelRidgeCV options
STABILITY_CONFIGS = {
    "1 split": {},
    "3 splits": {"n_splits": 3},
    "3 folds": {"n_splits": 3, "validation_fraction": None},
}
DEFAULT_STABILITY = "1 split"


def stability_section(
    n: int, p: int, fs: list[str], configs: list[str], fits: int, draws: list[str]
) -> str:
    """``fits`` fits of MetricKernelRidgeCV on the same rows, per f and configuration, with
    ``random_state=None`` (``draws`` "none": the target, two fits must agree) and with
    ``random_state = 0, ..., fits - 1`` ("seeds": how much the fit depends on the split): how
    often the rank repeats and how far the test RMSE spreads."""
    load_before = os.getloadavg()
    rows = []
    limits = threadpool_limits(limits=1)
    for f in fs:
        sim = (
            oblique_simulation(n, p, 0)
            if f == "oblique"
            else make_kl_train_test(n, p, f, random_state=0)
        )
        for config in configs:
            # random_state=None is one fixed split in every configuration: shown for the default
            for draw in [d for d in draws if d == "seeds" or config == DEFAULT_STABILITY]:
                ranks, errors, cpus, sources = [], [], [], []
                for fit in range(fits):
                    state = None if draw == "none" else fit
                    model = MetricKernelRidgeCV(random_state=state, **STABILITY_CONFIGS[config])
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        cpu = time.process_time()
                        model.fit(sim.X_train, sim.y_train)
                        cpus.append(time.process_time() - cpu)
                    ranks.append(int(model.rank_))
                    errors.append(root_mean_squared_error(sim.y_test, model.predict(sim.X_test)))
                    sources.append(model.metric_source_)
                values, counts = np.unique(ranks, return_counts=True)
                spread = np.asarray(errors)
                median = float(np.median(spread))
                rows.append(
                    {
                        "f": f,
                        "held out": config,
                        "random_state": "None" if draw == "none" else f"0 - {fits - 1}",
                        "ranks (count)": ", ".join(
                            f"{v} ({c})" for v, c in zip(values, counts, strict=True)
                        ),
                        "same rank": f"{counts.max()} / {fits}",
                        "gradient metric won": f"{sources.count('gradient')} / {fits}",
                        "median test RMSE": round(median, 3),
                        "RMSE spread / median": f"{(spread.max() - spread.min()) / median:.0%}",
                        "median CPU s": round(float(np.median(cpus)), 2),
                    }
                )
                print(rows[-1], flush=True)
    limits.restore_original_limits()
    load_after = os.getloadavg()
    command = (
        f"python benchmarks/bench_peers.py --section metric-stability --n {n} "
        f"--stability-p {p} --stability-f {' '.join(fs)} --fits {fits} "
        f"--stability-configs {' '.join(repr(c) for c in configs)} "
        f"--stability-draws {' '.join(draws)}"
    )
    described = "; ".join(
        f"{name}: `MetricKernelRidgeCV({', '.join(f'{k}={v}' for k, v in options.items())})`"
        for name, options in STABILITY_CONFIGS.items()
        if name in configs
    )
    lines = [
        STABILITY_SECTION,
        "",
        f"Command: `{command}`  ",
        f"Load average (1, 5, 15 min) before: {_loads(load_before)}; after: "
        f"{_loads(load_after)}. One BLAS thread; CPU s: the process CPU time of one fit.  ",
        f"{fits} fits per row on the same training rows (seed 0 of each simulation, n = {n}, "
        f"p = {p}); test RMSE on its test rows. {described}. random_state None (default "
        "configuration only: None holds out the same rows in every configuration): the default "
        "(target of the issue: the same rank in at least 9 of 10 fits and a spread (max - min) "
        f"of the test RMSE at most 5% of the median); 0 - {fits - 1}: other held-out rows in "
        "every fit, how much the fit depends on the split.",
        "",
        markdown_table(pd.DataFrame(rows)),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--section",
        nargs="+",
        choices=["subq", "metric", "metric-stability"],
        default=["subq", "metric"],
    )
    parser.add_argument("--stability-p", type=int, default=20)
    parser.add_argument("--stability-f", nargs="+", default=["a", "b", "c", "d", "oblique"])
    parser.add_argument("--fits", type=int, default=10)
    parser.add_argument(
        "--stability-configs", nargs="+", choices=list(STABILITY_CONFIGS),
        default=["1 split", "3 folds"], help="the held-out rows of the stability section's fits",
    )
    parser.add_argument(
        "--stability-draws", nargs="+", choices=["none", "seeds"], default=["none", "seeds"],
        help="random_state None in every fit, or 0, 1, ... (section metric-stability)",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--data-home", default=None, help="folder of the benchmark CSV files")
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--p", type=int, nargs="+", default=[20, 50])
    parser.add_argument(
        "--rotate", action="store_true", help="f (a)-(d) in a random basis (section metric)"
    )
    parser.add_argument(
        "--f", nargs="+", choices=["a", "b", "c", "d", "oblique"], default=None,
        help="the functions of section metric (default: all)",
    )
    parser.add_argument(
        "--methods", nargs="+", choices=list(METRIC_METHODS), default=None,
        help="the methods of section metric (default: all but cv-coarse; cv and gp always run)",
    )
    parser.add_argument(  # the repository's BENCHMARKS.md, wherever the script runs from
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    if "subq" in args.section:
        body = subq_section(args.seeds, args.data_home)
        print(body)
        replace_markdown_section(out, SUBQ_SECTION, body)
    if "metric" in args.section:
        body = metric_section(
            args.seeds, args.n, args.p, args.rotate, args.f, args.methods
        )
        print(body)
        replace_markdown_section(out, metric_heading(args.n, args.rotate), body)
    if "metric-stability" in args.section:
        body = stability_section(
            args.n, args.stability_p, args.stability_f, args.stability_configs, args.fits,
            args.stability_draws,
        )
        print(body)
        replace_markdown_section(out, STABILITY_SECTION, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
