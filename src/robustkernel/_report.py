"""Markdown tables of the demo and the reproduction command (the benchmarks add theirs in
benchmarks/harness/report.py)."""

from __future__ import annotations

import math
from numbers import Real

import pandas as pd

NOT_MEASURED = "-"
"""The cell of a missing number (NaN): a method without that output, or not run there."""


def markdown_table(frame: pd.DataFrame) -> str:
    """GitHub-flavoured Markdown table of ``frame`` (index dropped), without extra dependencies."""
    header = [_cell(column) for column in frame.columns]
    rows = [[_cell(value) for value in row] for row in frame.itertuples(index=False)]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
    return "\n".join(lines) + "\n"


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, Real) and math.isnan(value):
        return NOT_MEASURED
    return str(value).replace("|", "\\|")
