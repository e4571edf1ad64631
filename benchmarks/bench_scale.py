"""SubQ regression at large n with approximate kernels (``n_components``).

The data of ``bench_subquantile.py`` (five features, smooth target, eps = 0.2 of the training
labels replaced by N(5, variance 5), 1000 clean test rows), RBF kernel, Nystroem features. For
each n: the SubQ fit time, iterations, test RMSE and peak memory (the peak of memory traced by
``tracemalloc`` during the fit, i.e. NumPy's arrays, and the process's maximum resident set
size); the time of one ordinary fit of the same model (sklearn ``Nystroem`` + ``Ridge``, no
trimming) on the same rows in the same process; and the test RMSE as a ratio to the exact SubQ
solver on the first ``--exact-size`` of the same training rows, where the exact solver still
runs; on that subsample the approximate fit is also compared with the exact one directly.

    python benchmarks/bench_scale.py [--sizes 100000 1000000] [--n-components 1000]
        [--exact-size 5000] [--dtypes float64 float32] [--blas-threads 1]

``--dtypes`` gives the storage type of the features per size (float32 halves the n x m matrix;
the peer then runs on float32 rows too, which keeps its features in float32).

prints the table and writes it into BENCHMARKS.md (section "Scale: approximate kernels"),
after every size, so that a run stopped early keeps the sizes it finished.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
from harness.data import EPSILON, PARAMS, make_data
from harness.report import markdown_table, replace_markdown_section
from sklearn.kernel_approximation import Nystroem
from sklearn.linear_model import Ridge
from sklearn.metrics import root_mean_squared_error
from sklearn.pipeline import make_pipeline
from threadpoolctl import threadpool_limits

from robustkernel import SubquantileKernelRegressor

SECTION = "## Scale: approximate kernels"


def timed_fit(model, X, y) -> tuple[float, float]:
    """Fit ``model``; return the seconds taken and the peak traced memory in MiB."""
    tracemalloc.start()
    start = time.perf_counter()
    model.fit(X, y)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak


def approximate_model(n_components: int, dtype: str) -> SubquantileKernelRegressor:
    return SubquantileKernelRegressor(
        epsilon=EPSILON, **PARAMS, n_components=n_components, dtype=dtype, random_state=0
    )


def subsample_rmse(X, y, X_test, y_test, n_components: int, dtype: str) -> tuple[float, float]:
    """Test RMSE of the exact and of the approximate SubQ fit on the same rows."""
    exact = SubquantileKernelRegressor(epsilon=EPSILON, **PARAMS).fit(X, y)
    approximate = approximate_model(n_components, dtype).fit(X, y)
    return (
        root_mean_squared_error(y_test, exact.predict(X_test)),
        root_mean_squared_error(y_test, approximate.predict(X_test)),
    )


def bench_size(n: int, n_components: int, dtype: str, exact_size: int) -> dict:
    X, y, X_test, y_test, _ = make_data(n)
    model = approximate_model(n_components, dtype)
    seconds, peak = timed_fit(model, X, y)
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rmse = root_mean_squared_error(y_test, model.predict(X_test))
    peer = make_pipeline(
        Nystroem(gamma=PARAMS["gamma"], n_components=n_components, random_state=0),
        Ridge(alpha=PARAMS["alpha"]),
    )
    peer_seconds, _ = timed_fit(peer, X.astype(dtype), y)
    sub = slice(0, min(exact_size, n))
    exact_rmse, sub_rmse = subsample_rmse(X[sub], y[sub], X_test, y_test, n_components, dtype)
    return {
        "n": n,
        "m": n_components,
        "dtype": dtype,
        "fit s": round(seconds, 1),
        "iterations": model.n_iter_,
        "converged": model.converged_,
        "test RMSE": round(rmse, 4),
        "peak traced MiB (fit)": round(peak),
        "max RSS MiB": round(max_rss),
        "Nystroem+Ridge fit s": round(peer_seconds, 1),
        "time / Nystroem+Ridge": round(seconds / peer_seconds, 2),
        "Nystroem+Ridge test RMSE": round(root_mean_squared_error(y_test, peer.predict(X_test)), 4),
        "exact SubQ on n_sub: test RMSE": round(exact_rmse, 4),
        "RMSE / exact on n_sub": round(rmse / exact_rmse, 4),
        "approx. on n_sub / exact on n_sub": round(sub_rmse / exact_rmse, 4),
    }


def write_section(path: Path, command: str, exact_size: int, rows: list[dict]) -> None:
    body = (
        f"{SECTION}\n\n"
        f"SubQ regression, RBF kernel (alpha={PARAMS['alpha']}, gamma={PARAMS['gamma']}, 5 "
        f"features), eps = {EPSILON} of the training labels replaced by N(5, variance 5), "
        "1000 clean test rows, `n_components=m` Nystroem features, alternating solver. "
        "'time / Nystroem+Ridge' divides by one ordinary (untrimmed) fit of sklearn's "
        "`Nystroem` + `Ridge` pipeline on the same rows in the same process: what trimming "
        "costs (the peer runs on rows of the same dtype). 'RMSE / exact on n_sub' divides "
        "the test RMSE by that of the exact SubQ "
        f"solver fitted on the first n_sub = {exact_size} of the same training rows; the last "
        "column compares the approximate and exact fits on those same n_sub rows. Peak traced "
        "memory is `tracemalloc`'s peak during the SubQ fit (NumPy arrays); max RSS is the "
        "process's high-water mark after that fit. The machine has 2 cores shared with other "
        "engineers' processes while this ran, so times are upper bounds.\n\n"
        f"Command: `{command}`  \n"
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, numpy {np.__version__}; load average "
        f"{os.getloadavg()[0]:.1f} (1 min) when this was written.\n\n"
        + markdown_table(pd.DataFrame(rows))
    )
    replace_markdown_section(path, SECTION, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--n-components", type=int, default=1000)
    parser.add_argument("--exact-size", type=int, default=5000)
    parser.add_argument(
        "--dtypes",
        choices=["float64", "float32"],
        nargs="+",
        default=["float64", "float32"],
        help="feature storage type: one per size, or one for all sizes",
    )
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=None,
        help="limit BLAS/LAPACK threads (threadpoolctl); on a shared, loaded machine 1 avoids "
        "oversubscription, which slows LAPACK calls tenfold",
    )
    parser.add_argument(  # the repository's BENCHMARKS.md, wherever the script runs from
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
    )
    args = parser.parse_args()
    command = "python benchmarks/bench_scale.py " + " ".join(
        [
            "--sizes",
            *map(str, args.sizes),
            "--n-components",
            str(args.n_components),
            "--exact-size",
            str(args.exact_size),
            "--dtypes",
            *args.dtypes,
            *(["--blas-threads", str(args.blas_threads)] if args.blas_threads else []),
        ]
    )
    if len(args.dtypes) not in (1, len(args.sizes)):
        parser.error("give one dtype, or one per size")
    dtypes = args.dtypes * len(args.sizes) if len(args.dtypes) == 1 else args.dtypes
    rows: list[dict] = []
    for n, dtype in zip(args.sizes, dtypes, strict=True):
        with threadpool_limits(limits=args.blas_threads):
            rows.append(bench_size(n, args.n_components, dtype, args.exact_size))
        print(rows[-1], flush=True)
        write_section(Path(args.out), command, args.exact_size, rows)
    print(markdown_table(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()
