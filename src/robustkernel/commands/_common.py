"""What the data subcommands (fit, predict, learn-metric) share: errors, atomic output, progress.

Bad usage or bad data ends the command with exit code 2 and one line on stderr, never a
traceback; so do errors of the file system (a read-only or full disk, a folder given as a file,
``--out`` taken by another run meanwhile) and running out of memory. Outputs are built in a
hidden temporary folder (or file) next to the destination and renamed into place at the end, so a
failure leaves nothing behind.

Signals: Ctrl-C (SIGINT) and ``kill`` (SIGTERM) during a command remove the temporary outputs
too. Both end the command with one line on stderr and the shell's usual status for a process
ended by that signal, 128 + its number: 130 for Ctrl-C, 143 for SIGTERM (so that scripts and job
schedulers still see "killed", not "bad input").
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from .. import _atomic
from .._atomic import atomic_path

if TYPE_CHECKING:
    from tqdm.auto import tqdm


Handler = Callable[[argparse.Namespace], int]
USAGE_ERROR = 2
INTERRUPTED = 128 + signal.SIGINT
TERMINATED = 128 + signal.SIGTERM
# One-line hints for the file-system errors a user can fix.
_OS_HINTS = {
    errno.ENOSPC: "the disk is full; free some space or choose another --out",
    errno.EDQUOT: "the disk quota is exceeded; free some space or choose another --out",
    errno.EROFS: "the file system is read-only; choose another --out",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}


class DataError(ValueError):
    """The table cannot be used as given; the message says why, in one line."""


class Terminated(BaseException):
    """SIGTERM arrived during a command (a BaseException, like KeyboardInterrupt, so that no
    ``except Exception`` swallows it and every ``finally`` removes its temporaries)."""


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


INDEX_CHOICES = ("auto", "none")


def add_table_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options that choose the columns and rows of a CSV table (fit, learn-metric):
    ``--drop-columns``, ``--index-column`` and ``--drop-na``."""
    parser.add_argument(
        "--drop-columns",
        nargs="+",
        action="extend",
        default=[],
        metavar="COLUMN",
        help=(
            "columns to leave out of the features (identifiers, free text, a column whose "
            "missing values cost many rows), as 'a b', 'a,b' or the option repeated; predict "
            "then ignores them too"
        ),
    )
    parser.add_argument(
        "--index-column",
        choices=INDEX_CHOICES,
        default="auto",
        help=(
            "'auto' (default): a first column with an empty header (R's write.csv, pandas' "
            "to_csv) or holding the row numbers 0..n-1 or 1..n is the file's index, left out "
            "of the features (the report says so); 'none': fit it as a feature"
        ),
    )
    parser.add_argument(
        "--drop-na",
        action="store_true",
        help="drop rows with missing values (an error otherwise, naming every column)",
    )


def guarded(prog: str, handler: Handler, *, capture_warnings: bool = True) -> Handler:
    """Run ``handler``; bad data and file-system errors exit 2 with one line on stderr.

    :class:`DataError`, ValueError, OSError and MemoryError become ``prog: error: ...`` (exit code
    2). While ``handler`` runs, SIGTERM raises :class:`Terminated` (in the main thread), so that
    the atomic output helpers remove their temporaries; the command then ends with one line and
    exit code 143, and after Ctrl-C with 130.

    With ``capture_warnings``, warnings raised meanwhile are printed at the end as one line each
    (``prog: warning: ...``) unless the namespace has ``quiet`` set.
    """

    @wraps(handler)
    def run(args: argparse.Namespace) -> int:
        recorder = warnings.catch_warnings(record=True) if capture_warnings else nullcontext(None)
        try:
            with recorder as caught, _sigterm_raises():
                if caught is not None:
                    warnings.simplefilter("always")
                try:
                    code = handler(args)
                except (DataError, ValueError) as error:
                    _say(prog, "error", str(error) or type(error).__name__)
                    return USAGE_ERROR
                except OSError as error:
                    _say(prog, "error", os_error_message(error))
                    return USAGE_ERROR
                except MemoryError as error:
                    detail = str(error) or "the data do not fit in memory"
                    _say(prog, "error", f"out of memory: {detail}")
                    return USAGE_ERROR
        except KeyboardInterrupt:
            _say(prog, "error", "interrupted (Ctrl-C); unfinished outputs were removed")
            return INTERRUPTED
        except Terminated:
            _say(prog, "error", "terminated (SIGTERM); unfinished outputs were removed")
            return TERMINATED
        if caught and not getattr(args, "quiet", False):
            for message in dict.fromkeys(str(w.message) for w in caught):
                _say(prog, "warning", message)
        return code

    return run


def os_error_message(error: OSError) -> str:
    """One line for a file-system error: the path(s), the reason, a hint where one helps."""
    if isinstance(error, _atomic.DestinationExistsError):
        return f"--out {error.filename} already exists (written by another run meanwhile)"
    reason = error.strerror or str(error) or type(error).__name__
    hint = _OS_HINTS.get(error.errno) if error.errno is not None else None
    if hint and hint != reason.lower():
        reason = f"{reason} ({hint})"
    paths = [os.fsdecode(name) for name in (error.filename, error.filename2) if name is not None]
    return f"{' -> '.join(paths)}: {reason}" if paths else reason


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` (once; later ones are ignored so
    that the cleanup finishes). Outside the main thread signals cannot be handled: no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def fitting(bar: tqdm) -> AbstractContextManager[None]:
    """The block of a command's fit: the bar says "fitting" and then each step the fit
    announces as it starts (:mod:`.._progress`: the kernel tried, the held-out folds, the
    model on the kept rows), so that a long fit shows what it is doing."""
    from .._progress import listening

    bar.set_postfix_str("fitting")
    return listening(lambda text: bar.set_postfix_str(f"fitting: {text}"))


def progress(total: int, description: str, quiet: bool) -> tqdm:
    """A progress bar over the steps of a command (on a terminal only; none with --quiet)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=description, disable=True if quiet else None, file=sys.stderr)


@contextmanager
def atomic_folder(destination: str | os.PathLike[str]) -> Iterator[Path]:
    """:func:`robustkernel._atomic.atomic_folder` for ``--out``, with one-line errors.

    ``destination`` must not exist, or be an empty folder; its parent must exist. If the block
    raises, ``destination`` is left as it was. If another process fills ``destination``
    meanwhile, its output is kept and this one is dropped (:class:`DataError`).
    """
    destination = Path(destination)
    if destination.exists() and (not destination.is_dir() or any(destination.iterdir())):
        raise DataError(f"--out {destination} already exists and is not an empty folder")
    _check_parent(destination)
    temporary: Path | None = None
    try:
        with _atomic.atomic_folder(destination) as temporary:
            yield temporary
    except _atomic.DestinationExistsError as error:
        raise DataError(
            f"--out {destination} already exists: another run wrote it meanwhile; this run's "
            "output was discarded"
        ) from error
    except OSError as error:
        if temporary is not None:  # name the file the user asked for, not the removed temporary
            for attribute in ("filename", "filename2"):
                name = getattr(error, attribute)
                if isinstance(name, str) and name.startswith(os.fspath(temporary)):
                    relative = name[len(os.fspath(temporary)) :]
                    setattr(error, attribute, os.fspath(destination) + relative)
        raise


@contextmanager
def atomic_file(destination: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``destination``, moved onto it when the block succeeds.

    ``destination`` may be an existing file (replaced), not a folder; its parent must exist.
    """
    destination = Path(destination)
    if destination.is_dir():
        raise DataError(f"--out {destination} is a folder; give a file name")
    _check_parent(destination)
    with atomic_path(destination) as temporary:
        yield temporary


def _check_parent(destination: Path) -> None:
    if not destination.parent.is_dir():
        raise DataError(f"the folder {destination.parent} (parent of --out) does not exist")
