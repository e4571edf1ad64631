"""Markdown tables of the demo and the reproduction command (the benchmarks add theirs in
benchmarks/harness/report.py)."""

from __future__ import annotations

import pandas as pd


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
    return "" if value is None else str(value).replace("|", "\\|")
