"""The ``robustkernel`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(args.out, random_state=args.seed)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="robustkernel",
        description="Kernel methods that stay right when a fraction of the training data is wrong.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="run the demo on generated and bundled data")
    demo.add_argument("--out", default="demo_output", help="output folder (default: demo_output)")
    demo.add_argument("--seed", type=int, default=0, help="seed of data and contamination")
    demo.set_defaults(handler=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``robustkernel`` command."""
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
