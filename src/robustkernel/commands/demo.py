"""``robustkernel demo``: the demo behind ``make demo``."""

from __future__ import annotations

import argparse


def _run(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    run_demo(args.out, random_state=args.seed)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser("demo", help="run the demo on generated and bundled data")
    parser.add_argument("--out", default="demo_output", help="output folder (default: demo_output)")
    parser.add_argument("--seed", type=int, default=0, help="seed of data and contamination")
    parser.set_defaults(handler=_run)
