"""Figures and Markdown of the command-line reports (fit and learn-metric).

The figures never stop a command: infinite or undefined values are left out of a plot (and
counted in its title), a log axis becomes linear when no positive value is left, and a figure
that still cannot be drawn (values too extreme for the axes) is replaced by a PNG that says why.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from sklearn.base import is_classifier
from sklearn.metrics import accuracy_score, root_mean_squared_error

from .. import _report
from ..subquantile import takes_gamma

# Points a scatter of sorted scores draws at most: beyond, every j-th sorted score is shown.
MAX_POINTS = 20_000
# What drawing or laying out a figure with extreme values raises.
_PLOT_ERRORS = (ValueError, OverflowError, FloatingPointError, ZeroDivisionError, RuntimeError)


def markdown_table(frame: pd.DataFrame) -> str:
    """:func:`robustkernel._report.markdown_table` (which escapes ``|``), with line breaks in
    column names and cells (quoted newlines in a CSV header) turned into spaces."""
    flat = frame.copy()
    flat.columns = [_one_line(column) for column in frame.columns]
    for j, dtype in enumerate(flat.dtypes):
        if not pd.api.types.is_numeric_dtype(dtype):
            flat.isetitem(j, flat.iloc[:, j].map(_one_line))
    return _report.markdown_table(flat)


def _one_line(value: object) -> object:
    return " ".join(value.split()) if isinstance(value, str) else value


def key_value_table(values: Mapping[str, object]) -> str:
    """Two-column Markdown table (name, value); floats with 4 significant digits."""
    rows = [
        {"name": name, "value": f"{value:.4g}" if isinstance(value, float) else value}
        for name, value in values.items()
    ]
    return markdown_table(pd.DataFrame(rows, columns=["name", "value"]))


def write_report(path: Path, title: str, sections: Mapping[str, str]) -> None:
    """Write a Markdown report: ``# title``, then one ``## heading`` per section."""
    parts = [f"# {title}\n"] + [
        f"## {heading}\n\n{body.rstrip()}\n" for heading, body in sections.items()
    ]
    path.write_text("\n".join(parts))


def image(name: str, caption: str) -> str:
    """Markdown of a PNG next to the report."""
    return f"![{caption}]({name})\n"


def _save(figure: Figure, path: Path) -> None:
    figure.tight_layout()
    figure.savefig(path, dpi=110, format="png")


def _plot(draw: Callable[[Axes], None], path: Path, figsize: tuple[float, float]) -> bool:
    """Draw on a new figure and save it as PNG; if the values defeat matplotlib, save a figure
    that says so instead. Returns whether the real figure was written."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # overflow of extreme axis limits
            figure = Figure(figsize=figsize)
            draw(figure.subplots())
            _save(figure, path)
        return True
    except _PLOT_ERRORS as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        placeholder = Figure(figsize=figsize)
        placeholder.text(
            0.5, 0.5, f"figure not drawn:\n{reason[:200]}", ha="center", va="center", wrap=True
        )
        placeholder.savefig(path, dpi=110, format="png")
        return False


def _left_out(n: int) -> str:
    return f"{n} infinite or undefined value(s) not shown" if n else ""


def fit_settings(
    args: Any, *, model: str, scaling: str, model_file: str, kernel: str
) -> dict[str, Any]:
    """The Settings table of a fit report: the command's arguments and what they built
    (``kernel``: the estimator's kernel, and the one kernel="auto" chose)."""
    return {
        "data": str(args.data),
        "target": args.target,
        "task": args.task,
        "epsilon": args.epsilon,
        "kernel": kernel,
        "alpha": args.alpha,
        "gamma": args.gamma,
        "solver": args.solver,
        "random_state": args.random_state,
        "model": model,
        "feature scaling": scaling,
        "model file": model_file,
    }


def _gamma_shown(model: Any) -> object:
    """gamma_ as the report states it: "none (the ... kernel has no gamma)" for the kernels
    without one (linear, cosine, precomputed, a callable), "1 / n_features" for None."""
    if not takes_gamma(model.kernel_):
        return f"none (the {model.kernel_} kernel has no gamma)"
    return "1 / n_features" if model.gamma_ is None else float(model.gamma_)


def fit_statistics(
    model: Any, observed: np.ndarray, predicted: np.ndarray, seconds: float
) -> dict[str, Any]:
    """What a fit report states about a fitted Subquantile estimator: its estimated epsilon,
    alpha and gamma, the rows flagged, the training RMSE (regressor) or accuracy (classifier)
    on the kept rows and on all rows, iterations and time."""
    kept = np.asarray(model.inlier_mask_)  # a Dask fit's: computed
    if is_classifier(model):
        metric, score = "accuracy", accuracy_score
    else:
        metric, score = "RMSE", root_mean_squared_error
    return {
        "estimated epsilon (epsilon_)": float(model.epsilon_),
        "alpha (alpha_)": float(model.alpha_),
        "gamma (gamma_)": _gamma_shown(model),
        "rows flagged": int((~kept).sum()),
        "threshold (k-th smallest loss)": float(model.threshold_),
        f"training {metric}, kept rows": float(score(observed[kept], predicted[kept])),
        f"training {metric}, all rows": float(score(observed, predicted)),
        "iterations": int(model.n_iter_),
        "converged": bool(model.converged_),
        "fit seconds": round(seconds, 3),
    }


def plot_outlier_scores(scores: np.ndarray, threshold: float, path: Path) -> bool:
    """Sorted outlier scores (log scale) with the trimming threshold drawn across.

    Infinite or undefined scores are left out (their count is in the title); the axis is linear
    when no score is positive. More than ``MAX_POINTS`` scores are thinned to every j-th of
    the sorted ones (the largest always shown). Returns whether the figure could be drawn.
    """
    scores = np.asarray(scores, dtype=np.float64)
    finite = np.isfinite(scores)

    def draw(ax: Axes) -> None:
        ordered = np.sort(scores[finite])
        positions = np.arange(1, ordered.size + 1)
        step = -(-ordered.size // MAX_POINTS)
        if step > 1:
            shown_rows = np.unique(np.r_[np.arange(0, ordered.size, step), ordered.size - 1])
            ordered, positions = ordered[shown_rows], positions[shown_rows]
        flagged = ordered > threshold if np.isfinite(threshold) else np.zeros(ordered.size, bool)
        log = bool(np.any(ordered > 0))
        floor = max(float(ordered[ordered > 0].min()), 1e-12) if log else -np.inf
        shown = np.maximum(ordered, floor)
        ax.scatter(positions[~flagged], shown[~flagged], s=8, c="tab:blue", label="kept")
        ax.scatter(
            positions[flagged], shown[flagged], s=14, c="tab:red", marker="x", label="flagged"
        )
        if np.isfinite(threshold):
            line = max(threshold, floor)
            ax.axhline(line, color="k", linestyle="--", linewidth=1, label="threshold")
        if log:
            ax.set_yscale("log")
        ax.set_title(_left_out(int((~finite).sum())), fontsize=9)
        ax.set_xlabel(
            "rows, sorted by outlier score" + (f" (every {step}th shown)" if step > 1 else "")
        )
        ax.set_ylabel("outlier score (training loss)")
        ax.legend()

    return _plot(draw, path, (6, 4))


def plot_predicted_vs_observed(
    observed: np.ndarray, predicted: np.ndarray, flagged: np.ndarray, path: Path
) -> bool:
    """Regression: predicted against observed target, flagged rows marked.

    Rows with an infinite or undefined value are left out (counted in the title). Returns
    whether the figure could be drawn.
    """
    observed = np.asarray(observed, dtype=np.float64)
    predicted = np.asarray(predicted, dtype=np.float64)
    flagged = np.asarray(flagged, dtype=bool)
    finite = np.isfinite(observed) & np.isfinite(predicted)

    def draw(ax: Axes) -> None:
        shown = finite & ~flagged
        ax.scatter(observed[shown], predicted[shown], s=8, c="tab:blue", label="kept")
        shown = finite & flagged
        ax.scatter(
            observed[shown], predicted[shown], s=20, c="tab:red", marker="x", label="flagged"
        )
        if finite.any():
            low, high = np.min(observed[finite]), np.max(observed[finite])
            ax.plot([low, high], [low, high], color="k", linewidth=1, label="predicted = observed")
        ax.set_title(_left_out(int((~finite).sum())), fontsize=9)
        ax.set_xlabel("observed")
        ax.set_ylabel("predicted")
        ax.legend()

    return _plot(draw, path, (5, 5))


def plot_intervals(
    observed: np.ndarray,
    intervals: np.ndarray,
    predicted: np.ndarray,
    flagged: np.ndarray,
    coverage: float,
    path: Path,
) -> bool:
    """Regression: each row's prediction interval (a vertical bar at its fitted value) and its
    observed target, flagged rows marked; the title gives the share of kept rows inside.

    Rows with an infinite or undefined value are left out. Returns whether the figure could
    be drawn.
    """
    observed = np.asarray(observed, dtype=np.float64)
    flagged = np.asarray(flagged, dtype=bool)
    finite = np.isfinite(observed) & np.isfinite(intervals).all(axis=1) & np.isfinite(predicted)
    inside = (observed >= intervals[:, 0]) & (observed <= intervals[:, 1])
    kept = finite & ~flagged

    def draw(ax: Axes) -> None:
        ax.vlines(
            predicted[finite], intervals[finite, 0], intervals[finite, 1], color="0.75",
            linewidth=1, label=f"{coverage:.0%} interval",
        )
        ax.scatter(predicted[kept], observed[kept], s=8, c="tab:blue", label="kept")
        shown = finite & flagged
        ax.scatter(
            predicted[shown], observed[shown], s=20, c="tab:red", marker="x", label="flagged"
        )
        share = float(inside[kept].mean()) if kept.any() else float("nan")
        title = f"{share:.1%} of the kept rows inside (in sample; {coverage:.0%} for new rows)"
        left_out = _left_out(int((~finite).sum()))
        ax.set_title(f"{title}; {left_out}" if left_out else title, fontsize=9)
        ax.set_xlabel("fitted value")
        ax.set_ylabel("observed")
        ax.legend(fontsize=8)

    return _plot(draw, path, (6, 5))


def plot_eigenvalues(eigenvalues: np.ndarray, path: Path) -> bool:
    """Eigenvalues of the learned metric Sigma, largest first (non-finite ones left out).

    Returns whether the figure could be drawn.
    """
    eigenvalues = np.asarray(eigenvalues, dtype=np.float64)
    finite = np.isfinite(eigenvalues)

    def draw(ax: Axes) -> None:
        values = np.sort(eigenvalues[finite])[::-1]
        positions = np.arange(1, values.size + 1)
        ax.bar(positions, values, color=np.where(values > 0, "tab:blue", "0.7"))
        ax.set_title(_left_out(int((~finite).sum())), fontsize=9)
        ax.set_xlabel("eigenvalue index")
        ax.set_ylabel("eigenvalue of Sigma")
        ax.set_xticks(positions)

    return _plot(draw, path, (6, 4))


def kernel_description(subq: Any) -> str:
    """The estimator's kernel; for kernel="auto", with the kernel it chose."""
    if subq.kernel == "auto":
        return f"auto (chose {subq.kernel_})"
    return str(subq.kernel)


def flags_explained(subq: Any) -> str:
    """How the report's flags were decided: the high-breakdown start (kernel="auto") or the
    trim and the rejection of implausible kept rows."""
    if subq.kernel == "auto":
        return (
            "Each row's loss under the final fit (kernel ridge with the "
            f"{subq.kernel_} kernel on the kept rows). The flagged rows are those the "
            "high-breakdown start left out (kernel least trimmed squares, then the adaptive "
            "cutoff on studentized leave-one-out residuals: the excess of their tail over the "
            "normal's) whose p-value is below 0.01 under the noise the rows show (a local "
            "scale and fitted tails: the second stage gives the others back). Per row: "
            "residual (y less the prediction, leave-one-out for a kept row, in the target's "
            "units), fitted, robust_z (the p-value as a signed normal quantile), pvalue, "
            "x_distance (from the kept rows, in units of their own spacing) and kind: 'wrong y' "
            "where x is ordinary, 'unusual x' where the row lies beyond 3 units from the kept "
            "rows (the fit extrapolates there: a bad leverage point, or a correct row of a "
            "region the data barely cover)."
        )
    if is_classifier(subq) and subq.epsilon == "auto":
        return (
            "Each row's training loss under the final fit. The flagged rows are those whose "
            "label the data contradict (confident learning): out-of-fold class probabilities, "
            "a threshold per class (its rows' mean probability of their own label), and for "
            "each pair of classes as many rows as its estimated share of flipped labels, "
            "repeated with fold models fitted without the flagged rows."
        )
    trimmed = "Each row's training loss under the final fit; rows above the threshold were trimmed "
    if subq.epsilon != "auto" and subq.refine != "reject":
        return trimmed + "(flagged): the given epsilon is the fraction trimmed."
    return trimmed + (
        "(flagged), as were kept rows whose loss is implausible under the fit (a studentized "
        "residual beyond 5 sigma, or a label probability below 0.2)."
    )
