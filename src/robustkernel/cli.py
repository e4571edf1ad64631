"""The ``robustkernel`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .commands import demo, fit, learn_metric, predict, reproduce
from .commands._common import one_line_errors

COMMANDS = (demo, reproduce, fit, predict, learn_metric)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="robustkernel",
        description="Kernel methods that stay right when a fraction of the training data is wrong.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(subparsers)
    for subparser in subparsers.choices.values():
        one_line_errors(subparser)
    return one_line_errors(parser)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``robustkernel`` command."""
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
