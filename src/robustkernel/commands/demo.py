"""``robustkernel demo``, the demo behind ``make demo``: generated and bundled data, no downloads.

Three contaminated problems, each fitted by the method a user would pick today, by Subquantile
minimization (SubQ) and by the oracle (the same base learner on the clean rows only):

* the polynomial synthetic regression of Rathnashyam and Gittens (2023, Table 1) with 20% and
  40% oblivious noise;
* scikit-learn's breast cancer data with 20% of the training labels flipped.

Each problem is drawn, split and contaminated ``--splits`` times (seeds ``--seed``, ``--seed`` +
1, ...); the table reports each method's median over the splits (test metric, fit time, outlier
precision / recall: one split can flatter either side) and is written as Markdown, with one PNG
figure of the first split (each written atomically). The regression rows fit the papers'
configuration (cubic kernel, epsilon given) and, beside it, the regressor with no arguments (it
loses there: its kernel="auto" does not try the cubic kernel and flags rows of the cubic's
steep tails); the classification rows fit the classifier with no
arguments against ``StandardScaler`` + ``SVC()``, as a practitioner would run it. Errors
(``--out`` an existing file, a read-only or full disk) end the command with exit code 2 and one
line on stderr. The estimators, the data, pandas and matplotlib are imported by the functions
that use them, so that building the parser (``robustkernel --help``) imports none of them.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import DataError, guarded

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    from matplotlib.axes import Axes

    from ..corruption import ContaminatedSplit

PROG = "robustkernel demo"

POLY_KERNEL = {"kernel": "polynomial", "degree": 3, "gamma": 1.0, "coef0": 1.0}
DEFAULTS = "SubQ, no arguments"  # the regressor's row with its defaults on the papers' problem


@dataclass
class DemoRun:
    """One fitted method on one contaminated problem."""

    problem: str
    method: str
    metric: str
    value: float
    seconds: float
    precision: float | None = None
    recall: float | None = None
    model: Any = None


def _timed_fit(make: Callable[[], Any], X: np.ndarray, y: np.ndarray) -> tuple[Any, float]:
    start = time.perf_counter()
    model = make().fit(X, y)
    return model, time.perf_counter() - start


def _compare(
    problem: str,
    split: ContaminatedSplit,
    methods: dict[str, Callable[[], Any]],
    score: Callable[[np.ndarray, np.ndarray], float],
    metric: str,
) -> list[DemoRun]:
    from ..corruption import outlier_precision_recall

    runs = []
    for method, make in methods.items():
        oracle = method.startswith("Oracle")
        X = split.X_train_clean if oracle else split.X_train
        y = split.y_train_clean if oracle else split.y_train
        model, seconds = _timed_fit(make, X, y)
        run = DemoRun(
            problem, method, metric, score(split.y_test, model.predict(split.X_test)), seconds
        )
        if hasattr(model, "inlier_mask_") and not oracle:
            run.precision, run.recall = outlier_precision_recall(
                model.inlier_mask_, split.corrupted_index
            )
        run.model = model
        runs.append(run)
    return runs


def median_runs(splits: list[list[DemoRun]]) -> list[DemoRun]:
    """Per method, the median over the splits of the test metric, the fit time and the outlier
    precision / recall; the model is the first split's (the figure draws it)."""
    import numpy as np

    def median(values: list[float | None]) -> float | None:
        known = [value for value in values if value is not None]
        return float(np.median(known)) if known else None

    merged = []
    for index, first in enumerate(splits[0]):
        runs = [split[index] for split in splits]
        merged.append(
            DemoRun(
                first.problem,
                first.method,
                first.metric,
                float(np.median([run.value for run in runs])),
                float(np.median([run.seconds for run in runs])),
                median([run.precision for run in runs]),
                median([run.recall for run in runs]),
                first.model,
            )
        )
    return merged


def over_splits(
    problem: Callable[[int], tuple[ContaminatedSplit, list[DemoRun]]],
    random_state: int,
    splits: int,
) -> tuple[ContaminatedSplit, list[DemoRun]]:
    """``problem(seed)`` for ``splits`` seeds from ``random_state``: the first split and the
    medians of the runs (:func:`median_runs`)."""
    results = [problem(random_state + offset) for offset in range(splits)]
    return results[0][0], median_runs([runs for _, runs in results])


def polynomial_runs(
    epsilon: float, random_state: int = 0
) -> tuple[ContaminatedSplit, list[DemoRun]]:
    """The SubQ papers' polynomial regression (n = 1000) with oblivious noise: KernelRidge and
    SubQ in the papers' configuration (cubic kernel, epsilon given), the regressor with no
    arguments (``DEFAULTS``: what a user without the papers' knowledge fits) and the oracle."""
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.metrics import root_mean_squared_error

    from ..corruption import contaminated_split
    from ..datasets import make_polynomial_regression
    from ..subquantile import SubquantileKernelRegressor

    X, y = make_polynomial_regression(1000, random_state=random_state)
    split = contaminated_split(X, y, "oblivious", epsilon, random_state=random_state)
    methods = {
        "KRR (sklearn)": lambda: KernelRidge(alpha=1.0, **POLY_KERNEL),
        "SubQ": lambda: SubquantileKernelRegressor(epsilon=epsilon, alpha=1.0, **POLY_KERNEL),
        DEFAULTS: SubquantileKernelRegressor,
        "Oracle ERM": lambda: SubquantileKernelRegressor(epsilon=0.0, alpha=1.0, **POLY_KERNEL),
    }
    return split, _compare(
        f"polynomial, {epsilon:.0%} oblivious", split, methods, root_mean_squared_error, "RMSE"
    )


def breast_cancer_runs(
    epsilon: float = 0.2, random_state: int = 0
) -> tuple[ContaminatedSplit, list[DemoRun]]:
    """Breast cancer (scikit-learn) with a fraction ``epsilon`` of training labels flipped:
    ``StandardScaler`` + ``SVC()``, the classifier with no arguments, and the oracle (epsilon
    0 on the clean rows)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.metrics import accuracy_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from ..corruption import contaminated_split
    from ..subquantile import SubquantileKernelClassifier

    X, y = load_breast_cancer(return_X_y=True)
    split = contaminated_split(X, y, "flip", epsilon, random_state=random_state)
    methods = {
        "SVC (sklearn)": lambda: make_pipeline(StandardScaler(), SVC()),
        "SubQ": lambda: SubquantileKernelClassifier(random_state=random_state),
        "Oracle ERM": lambda: SubquantileKernelClassifier(epsilon=0.0, random_state=random_state),
    }
    return split, _compare(
        f"breast cancer, {epsilon:.0%} flipped", split, methods, accuracy_score, "accuracy"
    )


def results_table(runs: list[DemoRun]) -> pd.DataFrame:
    """One row per (problem, method)."""
    import pandas as pd

    rows = [
        {
            "problem": run.problem,
            "method": run.method,
            "test metric (median)": f"{run.metric} {run.value:.4f}",
            "fit seconds": round(run.seconds, 3),
            "outlier precision": "" if run.precision is None else f"{run.precision:.3f}",
            "outlier recall": "" if run.recall is None else f"{run.recall:.3f}",
        }
        for run in runs
    ]
    return pd.DataFrame(rows)


def _plot_polynomial(ax: Axes, split: ContaminatedSplit, runs: list[DemoRun]) -> None:
    import numpy as np

    x = split.X_train[:, 0]
    corrupted = np.zeros(len(x), dtype=bool)
    corrupted[split.corrupted_index] = True
    subq = next(run.model for run in runs if run.method == "SubQ")
    flagged = ~subq.inlier_mask_
    ax.scatter(x[~corrupted], split.y_train[~corrupted], s=6, c="0.6", label="clean rows")
    ax.scatter(
        x[corrupted],
        split.y_train[corrupted],
        s=10,
        c="tab:red",
        marker="x",
        label="corrupted rows",
    )
    ax.scatter(
        x[flagged],
        split.y_train[flagged],
        s=40,
        facecolors="none",
        edgecolors="k",
        linewidths=0.6,
        label="flagged by SubQ",
    )
    grid = np.linspace(x.min(), x.max(), 300)[:, None]
    styles = {
        "KRR (sklearn)": ("tab:orange", "--"),
        "SubQ": ("tab:blue", "-"),
        DEFAULTS: ("tab:purple", "-."),
        "Oracle ERM": ("tab:green", ":"),
    }
    for run in runs:
        color, style = styles[run.method]
        ax.plot(
            grid[:, 0],
            run.model.predict(grid),
            color=color,
            linestyle=style,
            lw=2,
            label=f"{run.method}: median RMSE {run.value:.3f}",
        )
    low, high = np.percentile(split.y_train_clean, [0.5, 99.5])
    pad = 0.6 * (high - low)
    ax.set_ylim(low - pad, high + pad)
    ax.set_title(f"{runs[0].problem} (first split)")
    ax.set_xlabel("x (standardized)")
    ax.set_ylabel("y (standardized)")
    ax.legend(fontsize=7, loc="best")


def _plot_scores(ax: Axes, split: ContaminatedSplit, runs: list[DemoRun]) -> None:
    import numpy as np

    subq = next(run.model for run in runs if run.method == "SubQ")
    order = np.argsort(subq.outlier_scores_)
    scores = subq.outlier_scores_[order]
    corrupted = np.isin(order, split.corrupted_index)
    rank = np.arange(len(scores))
    ax.scatter(rank[~corrupted], scores[~corrupted], s=6, c="0.5", label="clean rows")
    ax.scatter(rank[corrupted], scores[corrupted], s=8, c="tab:red", label="flipped rows")
    ax.axhline(subq.threshold_, color="k", lw=1, linestyle="--", label="threshold")
    ax.set_yscale("log")
    ax.set_xlabel("training rows, sorted by outlier score")
    ax.set_ylabel("outlier score (training loss)")
    ax.set_title(f"{runs[0].problem}: SubQ's outlier scores")
    ax.legend(fontsize=7, loc="upper left")


def run_demo(
    out_dir: str | Path = "demo_output", random_state: int = 0, splits: int = 5
) -> dict[str, Path]:
    """Run the demo, print the table, write ``demo_table.md`` and ``demo.png`` to ``out_dir``.

    Parameters
    ----------
    out_dir : str or Path, default="demo_output"
        Folder for the outputs (created if needed).
    random_state : int, default=0
        Seed of the first split's data, split and contamination (the others: the next seeds).
    splits : int, default=5
        Splits per problem; the table reports medians over them.

    Returns
    -------
    paths : dict
        ``{"table": ..., "figure": ...}``.

    Raises
    ------
    DataError
        ``out_dir`` exists and is not a folder, or ``splits`` is below 1.
    """
    from matplotlib.figure import Figure

    from .._atomic import atomic_path
    from .._report import markdown_table

    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise DataError(f"--out {out} exists and is not a folder")
    if splits < 1:
        raise DataError(f"--splits must be at least 1, got {splits}")
    out.mkdir(parents=True, exist_ok=True)
    poly = [over_splits(partial(polynomial_runs, eps), random_state, splits) for eps in (0.2, 0.4)]
    cancer = over_splits(partial(breast_cancer_runs, 0.2), random_state, splits)
    runs = [run for _, problem_runs in [*poly, cancer] for run in problem_runs]
    table = results_table(runs)
    print(f"medians over {splits} split(s) per problem")
    print(table.to_string(index=False))

    fig = Figure(figsize=(17, 5.2))
    axes = fig.subplots(1, 3)
    for ax, (split, problem_runs) in zip(axes[:2], poly, strict=True):
        _plot_polynomial(ax, split, problem_runs)
    _plot_scores(axes[2], *cancer)
    fig.suptitle("robustkernel demo: Subquantile minimization ignores the rows it cannot explain")
    fig.tight_layout()
    paths = {"table": out / "demo_table.md", "figure": out / "demo.png"}
    with atomic_path(paths["figure"]) as temporary:
        fig.savefig(temporary, dpi=110, format="png")
    with atomic_path(paths["table"]) as temporary:
        note = f"Medians over {splits} split(s) per problem (seeds {random_state} on).\n\n"
        temporary.write_text(note + markdown_table(table), encoding="utf-8")
    for kind, path in paths.items():
        print(f"{kind}: {path}")
    return paths


def _run(args: argparse.Namespace) -> int:
    run_demo(args.out, random_state=args.seed, splits=args.splits)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser("demo", help="run the demo on generated and bundled data")
    parser.add_argument("--out", default="demo_output", help="output folder (default: demo_output)")
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the first split's data and contamination"
    )
    parser.add_argument(
        "--splits", type=int, default=5, help="splits per problem; the table shows medians"
    )
    parser.set_defaults(handler=guarded(PROG, _run, capture_warnings=False))
