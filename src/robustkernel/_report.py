"""Small text-report helpers shared by the demo, the benchmarks and the reproduction command."""

from __future__ import annotations

import os
import platform
from pathlib import Path

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


def replace_markdown_section(
    path: Path, heading: str, body: str, *, title: str = "# Benchmarks"
) -> None:
    """Replace the section starting with ``heading`` in the Markdown file ``path`` (or append it).

    A section runs from its heading line to the next ``## `` heading. ``body`` must start with
    ``heading``. The file is created (starting with the line ``title``) when missing.
    """
    if not body.startswith(heading):
        raise ValueError("body must start with its heading")
    text = path.read_text() if path.exists() else title + "\n"
    start = text.find(heading + "\n")  # the whole heading line, not a longer one it begins
    if start >= 0:
        end = text.find("\n## ", start + len(heading))
        text = text[:start] + body.rstrip("\n") + "\n" + (text[end:] if end >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + body.rstrip("\n") + "\n"
    path.write_text(text)


def cpu_description(cpuinfo: str | Path = "/proc/cpuinfo") -> str:
    """The CPU model and core count, e.g. "Intel(R) Xeon(R) Processor, 2 cores".

    The model is the first "model name" line of ``cpuinfo`` (Linux), else
    ``platform.processor()``, else "unknown CPU model".
    """
    model = ""
    path = Path(cpuinfo)
    if path.is_file():
        for line in path.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                model = value.strip()
                break
    model = model or platform.processor() or "unknown CPU model"
    return f"{model}, {os.cpu_count()} cores"
