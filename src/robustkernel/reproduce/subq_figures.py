"""Figures of the Subquantile papers: test RMSE over the iterations, and momentum.

* ``subq-fig-rmse-iterations`` (000 Fig. 2 / 002 Fig. 1): test RMSE of SubQ with the gradient
  solver ("gd", step 1/L, from the ERM fit) after t iterations, for eps = 0.1, ..., 0.4 of
  oblivious noise, on Concrete, Boston and the polynomial data of 002 Table 1 (the table's
  kernels and alpha). The solver is deterministic, so the model after t iterations is the fit
  with ``max_iter=t``.
* ``subq-fig-momentum`` (002 Fig. 2): objective minus the best objective reached, over the
  iterations of gradient descent, heavy-ball momentum and Nesterov (mu = 0.9), on Boston and
  Concrete at eps = 0.2.

Each curve is averaged over ``repetitions`` seeds (default 1); a CSV holds the numbers.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from tqdm.auto import tqdm

from .subq_tables import TABLE_SPECS, make_model, table_split

__all__ = ["SUBQ_FIGURES", "run_momentum_figure", "run_rmse_iterations_figure"]

RMSE_TABLES = ("subq-002-t3-concrete", "subq-002-t2-boston", "subq-002-t1-polynomial")
MOMENTUM_TABLES = ("subq-002-t2-boston", "subq-002-t3-concrete")
ITERATIONS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
EPSILONS = (0.1, 0.2, 0.3, 0.4)
SOLVERS = ("gd", "momentum", "nesterov")


def _fit(table: str, eps: float, seed: int, data_home: str | None, **solver):
    spec = TABLE_SPECS[table]
    split = table_split(spec, "oblivious", eps, seed, data_home)
    model = make_model(spec, "subq", eps, split.X_train.shape[1], spec.alpha)
    model.set_params(n_init=1, **solver)  # one trajectory from the ERM start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(split.X_train, split.y_train)
    return model, split


def run_rmse_iterations_figure(
    *,
    out_dir: str | Path = "results",
    progress: bool = True,
    repetitions: int = 1,
    n_jobs: int = 1,
    data_home: str | Path | None = None,
    iterations: tuple[int, ...] = ITERATIONS,
) -> dict[str, Path]:
    """Test RMSE of SubQ ("gd") after each number of ``iterations``, per data set and eps.

    Parameters
    ----------
    out_dir : str or Path, default="results"
        Output folder.
    progress : bool, default=True
        Show a progress bar.
    repetitions : int, default=1
        Seeds averaged per curve.
    n_jobs : int, default=1
        Accepted for the common runner interface; the fits run one after another.
    data_home : str or Path, default=None
        Folder of the data files.
    iterations : tuple of int
        Iteration counts at which the test RMSE is measured.

    Returns
    -------
    paths : dict of str to Path
        ``"png"`` and ``"csv"``.
    """
    home = None if data_home is None else str(data_home)
    jobs = [(t, e, s) for t in RMSE_TABLES for e in EPSILONS for s in range(repetitions)]
    rows = []
    for table, eps, seed, t in tqdm(
        [(*job, t) for job in jobs for t in iterations], disable=not progress, desc="rmse-iter"
    ):
        model, split = _fit(table, eps, seed, home, solver="gd", max_iter=t, tol=0.0)
        rmse = float(np.sqrt(np.mean((model.predict(split.X_test) - split.y_test) ** 2)))
        rows.append({"table": table, "eps": eps, "seed": seed, "iteration": t, "rmse": rmse})
    frame = pd.DataFrame(rows)
    means = frame.groupby(["table", "eps", "iteration"])["rmse"].mean()
    figure, axes = plt.subplots(1, len(RMSE_TABLES), figsize=(5 * len(RMSE_TABLES), 4))
    for axis, table in zip(axes, RMSE_TABLES, strict=True):
        for eps in EPSILONS:
            curve = means.loc[(table, eps)]
            axis.plot(curve.index, curve.to_numpy(), marker="o", label=f"eps = {eps:g}")
        axis.set(xscale="log", xlabel="iterations (gd)", ylabel="test RMSE", title=table)
        axis.legend()
    return _save(figure, frame, Path(out_dir), "subq-fig-rmse-iterations")


def run_momentum_figure(
    *,
    out_dir: str | Path = "results",
    progress: bool = True,
    repetitions: int = 1,
    n_jobs: int = 1,
    data_home: str | Path | None = None,
    max_iter: int = 300,
    epsilon: float = 0.2,
    tables: tuple[str, ...] = MOMENTUM_TABLES,
) -> dict[str, Path]:
    """Objective gap over the iterations of "gd", "momentum" and "nesterov" on Boston, Concrete.

    Parameters
    ----------
    out_dir : str or Path, default="results"
        Output folder.
    progress : bool, default=True
        Show a progress bar.
    repetitions : int, default=1
        Seeds averaged per curve.
    n_jobs : int, default=1
        Accepted for the common runner interface; the fits run one after another.
    data_home : str or Path, default=None
        Folder of the data files.
    max_iter : int, default=300
        Iterations of every solver (no early stop).
    epsilon : float, default=0.2
        Oblivious-noise fraction.
    tables : tuple of str, default=("subq-002-t2-boston", "subq-002-t3-concrete")
        Tables whose data, kernel and alpha are used, one panel each.

    Returns
    -------
    paths : dict of str to Path
        ``"png"`` and ``"csv"``.
    """
    home = None if data_home is None else str(data_home)
    jobs = [(t, s, m) for t in tables for s in range(repetitions) for m in SOLVERS]
    rows = []
    for table, seed, solver in tqdm(jobs, disable=not progress, desc="momentum"):
        model, _ = _fit(table, epsilon, seed, home, solver=solver, max_iter=max_iter, tol=0.0)
        for iteration, value in enumerate(model.objective_history_):
            rows.append(
                {"table": table, "seed": seed, "solver": solver, "iteration": iteration}
                | {"objective": float(value)}
            )
    frame = pd.DataFrame(rows)
    best = frame.groupby(["table", "seed"])["objective"].transform("min")
    frame["gap"] = frame["objective"] - best
    means = frame.groupby(["table", "solver", "iteration"])["gap"].mean()
    figure, axes = plt.subplots(1, len(tables), figsize=(5 * len(tables), 4), squeeze=False)
    for axis, table in zip(axes[0], tables, strict=True):
        for solver in SOLVERS:
            curve = means.loc[(table, solver)]
            axis.plot(curve.index, np.maximum(curve.to_numpy(), 1e-12), label=solver)
        axis.set(
            yscale="log",
            xlabel="iteration",
            ylabel="objective - best objective",
            title=f"{table}, eps = {epsilon:g}",
        )
        axis.legend()
    return _save(figure, frame, Path(out_dir), "subq-fig-momentum")


def _save(figure, frame: pd.DataFrame, out: Path, stem: str) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    png, csv = out / f"{stem}.png", out / f"{stem}.csv"
    figure.savefig(png, dpi=120)
    plt.close(figure)
    frame.to_csv(csv, index=False)
    return {"png": png, "csv": csv}


SUBQ_FIGURES: dict[str, Callable[..., dict[str, Path]]] = {
    "subq-fig-rmse-iterations": run_rmse_iterations_figure,
    "subq-fig-momentum": run_momentum_figure,
}
