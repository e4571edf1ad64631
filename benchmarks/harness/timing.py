"""Timing helpers of the benchmarks: median fits, a timing section with the machine, the load
average and the wall time, the CPU seconds of a process and its children, and a failed fit's
error text."""

from __future__ import annotations

import os
import platform
import resource
import shlex
import statistics
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn

import robustkernel

from .report import cpu_description, markdown_table, replace_markdown_section


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of its waited-for children (R, say)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def error_text(exc: BaseException) -> str:
    """A failed fit's record: the exception's type and the first line of its message, at most
    100 characters."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= 100 else text[:97] + "..."


def timed(make: Callable[[], object], X, y, repeats: int) -> tuple[float, float, object]:
    """Median wall and CPU seconds of ``repeats`` fits, and the last fitted model."""
    walls, cpus = [], []
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cpu, start = time.process_time(), time.perf_counter()
            model = make().fit(X, y)
            walls.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), model


def write_section(
    section: str,
    script: str,
    argv: list[str],
    load_before: tuple[float, float, float],
    start: float,
    description: str,
    frame: pd.DataFrame,
    no_write: bool,
) -> None:
    """Print a timing section (the command, the machine, the load average before and now, the
    wall time since ``start``, the description, the table) and, unless ``no_write``, put it
    into BENCHMARKS.md."""
    load_after = os.getloadavg()
    command = f"python benchmarks/{script} " + shlex.join(argv)
    body = (
        f"{section}\n\n"
        f"Command: `{command.strip()}`  \n"
        f"Machine: {platform.machine()}, {cpu_description()}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}, robustkernel {robustkernel.__version__}; one BLAS thread.  \n"
        f"Load average (1, 5, 15 min) before: {', '.join(f'{v:.2f}' for v in load_before)}; "
        f"after: {', '.join(f'{v:.2f}' for v in load_after)}. Wall time "
        f"{time.perf_counter() - start:.0f} s.\n\n"
        + " ".join(description.split())
        + "\n\n"
        + markdown_table(frame)
    )
    print(body)
    if not no_write:
        replace_markdown_section(
            Path(__file__).resolve().parents[2] / "BENCHMARKS.md", section, body
        )
