"""``robustkernel reproduce TABLE ...``: the papers' tables and figures, one command.

Errors (a missing ``--out`` for ``--summary``, a read-only or full disk) end the command with
exit code 2 and one line on stderr. The experiments are imported when the command runs, not
when the parser is built.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ._common import DataError, guarded

PROG = "robustkernel reproduce"
# robustkernel.reproduce._parallel.BACKENDS, written out so that the parser imports no
# experiment; tests/test_cli_tables.py checks that they agree.
BACKENDS = ("loky", "threading", "dask")


def _run(args: argparse.Namespace) -> int:
    from ..reproduce import TABLES
    from ..reproduce._parallel import parallel_backend
    from ..reproduce.subq_tables import criteria_report

    if args.list:
        print("\n".join(TABLES))
        return 0
    if args.summary:
        if not Path(args.out).is_dir():
            raise DataError(
                f"--out {args.out}: no such folder; run 'robustkernel reproduce TABLE --out "
                f"{args.out}' first, or point --out at the folder holding the tables"
            )
        print(criteria_report(args.out), end="")
        return 0
    if not args.tables:
        args.parser.error("name at least one TABLE (or 'all'); --list shows them")
    names = list(TABLES) if args.tables == ["all"] else args.tables
    unknown = [name for name in names if name not in TABLES]
    if unknown:
        args.parser.error(f"unknown table(s) {', '.join(unknown)}; --list shows them")
    if args.scheduler is not None and args.backend != "dask":
        args.parser.error("--scheduler needs --backend dask")
    options = {"n_jobs": args.n_jobs, "out_dir": args.out, "progress": not args.quiet}
    if args.repetitions is not None:
        options["repetitions"] = args.repetitions
    with parallel_backend(args.backend, args.scheduler):
        for name in names:
            paths = TABLES[name](**options)
            if not args.quiet:
                for kind, path in paths.items():
                    print(f"{name}: {kind} -> {path}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``reproduce`` subcommand."""
    parser = subparsers.add_parser(
        "reproduce",
        help="reproduce the papers' tables and figures",
        description="Reproduce tables and figures; TABLE is a name from --list, or 'all'.",
    )
    parser.add_argument("tables", nargs="*", metavar="TABLE", help="table names, or 'all'")
    parser.add_argument("--list", action="store_true", help="list the table names and exit")
    parser.add_argument(
        "--summary",
        action="store_true",
        help="print the SubQ tables' criteria counts from the CSVs in --out and exit",
    )
    parser.add_argument("--out", default="results", help="output folder (default: results)")
    parser.add_argument("--n-jobs", type=int, default=1, help="parallel jobs (joblib; -1 = all)")
    parser.add_argument(
        "--repetitions", type=int, default=None, help="seeds / data sets per setting"
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="loky",
        help="where the runs go: local processes (loky, default), threads, or a Dask cluster",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        help="Dask scheduler address (with --backend dask; default: a local cluster)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.set_defaults(handler=guarded(PROG, _run, capture_warnings=False), parser=parser)
