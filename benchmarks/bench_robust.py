"""Robustness without knobs: robust classification methods on contaminated labels.

The harness that decides the classifier's defaults (the regressor's are decided by
``scorecard.py``, whose planted grid replaced this script's regression task: that task and its
peers are at commit af4154f). Every cell is a data set x attack x eps; every run is one method
fitted on one seed's contaminated training rows and scored on the clean test rows. Protocol per
seed: a stratified 80/20 split, x standardized with the clean training statistics
(:func:`robustkernel.corruption.contaminated_split` with eps = 0), then eps of the training rows
corrupted by the attack; the test rows are never corrupted. eps = 0 is one clean cell per data
set (attack "none").

Test accuracy, and the gap ``oracle accuracy - accuracy`` per seed, the oracle being ``svc_cv``
on the uncorrupted training rows. A cell reports each method's median over seeds, the best
method and the methods *within 2 %* of it: median accuracy >= the best (largest) median accuracy
of the cell - 0.02 (two accuracy points, absolute).

The oracle is a reference, never a contender. A run that raises is recorded with its error
(metric NaN) and counted as a failure; medians skip failed seeds, and a method with no successful
seed in a cell is never best there.

Runs are cached one JSON file each (``robustkernel.reproduce._runs.run_cached``) under
``--cache-dir``, so an interrupted benchmark resumes. The cache key is (task, data, attack, eps,
seed, method); its fingerprint covers the settings, the versions of numpy / scipy /
scikit-learn / cleanlab / statsmodels, :data:`PROTOCOL_VERSION` (bump it when an attack, a data
set or a method of this script changes) and a hash of the robustkernel sources: the data and
corruption modules for every run, the whole package for the runs of robustkernel's estimators
(so an edited estimator is refitted, a scikit-learn peer is not).

    python benchmarks/bench_robust.py [--quick] [--task classification]
        [--seeds 5] [--methods a,b] [--data-home DIR] [--n-jobs 1] [--no-write]

prints the tables, writes every run to ``benchmarks/results/bench_robust_classification.csv``
and the tables to BENCHMARKS.md (section "Robustness without knobs (bench_robust.py):
classification"; not with ``--no-write`` nor ``--quick``). ``make bench-robust`` installs the
optional peers (the ``bench`` extra) first.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import resource
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from harness.attacks import ATTACKS
from harness.data import CLASSIFICATION, DATA
from harness.peers import METHODS, ORACLE
from harness.race import _version, run_task
from harness.report import cpu_description, markdown_table, replace_markdown_section
from harness.tables import (
    NEAR_BEST_ACCURACY,
    cell_table,
    printable,
    summary_table,
    with_oracle,
)

import robustkernel
from robustkernel._atomic import atomic_write

SECTION = "## Robustness without knobs (bench_robust.py)"
HERE = Path(__file__).resolve().parent
DEFAULT_CACHE = HERE / ".cache" / "bench_robust"
DEFAULT_CSV = HERE / "results" / "bench_robust.csv"
EPSILONS = (0.0, 0.1, 0.2, 0.3)

QUICK = {
    CLASSIFICATION: {
        "data": ("breast_cancer", "digits"),
        "attacks": ("random_flip", "fixed_class"),
    },
    "eps": (0.2,),
    "seeds": 2,
    "max_rows": 300,
}


# ----------------------------------------------------------------------------------------------
# The command.


def _parse_list(text: str | None) -> list[str] | None:
    """Comma-separated names, or None.

    Parameters
    ----------
    text : str or None
        "a,b,c".

    Returns
    -------
    names : list of str or None
        The names.
    """
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def _check_names(kind: str, given: Sequence[str], known: Sequence[str]) -> None:
    """Exit with a one-line error if ``given`` holds a name outside ``known``.

    Parameters
    ----------
    kind : str
        What the names are ("method", ...).
    given, known : sequence of str
        The names asked for and the ones that exist.
    """
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise SystemExit(f"unknown {kind}(s) {unknown}; choose from {sorted(set(known))}")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command-line options.

    Parameters
    ----------
    argv : sequence of str or None
        Arguments (None: ``sys.argv[1:]``).

    Returns
    -------
    args : Namespace
        The options.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke configuration: 2 data sets and 2 attacks, eps 0.2, 2 seeds, at "
        f"most {QUICK['max_rows']} rows; never writes BENCHMARKS.md",
    )
    parser.add_argument(
        "--task",
        choices=[CLASSIFICATION],
        default=CLASSIFICATION,
        help="the race's one task (its regression task: scorecard.py)",
    )
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds (default 5)")
    parser.add_argument("--methods", default=None, help="comma-separated method names")
    parser.add_argument("--data", default=None, help="comma-separated data set names")
    parser.add_argument("--attacks", default=None, help="comma-separated attack names")
    parser.add_argument(
        "--eps", default=None, help="comma-separated fractions (default 0,0.1,0.2,0.3)"
    )
    parser.add_argument("--max-rows", type=int, default=None, help="row cap of every data set")
    parser.add_argument("--data-home", default=None, help="folder of the papers' CSV files")
    parser.add_argument("--n-jobs", type=int, default=1, help="parallel runs (joblib)")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--csv", type=Path, default=None, help="CSV of every run")
    parser.add_argument("--out", type=Path, default=HERE.parent / "BENCHMARKS.md")
    parser.add_argument("--no-write", action="store_true", help="leave BENCHMARKS.md alone")
    return parser.parse_args(argv)


@dataclass(frozen=True)
class TaskPlan:
    """What one task runs.

    Attributes
    ----------
    task : str
        The task.
    data, attacks, methods : list of str
        Data sets, attacks and the methods that can run.
    skipped : dict
        Method -> why it is skipped.
    """

    task: str
    data: list[str]
    attacks: list[str]
    methods: list[str]
    skipped: dict[str, str]


def plan(args: argparse.Namespace, task: str) -> TaskPlan:
    """Data sets, attacks and methods of ``task`` under the options.

    Parameters
    ----------
    args : Namespace
        The options.
    task : str
        The task.

    Returns
    -------
    plan : TaskPlan
        What runs.
    """
    data = _parse_list(args.data)
    attacks = _parse_list(args.attacks)
    if data is None:
        everyday = [name for name, data_set in DATA[task].items() if not data_set.held_out]
        data = list(QUICK[task]["data"]) if args.quick else everyday
    else:
        data = [d for d in data if d in DATA[task]]
    if attacks is None:
        attacks = list(QUICK[task]["attacks"] if args.quick else ATTACKS[task])
    else:
        attacks = [a for a in attacks if a in ATTACKS[task]]
    wanted = _parse_list(args.methods)
    names = list(METHODS[task]) if wanted is None else [m for m in wanted if m in METHODS[task]]
    skipped = {}
    for name in list(names):
        reason = METHODS[task][name].unavailable()
        if reason is not None:
            skipped[name] = reason
            names.remove(name)
    return TaskPlan(task, data, attacks, names, skipped)


def task_section(
    task: str, frame: pd.DataFrame, task_plan: TaskPlan
) -> tuple[list[str], pd.DataFrame]:
    """The Markdown lines of one task's tables, and its runs with the oracle's metric.

    Parameters
    ----------
    task : str
        The task.
    frame : DataFrame
        Its runs.
    task_plan : TaskPlan
        Its methods.

    Returns
    -------
    lines : list of str
        Markdown.
    runs : DataFrame
        :func:`with_oracle`'s output.
    """
    runs = with_oracle(frame, task)
    methods = task_plan.methods
    cell = cell_table(runs, task, methods)
    lines = [
        "### Classification: test accuracy (median over seeds; higher is better)",
        "",
        markdown_table(printable(cell, methods)),
        f"### Classification: summary per method ({len(cell)} cells)",
        "",
        markdown_table(summary_table(runs, cell, task, methods)),
    ]
    return lines, runs


def describe(
    plans: Sequence[TaskPlan], eps: Sequence[float], seeds: Sequence[int], max_rows: int | None
) -> list[str]:
    """The protocol paragraph: data, attacks, methods, skipped methods, near-best rule.

    Parameters
    ----------
    plans : sequence of TaskPlan
        The tasks run.
    eps : sequence of float
        Fractions.
    seeds : sequence of int
        Seeds.
    max_rows : int or None
        Row cap of every data set.

    Returns
    -------
    lines : list of str
        Markdown.
    """
    cap = (
        ""
        if max_rows is None
        else f" Every data set is cut to a fixed random subset of at most {max_rows} rows."
    )
    lines = [
        f"Protocol: per seed ({list(seeds)}), a stratified 80/20 split, x standardized with the "
        f"clean training statistics, then eps of the training rows corrupted (eps in {list(eps)}; "
        "eps = 0 is the clean cell, attack `none`); the test rows stay clean. Cells show the test "
        "accuracy, median over seeds, and the summary the gap oracle accuracy - accuracy (oracle: "
        "`svc_cv` on the uncorrupted rows). **Within 2%**: median accuracy >= the cell's best "
        f"median accuracy - {NEAR_BEST_ACCURACY} (absolute). The oracle never competes. Worst = "
        "the largest cell median. Fit time: the median over runs of `fit` wall seconds (one "
        "BLAS thread, from the cache where a run was cached)." + cap,
        "",
    ]
    for task_plan in plans:
        lines.append(f"{task_plan.task.capitalize()} data:")
        lines += [f"- `{d}`: {DATA[task_plan.task][d].description}" for d in task_plan.data]
        lines.append(f"{task_plan.task.capitalize()} attacks (on floor(eps n) training rows):")
        lines += [f"- `{a}`: {ATTACKS[task_plan.task][a][1]}" for a in task_plan.attacks]
        lines.append(f"{task_plan.task.capitalize()} methods:")
        lines += [f"- `{m}`: {METHODS[task_plan.task][m].description}" for m in task_plan.methods]
        lines += [f"- `{m}`: skipped, {why}" for m, why in task_plan.skipped.items()]
        lines.append("")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the tables, write the CSV and (unless told not to) BENCHMARKS.md.

    Parameters
    ----------
    argv : sequence of str or None
        Arguments (None: ``sys.argv[1:]``).

    Returns
    -------
    status : int
        0.
    """
    args = parse_args(argv)
    load_before = os.getloadavg()
    started = time.perf_counter()
    cpu_self = resource.getrusage(resource.RUSAGE_SELF)
    tasks = [args.task]
    for kind, given, known in (
        ("method", _parse_list(args.methods), [m for t in tasks for m in METHODS[t]]),
        ("data set", _parse_list(args.data), [d for t in tasks for d in DATA[t]]),
        ("attack", _parse_list(args.attacks), [a for t in tasks for a in ATTACKS[t]]),
    ):
        _check_names(kind, given or [], known)
    eps = [float(e) for e in _parse_list(args.eps)] if args.eps else None
    eps = eps or list(QUICK["eps"] if args.quick else EPSILONS)
    seeds = list(range(args.seeds or (QUICK["seeds"] if args.quick else 5)))
    max_rows = (
        args.max_rows if args.max_rows is not None else (QUICK["max_rows"] if args.quick else None)
    )
    plans = [plan(args, task) for task in tasks]
    for task_plan in plans:
        for name, why in task_plan.skipped.items():
            print(f"note: {task_plan.task} method {name!r} skipped: {why}", flush=True)

    body_tables: list[str] = []
    all_runs = []
    for task_plan in plans:
        if not task_plan.data:
            continue
        frame = run_task(
            task_plan.task,
            data=task_plan.data,
            attacks=task_plan.attacks,
            eps=eps,
            seeds=seeds,
            methods=task_plan.methods,
            data_home=args.data_home,
            max_rows=max_rows,
            cache_dir=args.cache_dir,
            n_jobs=args.n_jobs,
        )
        lines, runs = task_section(task_plan.task, frame, task_plan)
        body_tables += lines
        oracle = frame[frame["method"] == ORACLE].assign(oracle=lambda f: f["metric"])
        oracle["relative"] = 0.0
        all_runs.append(pd.concat([runs, oracle], ignore_index=True))

    wall = time.perf_counter() - started
    load_after = os.getloadavg()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_main = usage.ru_utime + usage.ru_stime - cpu_self.ru_utime - cpu_self.ru_stime
    runs_frame = pd.concat(all_runs, ignore_index=True) if all_runs else pd.DataFrame()
    fresh = runs_frame["fresh"].astype(bool) if len(runs_frame) else pd.Series(dtype=bool)
    computed, n_runs = int(fresh.sum()), len(runs_frame)
    # With n_jobs = 1 the runs ran in this process (counted in cpu_main); else add the workers'.
    cpu_workers = float(runs_frame.loc[fresh, "cpu_seconds"].sum()) if args.n_jobs != 1 else 0.0
    csv = args.csv or (
        DEFAULT_CSV.with_name("bench_robust_quick.csv")
        if args.quick
        else DEFAULT_CSV.with_name(f"bench_robust_{args.task}.csv")
    )
    csv.parent.mkdir(parents=True, exist_ok=True)
    columns = [
        "task", "data", "attack", "eps", "seed", "method", "metric", "oracle", "relative",
        "seconds", "cpu_seconds", "n_train", "n_corrupted", "error", "flag_precision",
        "flag_recall",
    ]  # fmt: skip
    atomic_write(csv, runs_frame.reindex(columns=columns).to_csv(index=False))

    command = ".venv/bin/python " + " ".join(
        shlex.quote(a) for a in ["benchmarks/bench_robust.py", *(argv or sys.argv[1:])]
    )
    parallel = f"{args.n_jobs} parallel runs" if args.n_jobs != 1 else "runs one after another"
    environment = [
        f"Command: `{command}`  ",
        f"Date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}. Machine: "
        f"{platform.machine()}, {cpu_description()} (shared with other jobs), Python "
        f"{platform.python_version()}, numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}, robustkernel {robustkernel.__version__}, cleanlab "
        f"{_version('cleanlab')}, statsmodels {_version('statsmodels')}; {parallel}, one BLAS "
        "thread each.  ",
        "Load average (1, 5, 15 min) before: "
        + ", ".join(f"{v:.2f}" for v in load_before)
        + "; after: "
        + ", ".join(f"{v:.2f}" for v in load_after)
        + ".  ",
        f"Wall time {wall:.0f} s; CPU time {cpu_main + cpu_workers:.0f} s (this process"
        + (
            f" {cpu_main:.0f} s + the runs in the workers {cpu_workers:.0f} s"
            if cpu_workers
            else ""
        )
        + f"); {computed} of {n_runs} runs computed in this invocation, the rest read from the "
        "run cache. Every run: "
        f"`{csv.relative_to(HERE.parent) if csv.is_relative_to(HERE.parent) else csv}`.",
        "",
    ]
    section = f"{SECTION}: {args.task}"
    body = "\n".join(
        [section, "", *environment, *describe(plans, eps, seeds, max_rows), *body_tables]
    )
    print(body)
    if args.quick or args.no_write:
        print(f"({'--quick' if args.quick else '--no-write'}: {args.out} left alone)")
    else:
        replace_markdown_section(args.out, section, body)
        print(f"wrote the section {section[3:]!r} of {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
