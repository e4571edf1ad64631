"""``robustkernel predict MODEL DATA.csv --out predictions.csv``: apply a saved model.

A ``*.skops`` model file (what ``fit`` and ``learn-metric`` write when skops is installed) is
loaded safely: :func:`robustkernel.persistence.load_model` refuses any type a model does not
contain. Any other file is a pickle, and unpickling a crafted file runs arbitrary code, so it is
loaded only with ``--trust-pickle``; without the flag the command exits with code 2 before
reading it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..persistence import SKOPS_SUFFIX, load_model
from ._common import atomic_file, guarded, prediction_frame, progress
from ._csv_output import write_csv
from ._tabular import DataError, feature_table, read_csv

PROG = "robustkernel predict"


def check_trusted(model: str, trust_pickle: bool) -> None:
    """Raise :class:`DataError` for a pickle-based model file unless ``trust_pickle``."""
    if Path(model).suffix != SKOPS_SUFFIX and not trust_pickle:
        raise DataError(
            f"refusing to load {model}: it is not a {SKOPS_SUFFIX} file but a pickle, and "
            "loading a pickle can run arbitrary code; pass --trust-pickle only for files you "
            "made yourself, or refit with skops installed to get model.skops"
        )


def _run(args: argparse.Namespace) -> int:
    check_trusted(args.model, args.trust_pickle)
    with progress(3, "predict", args.quiet) as bar:
        try:
            model = load_model(args.model)
        except (OSError, EOFError) as error:
            raise DataError(f"cannot read the model file {args.model}: {error}") from error
        except ValueError:
            raise
        except Exception as error:  # zlib.error, struct.error, ...: some other kind of file
            kind = f"{type(error).__module__}.{type(error).__name__}".removeprefix("builtins.")
            raise DataError(f"{args.model!r} is not a robustkernel model file ({kind})") from error
        bar.update()
        columns = [str(column) for column in getattr(model, "feature_names_in_", [])]
        if not columns:
            raise DataError(f"{args.model} does not record its feature names; refit it with fit")
        table = feature_table(read_csv(args.data), columns, drop_na=args.drop_na)
        bar.update()
        frame = prediction_frame(model, table)
        with atomic_file(args.out) as temporary:
            write_csv(frame, temporary)
        bar.update()
    if not args.quiet:
        print(f"wrote {len(frame)} predictions to {args.out}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``predict`` subcommand."""
    parser = subparsers.add_parser(
        "predict",
        help="predict with a model written by 'robustkernel fit' or 'learn-metric'",
        description=(
            "Predict the rows of DATA.csv with MODEL (the model.skops of 'robustkernel fit' or "
            "'learn-metric'). DATA.csv needs the model's feature columns; other columns are "
            "ignored. A model file that is not .skops is a pickle, which can run code when "
            "loaded: it is refused unless --trust-pickle is given."
        ),
    )
    parser.add_argument(
        "model", metavar="MODEL", help="model file written by 'robustkernel fit' (model.skops)"
    )
    parser.add_argument("data", metavar="DATA.csv", help="the table to predict")
    parser.add_argument("--out", required=True, metavar="FILE", help="predictions CSV to write")
    parser.add_argument("--drop-na", action="store_true", help="skip rows with missing values")
    parser.add_argument(
        "--trust-pickle",
        action="store_true",
        help=(
            "load a pickle-based MODEL (model.joblib, anything not .skops); unpickling can run "
            "arbitrary code, so use it only for files you made yourself"
        ),
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar or messages")
    parser.set_defaults(handler=guarded(PROG, _run))
