"""``robustkernel learn-metric DATA.csv --target COL --out DIR``: which directions of x matter.

Fits :class:`~robustkernel.MetricKernelRidge` to the standardized features and target (zero
mean, unit variance: the learned Sigma is then in units of feature standard deviations and
``--lam`` means the same on every table; the target is divided by its largest magnitude before
it is standardized, so that a target of magnitude 1e200 or 1e-200 is standardized too instead of
overflowing the variance), on the rows it explains best (``--epsilon``: a
fraction, ``auto`` by default, ``0`` for all rows). DIR receives ``components.csv`` (the
orthonormal basis of the learned subspace, one row per feature), ``eigenvalues.csv`` and
``eigenvalues.png`` (the spectrum of Sigma), ``transformed.csv`` (every row's coordinates in
the learned subspace), ``outliers.csv`` (every row's squared standardized residual and whether
it was left out, then the row's columns), ``report.md``, and ``model.skops``: the metric model
with both scalers inside (``TransformedTargetRegressor`` around ``StandardScaler`` +
``MetricKernelRidge``, with :func:`._learn_metric_run.target_scaler` for y), so that
``robustkernel predict DIR/model.skops NEW.csv`` takes raw feature values and returns the
target in its own units. Without skops installed the model is
``model.joblib``, a pickle that ``predict`` loads only with ``--trust-pickle`` (the output and
the report say so).

This module holds the command's options and imports nothing heavy; the fit
(:mod:`._learn_metric_run`) is imported when the command runs. The table's index column is left
out, ``--drop-columns`` leaves out others and ISO dates become days, as for ``fit``.
"""

from __future__ import annotations

import argparse

from ._common import add_table_arguments, guarded
from .fit import epsilon_argument, positive_float

PROG = "robustkernel learn-metric"


def _run(args: argparse.Namespace) -> int:
    from ._learn_metric_run import run  # the estimator, pandas, matplotlib: imported when run

    return run(args)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``learn-metric`` subcommand."""
    parser = subparsers.add_parser(
        "learn-metric",
        help="learn which directions of the features matter (kernel ridge with a learned metric)",
        description=(
            "Fit kernel ridge regression with a learned metric Sigma to DATA.csv and write its "
            "rank, directions, the transformed rows and a report into DIR (new or empty)."
        ),
    )
    parser.add_argument("data", metavar="DATA.csv", help="the table (header line first)")
    parser.add_argument("--target", required=True, help="name of the (numeric) target column")
    parser.add_argument(
        "--lam",
        type=positive_float,
        default=0.1,
        help="ridge penalty; larger gives a lower rank (default 0.1)",
    )
    parser.add_argument(
        "--epsilon",
        type=epsilon_argument,
        default="auto",
        help="fraction of rows to leave out, in [0, 0.5), or 'auto' to estimate it (default)",
    )
    parser.add_argument(
        "--max-iter", type=int, default=2000, help="gradient iterations (default 2000)"
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="output folder (new)")
    add_table_arguments(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar or messages")
    parser.set_defaults(handler=guarded(PROG, _run))
