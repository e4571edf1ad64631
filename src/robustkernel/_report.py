"""Small text-report helpers shared by the demo, the benchmarks and the reproduction command."""

from __future__ import annotations

import pandas as pd


def markdown_table(frame: pd.DataFrame) -> str:
    """GitHub-flavoured Markdown table of ``frame`` (index dropped), without extra dependencies."""
    header = [str(column) for column in frame.columns]
    rows = [[_cell(value) for value in row] for row in frame.itertuples(index=False)]
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]
    return "\n".join(lines) + "\n"


def _cell(value: object) -> str:
    return "" if value is None else str(value).replace("|", "\\|")
