"""``robustkernel predict MODEL DATA --out FILE``: apply a saved model.

DATA is a CSV file, or a Parquet file or folder (what ``fit`` takes): a Parquet table is read
row group by row group (every file's schema checked first) and never held whole; the rows are
numbered from 1 across its files in name order, as ``fit`` numbers them. FILE gets ``row``,
``predicted`` (and a probability per class for a classifier; with ``--coverage`` a regressor's
prediction interval, ``lower`` and ``upper``) as Parquet when its name ends in ``.parquet`` /
``.pq``, as CSV (spreadsheet formulas escaped) otherwise.

A ``*.skops`` model file (what ``fit`` and ``learn-metric`` write when skops is installed) is
loaded safely: :func:`robustkernel.persistence.load_model` refuses any type a model does not
contain. Any other file is a pickle, and unpickling a crafted file runs arbitrary code, so it is
loaded only with ``--trust-pickle``; without the flag the command exits with code 2 before
reading it.

The model's stored table layout (:mod:`._layout`) is applied first: a table with or without the
index column ``fit`` left out is fine, and the date columns are counted in days from the
first dates of the training table. Nothing heavy is imported until the command runs.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import DataError, atomic_file, guarded, progress
from ._predictions import prediction_frame

if TYPE_CHECKING:
    import pandas as pd

PROG = "robustkernel predict"


def check_trusted(model: str, trust_pickle: bool) -> None:
    """Raise :class:`DataError` for a pickle-based model file unless ``trust_pickle``."""
    from ..persistence import SKOPS_SUFFIX

    if Path(model).suffix != SKOPS_SUFFIX and not trust_pickle:
        raise DataError(
            f"refusing to load {model}: it is not a {SKOPS_SUFFIX} file but a pickle, and "
            "loading a pickle can run arbitrary code; pass --trust-pickle only for files you "
            "made yourself, or refit with skops installed to get model.skops"
        )


def coverage_value(text: str) -> float:
    """``--coverage``: a number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(
            f"must be a number strictly between 0 and 1 (0.9: 90% of new rows); got {text!r}"
        )
    return value


def write_predictions(frames: Iterable[pd.DataFrame], path: Path, parquet: bool) -> int:
    """Write the prediction ``frames`` one after the other into ``path``, as one Parquet file
    (``parquet``) or one CSV file (formulas escaped); returns the number of rows written."""
    from ._csv_output import escape_formulas

    written, writer = 0, None
    if parquet:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError as error:
            raise DataError(
                "writing Parquet needs pyarrow: pip install 'robustkernel[dask]', or give "
                "--out a .csv name"
            ) from error
        try:
            for frame in frames:
                schema = None if writer is None else writer.schema
                table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
                writer = writer or pq.ParquetWriter(path, table.schema)
                writer.write_table(table)
                written += len(frame)
        finally:
            if writer is not None:
                writer.close()
        return written
    for number, frame in enumerate(frames):  # the first writes the header, the others append
        escape_formulas(frame).to_csv(
            path, index=False, header=number == 0, mode="a" if number else "w"
        )
        written += len(frame)
    return written


def _run(args: argparse.Namespace) -> int:
    from ..persistence import load_model
    from ._layout import Layout
    from ._parquet_fit import PARQUET_SUFFIXES, is_parquet, predict_parquet
    from ._tabular import feature_table, read_csv

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
        if is_parquet(args.data):  # read (and predicted) row group by row group while written
            frames: Iterable[pd.DataFrame] = predict_parquet(
                model, args.data, columns, args.drop_na, args.coverage
            )
        else:
            frame = Layout.of_model(model).apply(read_csv(args.data))
            table = feature_table(frame, columns, drop_na=args.drop_na)
            frames = [prediction_frame(model, table, args.coverage)]
        bar.update()
        parquet = Path(args.out).suffix in PARQUET_SUFFIXES
        with atomic_file(args.out) as temporary:
            n_rows = write_predictions(frames, temporary, parquet)
        bar.update()
    if not args.quiet:
        print(f"wrote {n_rows} predictions to {args.out}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``predict`` subcommand."""
    parser = subparsers.add_parser(
        "predict",
        help="predict with a model written by 'robustkernel fit' or 'learn-metric'",
        description=(
            "Predict the rows of DATA.csv, or of a Parquet file or folder (read row group by "
            "row group), with MODEL (the model.skops of 'robustkernel fit' or 'learn-metric'). "
            "DATA needs the model's feature columns; other columns are ignored. FILE is written "
            "as Parquet when its name ends in .parquet or .pq, as CSV otherwise. A model file "
            "that is not .skops is a pickle, which can run code when loaded: it is refused "
            "unless --trust-pickle is given."
        ),
    )
    parser.add_argument(
        "model", metavar="MODEL", help="model file written by 'robustkernel fit' (model.skops)"
    )
    parser.add_argument(
        "data", metavar="DATA.csv", help="the table to predict (CSV, or Parquet file(s))"
    )
    parser.add_argument(
        "--out", required=True, metavar="FILE",
        help="predictions to write: Parquet for a .parquet / .pq name, CSV otherwise",
    )
    parser.add_argument("--drop-na", action="store_true", help="skip rows with missing values")
    parser.add_argument(
        "--coverage", type=coverage_value, default=None, metavar="C",
        help=(
            "also write a prediction interval for each row, columns 'lower' and 'upper', "
            "meant to hold a share C (in (0, 1), e.g. 0.9) of new clean rows' targets "
            "(regressors; calibrated at fit time with the flagged rows left out)"
        ),
    )
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
