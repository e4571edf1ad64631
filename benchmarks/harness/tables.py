"""The summaries of the classification race (bench_robust.py): runs against the oracle of the
same seed, a table per cell, the summary over cells.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .peers import METRIC_NAMES, ORACLE

NEAR_BEST_ACCURACY = 0.02  # within 2 accuracy points of the best median


# ----------------------------------------------------------------------------------------------
# Summaries.


def with_oracle(frame: pd.DataFrame, task: str) -> pd.DataFrame:
    """Runs of the methods with the oracle's metric of the same seed and ``relative``.

    ``relative`` is oracle accuracy - accuracy: lower is better.

    Parameters
    ----------
    frame : DataFrame
        Runs of one task, the oracle's included.
    task : str
        The task.

    Returns
    -------
    frame : DataFrame
        The methods' runs with columns ``oracle`` and ``relative``.
    """
    cell = ["data", "attack", "eps", "seed"]
    oracle = frame[frame["method"] == ORACLE].set_index(cell)["metric"].rename("oracle")
    runs = frame[frame["method"] != ORACLE].join(oracle, on=cell)
    runs["relative"] = runs["oracle"] - runs["metric"]
    return runs


def cell_table(runs: pd.DataFrame, task: str, methods: Sequence[str]) -> pd.DataFrame:
    """Per cell: the oracle's median metric, each method's median, the best and the near-best.

    The cells show the median accuracy. Near-best ("within 2 %"): accuracy >= best accuracy -
    0.02 (two points, absolute).

    Parameters
    ----------
    runs : DataFrame
        :func:`with_oracle`'s output.
    task : str
        The task.
    methods : sequence of str
        Column order.

    Returns
    -------
    table : DataFrame
        One row per cell; the method columns hold floats (NaN: every seed failed).
    """
    cell = ["data", "attack", "eps"]
    table = runs.pivot_table(index=cell, columns="method", values="metric", aggfunc="median")
    table = table.reindex(columns=list(methods))
    oracle = runs.groupby(cell)["oracle"].median()
    best_value = table.max(axis=1)
    near = table.ge(best_value - NEAR_BEST_ACCURACY - 1e-12, axis=0)
    best = table.idxmax(axis=1)
    table.insert(0, "oracle " + METRIC_NAMES[task], oracle.reindex(table.index))
    table["best"] = best
    table["within 2%"] = [", ".join(c for c in methods if row[c]) for _, row in near.iterrows()]
    table["_near"] = [dict(row) for _, row in near.iterrows()]
    return table.reset_index()


def summary_table(
    runs: pd.DataFrame, cell: pd.DataFrame, task: str, methods: Sequence[str]
) -> pd.DataFrame:
    """Per method: cells best-or-within-2 %, median and worst relative score, median fit time.

    Parameters
    ----------
    runs : DataFrame
        :func:`with_oracle`'s output.
    cell : DataFrame
        :func:`cell_table`'s output.
    task : str
        The task.
    methods : sequence of str
        Row order.

    Returns
    -------
    table : DataFrame
        One row per method.
    """
    per_cell = runs.groupby(["data", "attack", "eps", "method"])["relative"].median()
    rows = []
    for name in methods:
        values = per_cell.xs(name, level="method") if name in runs["method"].values else None
        mine = runs[runs["method"] == name]
        n_near = sum(bool(near.get(name, False)) for near in cell["_near"])
        n_best = int((cell["best"] == name).sum())
        label = "accuracy gap to oracle"
        rows.append(
            {
                "method": name,
                "cells best": n_best,
                "cells best or within 2%": f"{n_near} / {len(cell)}",
                f"median {label}": None if values is None else _round(values.median()),
                f"worst {label}": None if values is None else _round(values.max()),
                "median fit s": _round(mine["seconds"].median(), 2),
                "median flag precision / recall": _flag_summary(mine),
                "failed runs": int(mine["error"].fillna("").ne("").sum()),
            }
        )
    return pd.DataFrame(rows)


def _flag_summary(runs: pd.DataFrame) -> str:
    """"precision / recall" medians of the flagged rows against the corrupted ones over
    ``runs`` (runs cached before the columns existed count as missing), or "" for a method
    that flags no rows.

    Parameters
    ----------
    runs : DataFrame
        One method's runs.

    Returns
    -------
    summary : str
        The two medians, or "".
    """
    if "flag_recall" not in runs or runs["flag_recall"].isna().all():
        return ""
    precision = runs["flag_precision"].median()
    return f"{precision:.2f} / {runs['flag_recall'].median():.2f}"


def _round(value: float, digits: int = 3) -> float | str:
    """``value`` rounded, or "fail" for NaN.

    Parameters
    ----------
    value : float
        A number.
    digits : int, default=3
        Decimals.

    Returns
    -------
    rounded : float or str
        The rounded number or "fail".
    """
    return "fail" if pd.isna(value) else round(float(value), digits)


def printable(cell: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """The cell table with rounded numbers and without the helper column.

    Parameters
    ----------
    cell : DataFrame
        :func:`cell_table`'s output.
    methods : sequence of str
        Method columns.

    Returns
    -------
    table : DataFrame
        For Markdown.
    """
    table = cell.drop(columns="_near").copy()
    numeric = [c for c in table.columns if c in methods or c.startswith("oracle ")]
    for column in numeric:
        table[column] = [_round(v) for v in table[column]]
    return table


