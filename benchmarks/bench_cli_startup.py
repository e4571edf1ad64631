"""Start-up time of the command line: ``robustkernel --help`` and ``robustkernel fit --help``.

Each command runs ``--repeats`` times as a new process (the installed ``robustkernel`` script
next to this Python, else ``python -m robustkernel.cli``); the table gives the median wall
time and the median CPU time (user + system) of the process, against the interpreter alone
(``python -c pass``, the floor no command can beat). Help must not import the estimators,
pandas or matplotlib: the commands import them when they run.

    python benchmarks/bench_cli_startup.py [--repeats 5] [--no-write]

prints the table and writes it into BENCHMARKS.md (section "Start-up time of the command line
(bench_cli_startup.py)"). Run it alone: no other job on the machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from harness.timing import write_section

SECTION = "## Start-up time of the command line (bench_cli_startup.py)"


def command_line() -> list[str]:
    """The installed ``robustkernel`` script beside this interpreter, else the module."""
    script = Path(sys.executable).with_name("robustkernel")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "robustkernel.cli"]


def run_times(argv: list[str], repeats: int) -> tuple[float, float]:
    """Median wall and CPU seconds (user + system of the child) of ``repeats`` runs of ``argv``."""
    walls, cpus = [], []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each command (median)")
    parser.add_argument("--no-write", action="store_true", help="do not update BENCHMARKS.md")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    start = time.perf_counter()
    robustkernel = command_line()
    commands = {
        "python -c pass (the interpreter alone)": [sys.executable, "-c", "pass"],
        "robustkernel --help": [*robustkernel, "--help"],
        "robustkernel fit --help": [*robustkernel, "fit", "--help"],
    }
    rows = []
    for name, command in commands.items():
        wall, cpu = run_times(command, args.repeats)
        rows.append({"command": name, "median wall s": wall, "median CPU s": cpu})
    floor = rows[0]["median wall s"]
    for row in rows:
        row["wall / interpreter"] = row["median wall s"] / floor
    write_section(
        SECTION,
        "bench_cli_startup.py",
        sys.argv[1:] if argv is None else argv,
        load_before,
        start,
        __doc__.split("\n\n")[1] + f" Median of {args.repeats} runs.",
        pd.DataFrame(rows).round(3),
        args.no_write,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
