"""Figures and Markdown of the command-line reports (fit and learn-metric)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from .._report import markdown_table


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
    figure.savefig(path, dpi=110)


def plot_outlier_scores(scores: np.ndarray, threshold: float, path: Path) -> None:
    """Sorted outlier scores (log scale) with the trimming threshold drawn across."""
    figure = Figure(figsize=(6, 4))
    ax = figure.subplots()
    ordered = np.sort(scores)
    flagged = ordered > threshold
    positions = np.arange(1, ordered.size + 1)
    floor = max(float(ordered[ordered > 0].min()) if np.any(ordered > 0) else 1e-12, 1e-12)
    shown = np.maximum(ordered, floor)
    ax.scatter(positions[~flagged], shown[~flagged], s=8, c="tab:blue", label="kept")
    ax.scatter(positions[flagged], shown[flagged], s=14, c="tab:red", marker="x", label="flagged")
    ax.axhline(max(threshold, floor), color="k", linestyle="--", linewidth=1, label="threshold")
    ax.set_yscale("log")
    ax.set_xlabel("rows, sorted by outlier score")
    ax.set_ylabel("outlier score (training loss)")
    ax.legend()
    _save(figure, path)


def plot_predicted_vs_observed(
    observed: np.ndarray, predicted: np.ndarray, flagged: np.ndarray, path: Path
) -> None:
    """Regression: predicted against observed target, flagged rows marked."""
    figure = Figure(figsize=(5, 5))
    ax = figure.subplots()
    ax.scatter(observed[~flagged], predicted[~flagged], s=8, c="tab:blue", label="kept")
    ax.scatter(
        observed[flagged], predicted[flagged], s=20, c="tab:red", marker="x", label="flagged"
    )
    low, high = np.min(observed), np.max(observed)
    ax.plot([low, high], [low, high], color="k", linewidth=1, label="predicted = observed")
    ax.set_xlabel("observed")
    ax.set_ylabel("predicted")
    ax.legend()
    _save(figure, path)


def plot_eigenvalues(eigenvalues: np.ndarray, path: Path) -> None:
    """Eigenvalues of the learned metric Sigma, largest first."""
    figure = Figure(figsize=(6, 4))
    ax = figure.subplots()
    values = np.sort(eigenvalues)[::-1]
    positions = np.arange(1, values.size + 1)
    ax.bar(positions, values, color=np.where(values > 0, "tab:blue", "0.7"))
    ax.set_xlabel("eigenvalue index")
    ax.set_ylabel("eigenvalue of Sigma")
    ax.set_xticks(positions)
    _save(figure, path)
