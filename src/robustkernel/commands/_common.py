"""What the data subcommands (fit, predict, learn-metric) share: errors, atomic output, progress.

Bad usage or bad data ends the command with exit code 2 and one line on stderr, never a
traceback. Outputs are built in a hidden temporary folder (or file) next to the destination and
renamed into place at the end, so a failure leaves nothing behind.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd
from tqdm.auto import tqdm

from .. import _atomic
from .._atomic import atomic_path
from ._tabular import DataError, Table

Handler = Callable[[argparse.Namespace], int]
USAGE_ERROR = 2


def _say(prog: str, kind: str, message: str) -> None:
    """Print ``prog: kind: message`` on stderr, whitespace (newlines too) collapsed."""
    print(f"{prog}: {kind}: {' '.join(str(message).split())}", file=sys.stderr)


def fail(prog: str, message: str) -> NoReturn:
    """Print ``prog: error: message`` as one line on stderr and exit with code 2."""
    _say(prog, "error", message)
    raise SystemExit(USAGE_ERROR)


def one_line_errors(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Make ``parser`` report usage errors in one line (exit code 2) instead of usage + error."""
    parser.error = lambda message: fail(parser.prog, message)  # type: ignore[method-assign]
    return parser


def guarded(prog: str, handler: Handler) -> Handler:
    """Run ``handler``; bad data (:class:`DataError`, ValueError) exits 2 with one line.

    Warnings raised meanwhile are printed as one line each (``prog: warning: ...``) unless the
    namespace has ``quiet`` set.
    """

    @wraps(handler)
    def run(args: argparse.Namespace) -> int:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                code = handler(args)
            except (DataError, ValueError) as error:
                _say(prog, "error", str(error) or type(error).__name__)
                return USAGE_ERROR
        if not getattr(args, "quiet", False):
            for message in dict.fromkeys(str(w.message) for w in caught):
                _say(prog, "warning", message)
        return code

    return run


def progress(total: int, description: str, quiet: bool) -> tqdm:
    """A progress bar over the steps of a command (on a terminal only; none with --quiet)."""
    return tqdm(total=total, desc=description, disable=True if quiet else None, file=sys.stderr)


@contextmanager
def atomic_folder(destination: str | os.PathLike[str]) -> Iterator[Path]:
    """:func:`robustkernel._atomic.atomic_folder` for ``--out``, with one-line errors.

    ``destination`` must not exist, or be an empty folder; its parent must exist. If the block
    raises, ``destination`` is left as it was.
    """
    destination = Path(destination)
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise DataError(f"--out {destination} already exists and is not an empty folder")
    _check_parent(destination)
    with _atomic.atomic_folder(destination) as temporary:
        yield temporary


@contextmanager
def atomic_file(destination: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``destination``, moved onto it when the block succeeds."""
    destination = Path(destination)
    _check_parent(destination)
    with atomic_path(destination) as temporary:
        yield temporary


def _check_parent(destination: Path) -> None:
    if not destination.parent.is_dir():
        raise DataError(f"the folder {destination.parent} (parent of --out) does not exist")


def prediction_frame(model: Any, table: Table) -> pd.DataFrame:
    """Row numbers, predictions and, for classifiers, one ``probability_<class>`` column each."""
    frame = pd.DataFrame({"row": table.rows, "predicted": model.predict(table.X)})
    if hasattr(model, "predict_proba"):
        for label, column in zip(model.classes_, model.predict_proba(table.X).T, strict=True):
            frame[f"probability_{label}"] = column
    return frame
