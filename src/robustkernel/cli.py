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
    """Entry point of the ``robustkernel`` command.

    Every usage error is one line on stderr with exit code 2; an unrecognized option is reported
    by the subcommand it was given to (``robustkernel fit: error: ...``).
    """
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _subparser(parser, args.command).error(f"unrecognized arguments: {' '.join(unknown)}")
    return args.handler(args)


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    """The parser of subcommand ``command`` (``parser`` itself if there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(command, parser)
    return parser


if __name__ == "__main__":
    sys.exit(main())
