"""The targets of the problems the issue names (``bench_named_problems.py``): the SubQ papers'
polynomial problem and a 30% shift at one edge of a linear relation, judged by the script and
by the scorecard alike."""

from __future__ import annotations

import pandas as pd

TARGETS = {"polynomial": 1.10, "edge shift": 1.5}  # the defaults' RMSE over the oracle's, median


def summary(rows: list[dict]) -> pd.DataFrame:
    """Per problem and eps: the median of the defaults over the oracle against its target."""
    table = pd.DataFrame(rows)
    lines = []
    for (problem, eps), chosen in table.groupby(["problem", "eps"], sort=False):
        median = float(chosen["defaults / oracle"].median())
        bound = TARGETS[str(problem)]
        lines.append(
            {
                "problem": problem,
                "eps": eps,
                "median defaults / oracle": round(median, 3),
                "target": f"<= {bound}",
                "met": "met" if median <= bound else "missed",
            }
        )
    return pd.DataFrame(lines)
