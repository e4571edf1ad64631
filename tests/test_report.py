"""The Markdown tables of the demo, the reproduction command and the benchmarks."""

from __future__ import annotations

import numpy as np
import pandas as pd

from robustkernel._report import markdown_table


def test_markdown_table_escapes_pipes_and_keeps_rows():
    text = markdown_table(pd.DataFrame({"a": [1, 2], "b": ["x|y", None]}))
    lines = text.strip().splitlines()
    assert lines[0] == "| a | b |"
    assert len(lines) == 4
    assert "x\\|y" in lines[2]


def test_markdown_table_escapes_pipes_in_the_header():
    text = markdown_table(pd.DataFrame({"||P - Q||_F": [0.5]}))
    header = text.splitlines()[0]
    assert header == "| \\|\\|P - Q\\|\\|_F |"
    assert header.replace("\\|", "").count("|") == 2  # one column: only the outer pipes


def test_markdown_table_shows_a_missing_number_as_a_dash():
    frame = pd.DataFrame({"method": ["SIR", "GP"], "RMSE": [float("nan"), 0.25]})
    frame["ratio"] = np.array([np.nan, 1.5], dtype=np.float32)
    lines = markdown_table(frame).splitlines()
    assert lines[2] == "| SIR | - | - |"
    assert lines[3] == "| GP | 0.25 | 1.5 |"
