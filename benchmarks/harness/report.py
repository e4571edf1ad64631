"""The benchmarks' report helpers: Markdown tables (the library's), BENCHMARKS.md sections, the
machine's CPU."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from robustkernel._report import markdown_table

__all__ = [
    "RunClock",
    "cpu_description",
    "markdown_table",
    "replace_markdown_section",
    "rows_and_seeds_parser",
]


def rows_and_seeds_parser(description: str, rows: int, seeds: int, out: Path):
    """An argument parser with ``--rows``, ``--seeds``, ``--no-write`` and ``--out`` (default
    ``out``): the small calibration benchmarks' options."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rows", type=int, default=rows)
    parser.add_argument("--seeds", type=int, default=seeds)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--out", type=Path, default=out)
    return parser


class RunClock:
    """The load average at the start, then wall and process CPU time since it."""

    def __init__(self) -> None:
        import time

        self._time = time
        self.load_before = os.getloadavg()
        self.wall = time.perf_counter()
        self.cpu = time.process_time()

    def note(self) -> str:
        """The load averages before and now, the wall and CPU seconds, as one sentence."""
        wall = self._time.perf_counter() - self.wall
        cpu = self._time.process_time() - self.cpu
        before = ", ".join(f"{v:.2f}" for v in self.load_before)
        after = ", ".join(f"{v:.2f}" for v in os.getloadavg())
        return (
            f"Load average before: {before}; after: {after}. Wall time {wall:.0f} s, CPU time "
            f"{cpu:.0f} s (this process)."
        )


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
