"""One Subquantile fit over a Dask array on a LocalCluster, against the in-memory feature path.

The data model of ``bench_subquantile.py`` (five features uniform on [-2, 2], a smooth target,
noise sd 0.1, 20% of the targets replaced by N(5, variance 5)), generated chunk by chunk on the
workers (a seed per chunk), so that no process holds all rows. RBF kernel, gamma 0.2, alpha 1,
epsilon 0.2, refine=None, Nystroem with ``--n-components`` landmarks. For each n: the Dask fit's
wall time, passes, wall time per pass, the peak resident memory of each worker, and the test
RMSE on 10 000 clean rows; for the sizes that fit in memory also the in-memory fit of the same
rows (``.compute()``) in the same process, its time, and whether the kept rows agree.

    python benchmarks/bench_distributed.py --sizes 100000 1000000 10000000 \\
        --in-memory-max 1000000 --n-components 200 --workers 2

Writes ``benchmarks/results/distributed.md`` and the section "Scale out: one fit on Dask" of
BENCHMARKS.md after every size.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

import dask.array as da
import distributed
import numpy as np
import pandas as pd

from robustkernel import SubquantileKernelRegressor
from robustkernel._report import cpu_description, markdown_table, replace_markdown_section

ROOT = Path(__file__).resolve().parents[1]
HEADING = "## Scale out: one fit on Dask"
CHUNK = 100_000
SETTINGS = {"epsilon": 0.2, "alpha": 1.0, "gamma": 0.2, "refine": None, "random_state": 0}


def target(X: np.ndarray) -> np.ndarray:
    return np.sin(2 * X[:, 0]) + X[:, 1] ** 2 / 2 - X[:, 2] + 0.5 * X[:, 3] * X[:, 4]


def _rows(block_id: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of chunk ``block_id``: X, and y with 20% of it replaced by N(5, 5)."""
    rng = np.random.default_rng([7, block_id])
    X = rng.uniform(-2, 2, size=(size, 5))
    y = target(X) + 0.1 * rng.normal(size=size)
    bad = rng.random(size) < 0.2
    y[bad] = rng.normal(5.0, np.sqrt(5.0), size=int(bad.sum()))
    return X, y


def generated(n: int) -> tuple[da.Array, da.Array]:
    """Dask arrays of n rows generated on the workers, CHUNK rows a chunk."""
    sizes = [CHUNK] * (n // CHUNK) + ([n % CHUNK] if n % CHUNK else [])

    def x_block(block_info=None):
        info = block_info[None]
        return _rows(info["chunk-location"][0], info["chunk-shape"][0])[0]

    def y_block(block_info=None):
        info = block_info[None]
        return _rows(info["chunk-location"][0], info["chunk-shape"][0])[1]

    X = da.map_blocks(x_block, chunks=(tuple(sizes), (5,)), dtype=np.float64)
    y = da.map_blocks(y_block, chunks=(tuple(sizes),), dtype=np.float64)
    return X, y


def peak_worker_rss_mb(client: distributed.Client) -> float:
    """The largest maximum resident set size among the workers, in MB."""
    peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return max(peaks.values()) / 1024.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--in-memory-max", type=int, default=1_000_000)
    parser.add_argument("--n-components", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="8GB")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    test_rng = np.random.default_rng(99)
    X_test = test_rng.uniform(-2, 2, size=(10_000, 5))
    y_test = target(X_test)
    rows = []
    cluster = distributed.LocalCluster(
        n_workers=args.workers, threads_per_worker=1, memory_limit=args.memory_limit,
        dashboard_address=None,
    )
    with cluster, distributed.Client(cluster) as client:
        for n in args.sizes:
            client.restart()  # a fresh peak memory per size
            X, y = generated(n)
            model = SubquantileKernelRegressor(n_components=args.n_components, **SETTINGS)
            start = time.perf_counter()
            model.fit(X, y)
            wall = time.perf_counter() - start
            passes = model.n_iter_ + 1
            row = {
                "n": f"{n:.0e}",
                "Dask fit s": f"{wall:.1f}",
                "passes": passes,
                "s per pass": f"{wall / passes:.1f}",
                "peak worker RSS MB": f"{peak_worker_rss_mb(client):.0f}",
                "test RMSE": f"{np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)):.4f}",
                "in-memory fit s": "",
                "in-memory test RMSE": "",
                "same kept rows": "",
            }
            if n <= args.in_memory_max:
                X_np, y_np = (array.compute() for array in (X, y))
                start = time.perf_counter()
                memory = SubquantileKernelRegressor(n_components=args.n_components, **SETTINGS)
                memory.fit(X_np, y_np)
                row["in-memory fit s"] = f"{time.perf_counter() - start:.1f}"
                rmse = np.sqrt(np.mean((memory.predict(X_test) - y_test) ** 2))
                row["in-memory test RMSE"] = f"{rmse:.4f}"
                row["same kept rows"] = str(np.array_equal(memory.inlier_mask_, model.inlier_mask_))
            rows.append(row)
            print(row, flush=True)
            write(pd.DataFrame(rows), args, load)
    return 0


def write(frame: pd.DataFrame, args: argparse.Namespace, load: float) -> None:
    sizes = " ".join(str(n) for n in args.sizes)
    body = (
        f"{HEADING}\n\n"
        f"Command: `OMP_NUM_THREADS=1 python benchmarks/bench_distributed.py --sizes {sizes} "
        f"--in-memory-max {args.in_memory_max} --n-components {args.n_components} --workers "
        f"{args.workers}` ({cpu_description()}; a LocalCluster of {args.workers} worker "
        f"processes, one thread each, memory limit {args.memory_limit}; load average "
        f"{load:.2f} at the start, nothing else running). Data generated on the workers, "
        f"{CHUNK} rows a chunk; epsilon 0.2, alpha 1, gamma 0.2, refine=None, Nystroem features. "
        "A pass is one iteration's loss pass and refit pass over the chunks; the in-memory "
        "fit is the same estimator on the computed NumPy arrays in the client process.\n\n"
        + markdown_table(frame)
    )
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / "distributed.md").write_text(body)
    replace_markdown_section(ROOT / "BENCHMARKS.md", HEADING, body)


if __name__ == "__main__":
    raise SystemExit(main())
