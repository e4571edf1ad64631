"""``robustkernel predict MODEL DATA.csv --out predictions.csv``: apply a saved model."""

from __future__ import annotations

import argparse

from ..persistence import load_model
from ._common import atomic_file, guarded, prediction_frame, progress
from ._tabular import DataError, feature_table, read_csv

PROG = "robustkernel predict"


def _run(args: argparse.Namespace) -> int:
    with progress(3, "predict", args.quiet) as bar:
        try:
            model = load_model(args.model)
        except (OSError, EOFError) as error:
            raise DataError(f"cannot read the model file {args.model}: {error}") from error
        bar.update()
        columns = [str(column) for column in getattr(model, "feature_names_in_", [])]
        if not columns:
            raise DataError(f"{args.model} does not record its feature names; refit it with fit")
        table = feature_table(read_csv(args.data), columns, drop_na=args.drop_na)
        bar.update()
        frame = prediction_frame(model, table)
        with atomic_file(args.out) as temporary:
            frame.to_csv(temporary, index=False)
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
            "Predict the rows of DATA.csv with MODEL (the model.joblib of 'robustkernel fit'). "
            "DATA.csv needs the model's feature columns; other columns are ignored."
        ),
    )
    parser.add_argument("model", metavar="MODEL", help="model file written by 'robustkernel fit'")
    parser.add_argument("data", metavar="DATA.csv", help="the table to predict")
    parser.add_argument("--out", required=True, metavar="FILE", help="predictions CSV to write")
    parser.add_argument("--drop-na", action="store_true", help="skip rows with missing values")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or messages")
    parser.set_defaults(handler=guarded(PROG, _run))
