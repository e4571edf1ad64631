"""Summaries of finished SubQ tables: per-cell checks, each table's Markdown, the criteria.

The criteria: SubQ's mean test RMSE within ``ORACLE_FACTOR`` (10 %) of Oracle ERM's (regression),
SubQ's mean better than every baseline of its table, and SubQ matching or beating the paper's
SubQ number within one of our standard deviations; the same checks are made of the paper's own
SubQ numbers against our Oracle ERM and baselines.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..._report import markdown_table
from ._specs import METHOD_NAMES, SUBQ_VARIANTS, TABLE_SPECS, SubqTable

__all__ = ["ORACLE_FACTOR", "cell_summary", "criteria_report", "summarize_tables", "table_markdown"]

ORACLE_FACTOR = 1.10  # SubQ's mean test RMSE at most 10 % above Oracle ERM's


def _better(a: float, b: float, metric: str) -> bool:
    return a < b if metric == "rmse" else a > b


def cell_summary(frame: pd.DataFrame, spec: SubqTable, method: str = "subq") -> pd.DataFrame:
    """Per cell (kind, eps): SubQ's mean against Oracle ERM, the baselines and the paper.

    Parameters
    ----------
    frame : DataFrame
        The table's runs (columns method, kind, eps, seed, value).
    spec : SubqTable
        The table.
    method : {"subq", "subq_erm", "subq_starts"}, default="subq"
        The SubQ variant checked (the paper's number is that of the papers' SubQ).

    Returns
    -------
    summary : DataFrame
        Columns kind, eps, subq (mean), subq_std, oracle_ratio (SubQ / Oracle ERM mean RMSE,
        regression only), within_oracle (ratio <= 1.10), beats_baselines (SubQ's mean better
        than that of KRR or SVM, TERM and SEVER, those in the table), paper (SubQ's paper
        number, NaN if none), matches_paper (ours better than the paper, or within one std),
        paper_oracle_ratio (the paper's SubQ number / our Oracle ERM mean RMSE: whether the
        paper's own result would meet the 1.10 criterion against our oracle) and
        paper_within_oracle (that ratio <= 1.10), paper_beats_baselines (the paper's SubQ number
        better than our mean of every baseline in the table).
    """
    stats = frame.groupby(["kind", "eps", "method"])["value"].agg(["mean", "std"])
    rows = []
    for kind in spec.kinds:
        for eps in spec.epsilons:
            mean = stats.loc[(kind, eps), "mean"]
            subq = float(mean[method])
            std = float(np.nan_to_num(stats.loc[(kind, eps, method), "std"]))  # one seed: 0
            has_oracle = spec.metric == "rmse" and "oracle" in mean.index
            ratio = float(subq / mean["oracle"]) if has_oracle else np.nan
            rivals = [m for m in ("krr", "svm", "term", "sever") if m in mean.index]
            paper = spec.paper.get("subq", {}).get((kind, eps), np.nan)
            paper_ratio = float(paper / mean["oracle"]) if has_oracle else np.nan
            target = paper + std if spec.metric == "rmse" else paper - std
            rows.append(
                {
                    "kind": kind,
                    "eps": eps,
                    "subq": subq,
                    "subq_std": std,
                    "oracle_ratio": ratio,
                    "within_oracle": bool(ratio <= ORACLE_FACTOR) if np.isfinite(ratio) else None,
                    "beats_baselines": all(_better(subq, mean[m], spec.metric) for m in rivals),
                    "paper": paper,
                    "matches_paper": (
                        bool(not _better(target, subq, spec.metric)) if np.isfinite(paper) else None
                    ),
                    "paper_oracle_ratio": paper_ratio,
                    "paper_within_oracle": (
                        bool(paper_ratio <= ORACLE_FACTOR) if np.isfinite(paper_ratio) else None
                    ),
                    "paper_beats_baselines": (
                        all(_better(paper, mean[m], spec.metric) for m in rivals)
                        if np.isfinite(paper)
                        else None
                    ),
                }
            )
    return pd.DataFrame(rows)


def _format_cells(frame: pd.DataFrame, spec: SubqTable) -> pd.DataFrame:
    stats = frame.groupby(["method", "kind", "eps"])["value"].agg(["mean", "std"])
    columns = [(kind, eps) for kind in spec.kinds for eps in spec.epsilons]
    rows = []
    for method in dict.fromkeys(frame["method"]):
        row = {"method": METHOD_NAMES[method]}
        for kind, eps in columns:
            mean, std = stats.loc[(method, kind, eps)]
            text = f"{mean:.3f} ({0.0 if np.isnan(std) else std:.3f})"
            paper = spec.paper.get(method, {}).get((kind, eps))
            if paper is not None:
                text += f" [{paper:.3f}]"
            label = f"eps={eps:g}" if len(spec.kinds) == 1 else f"{kind} eps={eps:g}"
            row[label] = text
        rows.append(row)
    return pd.DataFrame(rows)


def _count(cells: pd.Series) -> str:
    """ "met/known" over the cells where a check applies; "-" where it applies to none."""
    known = cells.dropna().astype(bool)
    return f"{int(known.sum())}/{len(known)}" if len(known) else "-"


def _checks_text(frame: pd.DataFrame, spec: SubqTable, method: str) -> str:
    summary = cell_summary(frame, spec, method)
    checks = summary.assign(
        subq=summary["subq"].round(3),
        subq_std=summary["subq_std"].round(3),
        oracle_ratio=summary["oracle_ratio"].round(3),
        paper_oracle_ratio=summary["paper_oracle_ratio"].round(3),
    )
    name = METHOD_NAMES[method]
    lines = [
        f"- {name} beats every baseline of the table (mean): "
        f"{_count(summary['beats_baselines'])} cells",
        f"- {name} matches or beats the paper's SubQ (within one std): "
        f"{_count(summary['matches_paper'])} cells with a paper number",
    ]
    if summary["within_oracle"].notna().any():
        lines.insert(
            0, f"- {name} <= 1.10 x Oracle ERM RMSE: {_count(summary['within_oracle'])} cells"
        )
    return (
        f"\nPer-cell checks of {name}:\n\n"
        + markdown_table(checks)
        + "\n"
        + "\n".join(lines)
        + "\n"
    )


def table_markdown(frame: pd.DataFrame, spec: SubqTable, repetitions: int) -> str:
    """The Markdown section of one table: settings, mean (std) per cell, the per-cell checks."""
    metric = "test RMSE (lower is better)" if spec.metric == "rmse" else "test accuracy"
    kernel = spec.kernel if spec.gamma is None else f"{spec.kernel}, gamma = {spec.gamma:g}"
    if spec.kernel == "rbf" and spec.gamma is None:
        kernel = "rbf, gamma = 1 / n_features"
    if spec.n_components is not None:
        kernel += f" (SubQ and Oracle ERM: {spec.n_components} Nystroem features)"
    if spec.alpha is None:
        chosen = frame.groupby("seed")["alpha"].first()
        alpha = (
            f"alpha chosen on the clean training split by 5-fold CV of Oracle ERM's learner "
            f"(paper: {spec.paper_lambda}), per seed {', '.join(f'{a:g}' for a in chosen)}"
        )
    else:
        alpha = f"alpha = {spec.alpha:g} (paper: {spec.paper_lambda}; alpha = lambda / 2)"
    return (
        f"### {spec.name} ({spec.source}, {spec.data})\n\n"
        f"Command: `robustkernel reproduce {spec.name} --repetitions {repetitions}`\n\n"
        f"{metric}, mean (std) over {repetitions} seeds; [paper's number]. Corruption: "
        f"{', '.join(spec.kinds)} of the training rows. Kernel {kernel}; "
        f"{alpha}; SVM C = 1 / (2 alpha); SubQ radius R = {spec.radius}, start "
        f"{spec.init!r}; SEVER options {spec.sever or 'default'}; "
        f"standardized: {spec.standardize}.\n\n"
        + markdown_table(_format_cells(frame, spec))
        + "".join(
            _checks_text(frame, spec, method)
            for method in SUBQ_VARIANTS
            if (frame["method"] == method).any()
        )
    )


def summarize_tables(out_dir: str | Path = "results", method: str = "subq") -> pd.DataFrame:
    """:func:`cell_summary` of every SubQ table whose CSV exists in ``out_dir``, stacked.

    Parameters
    ----------
    out_dir : str or Path, default="results"
        The folder the tables were written to.
    method : {"subq", "subq_erm", "subq_starts"}, default="subq"
        The SubQ variant checked; tables without its runs are left out.

    Returns
    -------
    summary : DataFrame
        The per-cell summaries with a leading ``table`` column.
    """
    frames = {
        name: pd.read_csv(path)
        for name in TABLE_SPECS
        if (path := Path(out_dir) / f"{name}.csv").exists()
    }
    parts = [
        cell_summary(frame, TABLE_SPECS[name], method).assign(table=name)
        for name, frame in frames.items()
        if (frame["method"] == method).any()
    ]
    columns = ["table", *parts[0].columns.drop("table")] if parts else ["table"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def criteria_report(out_dir: str | Path = "results") -> str:
    """The reproduction criteria over every SubQ table in ``out_dir``, as Markdown.

    For each SubQ variant with runs (``SUBQ_VARIANTS``), counts over the cells of
    the tables whose CSV exists: SubQ <= 1.10 x Oracle ERM RMSE (regression), SubQ's mean better
    than every baseline of its table, SubQ matching or beating the paper's SubQ number (within
    one of our std), and the same two checks of the paper's own SubQ number (<= 1.10 x our Oracle
    ERM, better than our baselines); then the same per table.

    Parameters
    ----------
    out_dir : str or Path, default="results"
        The folder the tables were written to.

    Returns
    -------
    report : str
        Per variant, a heading, a bullet list of the totals and a per-table Markdown table ("-"
        where a check does not apply).
    """
    checks = {  # column: (bullet text, per-table header)
        "within_oracle": ("<= 1.10 x Oracle ERM test RMSE", "within 1.10 x oracle"),
        "beats_baselines": ("mean better than every baseline of its table", "beats baselines"),
        "matches_paper": (
            "matches or beats the paper's SubQ (within one of our std)",
            "matches paper",
        ),
        "paper_within_oracle": (
            "the paper's SubQ number <= 1.10 x our Oracle ERM",
            "paper within 1.10 x oracle",
        ),
        "paper_beats_baselines": (
            "the paper's SubQ number better than every baseline of its table (ours)",
            "paper beats baselines",
        ),
    }

    sections = []
    for method in SUBQ_VARIANTS:
        summary = summarize_tables(out_dir, method)
        if summary.empty:
            continue
        name = METHOD_NAMES[method]
        lines = [
            f"- {text if column.startswith('paper_') else f'{name} {text}'}: "
            f"**{_count(summary[column])}** cells"
            for column, (text, _) in checks.items()
        ]
        per_table = pd.DataFrame(
            [
                {"table": table, **{head: _count(part[c]) for c, (_, head) in checks.items()}}
                for table, part in summary.groupby("table", sort=False)
            ]
        )
        sections.append(f"**{name}**\n\n" + "\n".join(lines) + "\n\n" + markdown_table(per_table))
    if not sections:
        raise FileNotFoundError(f"No SubQ table CSV in {out_dir}; run 'robustkernel reproduce'.")
    return "\n".join(sections)
