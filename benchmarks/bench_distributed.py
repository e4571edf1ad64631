"""One Subquantile fit over a Dask array on a LocalCluster, against the in-memory feature path.

The data model of ``bench_subquantile.py`` (five features uniform on [-2, 2], a smooth target,
noise sd 0.1, 20% of the targets replaced by N(5, variance 5)), generated chunk by chunk on the
workers (a seed per chunk), so that no process holds all rows. With ``--parquet DIR`` (the
default source) the workers first write each chunk as one Parquet file under DIR/n, and the fit
reads them as ``robustkernel fit DATA.parquet`` does (a chunk per row group, read again in every
pass); with ``--source generated`` the chunks are generated again in every pass. RBF kernel,
gamma 0.2, alpha 1, epsilon 0.2, refine=None, Nystroem with ``--n-components`` landmarks. For
each n: the Dask fit's wall time, passes, wall time per pass, the CPU time of the workers and
the client, the peak resident memory of each worker, and the test RMSE on 10 000 clean rows;
for the sizes that fit in memory also the in-memory fit of the same rows (``.compute()``) in the
same process, its time, and whether the kept rows agree.

    python benchmarks/bench_distributed.py --sizes 100000 1000000 10000000 \\
        --in-memory-max 1000000 --n-components 200 --workers 2 --parquet /tmp/bench-parquet

Writes ``benchmarks/results/distributed.md`` and the section "Scale out: one fit on Dask" of
BENCHMARKS.md after every size.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path

import dask.array as da
import distributed
import numpy as np
import pandas as pd
from harness.report import cpu_description, markdown_table, replace_markdown_section

from robustkernel import SubquantileKernelClassifier, SubquantileKernelRegressor
from robustkernel.commands._parquet_fit import ParquetTable
from robustkernel.subquantile._backends import distributed as _distributed

ROOT = Path(__file__).resolve().parents[1]
HEADING = "## Scale out: one fit on Dask"
CLASSIFIER_HEADING = "## Scale out: the classifier on Dask"
CUT = 0.6  # labels: target above CUT (about half the rows)
GENERATED_HEADING = "## Scale out: one fit on Dask, rows generated in every pass"
CHUNK = 100_000
SETTINGS = {
    "epsilon": 0.2,
    "kernel": "rbf",  # the regressor's default is kernel="auto"
    "alpha": 1.0,
    "gamma": 0.2,
    "refine": None,
    "random_state": 0,
}


def target(X: np.ndarray) -> np.ndarray:
    return np.sin(2 * X[:, 0]) + X[:, 1] ** 2 / 2 - X[:, 2] + 0.5 * X[:, 3] * X[:, 4]


def _rows(block_id: int, size: int, task: str = "regression") -> tuple[np.ndarray, np.ndarray]:
    """The rows of chunk ``block_id``: X, and y with 20% of it replaced by N(5, 5)
    (classification: the label target > CUT, 20% of the labels flipped)."""
    rng = np.random.default_rng([7, block_id])
    X = rng.uniform(-2, 2, size=(size, 5))
    y = target(X) + 0.1 * rng.normal(size=size)
    bad = rng.random(size) < 0.2
    if task == "classification":
        labels = (y > CUT).astype(np.float64)
        labels[bad] = 1.0 - labels[bad]
        return X, labels
    y[bad] = rng.normal(5.0, np.sqrt(5.0), size=int(bad.sum()))
    return X, y


def generated(n: int, task: str = "regression") -> tuple[da.Array, da.Array]:
    """Dask arrays of n rows generated on the workers, CHUNK rows a chunk."""
    sizes = [CHUNK] * (n // CHUNK) + ([n % CHUNK] if n % CHUNK else [])

    def x_block(block_info=None):
        info = block_info[None]
        return _rows(info["chunk-location"][0], info["chunk-shape"][0], task)[0]

    def y_block(block_info=None):
        info = block_info[None]
        return _rows(info["chunk-location"][0], info["chunk-shape"][0], task)[1]

    X = da.map_blocks(x_block, chunks=(tuple(sizes), (5,)), dtype=np.float64)
    y = da.map_blocks(y_block, chunks=(tuple(sizes),), dtype=np.float64)
    return X, y


def write_parquet(n: int, folder: Path, client: distributed.Client) -> None:
    """The rows of ``generated(n)`` as one Parquet file per chunk, written by the workers."""
    folder.mkdir(parents=True, exist_ok=True)
    sizes = [CHUNK] * (n // CHUNK) + ([n % CHUNK] if n % CHUNK else [])

    def write(block_id: int, size: int) -> None:
        X, y = _rows(block_id, size)
        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(y=y)
        frame.to_parquet(folder / f"part-{block_id:05d}.parquet", index=False)

    client.gather(client.map(write, range(len(sizes)), sizes))


def cpu_seconds(client: distributed.Client) -> float:
    """User + system CPU time of the workers and of this (client) process."""
    def used() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    return sum(client.run(used).values()) + used()


def peak_worker_rss_mb(client: distributed.Client) -> float:
    """The largest maximum resident set size among the workers, in MB."""
    peaks = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    return max(peaks.values()) / 1024.0


def local_cluster(args: argparse.Namespace) -> distributed.LocalCluster:
    return distributed.LocalCluster(
        n_workers=args.workers, threads_per_worker=1, memory_limit=args.memory_limit,
        dashboard_address=None,
    )


def timed_fits(
    estimator: type, X: da.Array, y: da.Array, n: int, client: distributed.Client,
    args: argparse.Namespace, score: Callable[[object], float], metric: str,
) -> tuple[object, dict[str, float], dict[str, str]]:
    """The Dask fit with its wall and CPU seconds and peak worker memory and, for n up to
    ``--in-memory-max``, the in-memory fit of the same rows: its time, ``score`` and whether it
    keeps the same rows (the columns "in-memory ...", empty above that size)."""
    model = estimator(n_components=args.n_components, **SETTINGS)
    cpu, start = cpu_seconds(client), time.perf_counter()
    model.fit(X, y)
    wall, cpu = time.perf_counter() - start, cpu_seconds(client) - cpu
    timing = {"wall": wall, "cpu": cpu, "rss": peak_worker_rss_mb(client)}
    memory_columns = {"in-memory fit s": "", f"in-memory test {metric}": "", "same kept rows": ""}
    if n <= args.in_memory_max:
        X_np, y_np = (array.compute() for array in (X, y))
        start = time.perf_counter()
        memory = estimator(n_components=args.n_components, **SETTINGS).fit(X_np, y_np)
        memory_columns = {
            "in-memory fit s": f"{time.perf_counter() - start:.1f}",
            f"in-memory test {metric}": f"{score(memory):.4f}",
            "same kept rows": str(np.array_equal(memory.inlier_mask_, model.inlier_mask_)),
        }
    return model, timing, memory_columns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--in-memory-max", type=int, default=1_000_000)
    parser.add_argument("--n-components", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--memory-limit", default="8GB")
    parser.add_argument("--source", choices=("parquet", "generated"), default="parquet")
    parser.add_argument("--parquet", type=Path, default=Path("/tmp/robustkernel-bench-parquet"))
    parser.add_argument("--task", choices=("regression", "classification"), default="regression")
    args = parser.parse_args(argv)
    if args.task == "classification":
        return classification(args)
    load = os.getloadavg()[0]
    test_rng = np.random.default_rng(99)
    X_test = test_rng.uniform(-2, 2, size=(10_000, 5))
    y_test = target(X_test)
    rows = []

    def rmse(model: object) -> float:
        return float(np.sqrt(np.mean((model.predict(X_test) - y_test) ** 2)))

    with local_cluster(args) as cluster, distributed.Client(cluster) as client:
        for n in args.sizes:
            read = ""
            if args.source == "parquet":
                folder = args.parquet / str(n)
                if not folder.is_dir():
                    write_parquet(n, folder, client)
                start = time.perf_counter()
                table = ParquetTable(str(folder), "y", False, False, random_state=0)
                X, y = table.X, table.y
                read = f"{time.perf_counter() - start:.1f}"
            else:
                X, y = generated(n)
            client.restart()  # a fresh peak memory per size
            model, timing, memory_columns = timed_fits(
                SubquantileKernelRegressor, X, y, n, client, args, rmse, "RMSE"
            )
            passes = model.n_iter_ + 1
            rows.append({
                "n": f"{n:.0e}",
                "source": args.source,
                "checks s": read,
                "Dask fit s": f"{timing['wall']:.1f}",
                "CPU s": f"{timing['cpu']:.0f}",
                "passes": passes,
                "s per pass": f"{timing['wall'] / passes:.1f}",
                "peak worker RSS MB": f"{timing['rss']:.0f}",
                "test RMSE": f"{rmse(model):.4f}",
                **memory_columns,
            })
            row = rows[-1]
            print(row, flush=True)
            write(pd.DataFrame(rows), args, load)
    return 0


def counted_passes() -> dict[str, int]:
    """Count the passes over the chunks' features (every loss pass and every sums pass)."""
    counter = {"passes": 0}
    for name in ("sums", "losses"):
        method = getattr(_distributed._ChunkedData, name)

        def counting(self, *args, _method=method, **kwargs):
            counter["passes"] += 1
            return _method(self, *args, **kwargs)

        setattr(_distributed._ChunkedData, name, counting)
    return counter


def classification(args: argparse.Namespace) -> int:
    """The classifier on Dask (rows generated in every pass): the label target > CUT with 20% of
    the labels flipped; accuracy on clean test labels; passes over the features counted."""
    load = os.getloadavg()[0]
    X_test = np.random.default_rng(99).uniform(-2, 2, size=(10_000, 5))
    y_test = (target(X_test) > CUT).astype(np.float64)
    counter = counted_passes()
    rows = []

    def accuracy(model: object) -> float:
        return float(np.mean(model.predict(X_test) == y_test))

    with local_cluster(args) as cluster, distributed.Client(cluster) as client:
        for n in args.sizes:
            X, y = generated(n, "classification")
            client.restart()
            counter["passes"] = 0
            model, timing, memory_columns = timed_fits(
                SubquantileKernelClassifier, X, y, n, client, args, accuracy, "accuracy"
            )
            passes = counter["passes"]  # the in-memory fit makes no pass over chunks
            rows.append({
                "n": f"{n:.0e}",
                "Dask fit s": f"{timing['wall']:.1f}",
                "CPU s": f"{timing['cpu']:.0f}",
                "refits": model.n_iter_,
                "passes over the features": passes,
                "s per pass": f"{timing['wall'] / passes:.2f}",
                "peak worker RSS MB": f"{timing['rss']:.0f}",
                "test accuracy": f"{accuracy(model):.4f}",
                **memory_columns,
            })
            row = rows[-1]
            print(row, flush=True)
            sizes = " ".join(str(n) for n in args.sizes)
            body = (
                f"{CLASSIFIER_HEADING}\n\n"
                f"Command: `OMP_NUM_THREADS=1 python benchmarks/bench_distributed.py --task "
                f"classification --sizes {sizes} --in-memory-max {args.in_memory_max} "
                f"--n-components {args.n_components} --workers {args.workers}` "
                f"({cpu_description()}; a LocalCluster of {args.workers} worker processes, one "
                f"thread each; load average {load:.2f} at the start, nothing else running). "
                f"Rows generated on the workers in every pass, {CHUNK} rows a chunk; label: "
                f"target > {CUT}, 20% of the labels flipped; rbf kernel, epsilon 0.2, alpha 1, "
                "gamma 0.2, refine=None. Every L-BFGS evaluation of a refit is one pass over the "
                "features (counted), so a classifier costs far more passes than the regressor's "
                "two per iteration.\n\n" + markdown_table(pd.DataFrame(rows))
            )
            out = ROOT / "benchmarks" / "results"
            out.mkdir(exist_ok=True)
            (out / "distributed_classification.md").write_text(body)
            replace_markdown_section(ROOT / "BENCHMARKS.md", CLASSIFIER_HEADING, body)
    return 0


def write(frame: pd.DataFrame, args: argparse.Namespace, load: float) -> None:
    sizes = " ".join(str(n) for n in args.sizes)
    heading = HEADING if args.source == "parquet" else GENERATED_HEADING
    body = (
        f"{heading}\n\n"
        f"Command: `OMP_NUM_THREADS=1 python benchmarks/bench_distributed.py --sizes {sizes} "
        f"--in-memory-max {args.in_memory_max} --n-components {args.n_components} --workers "
        f"{args.workers} --source {args.source}` ({cpu_description()}; a LocalCluster of "
        f"{args.workers} worker processes, one thread each, memory limit {args.memory_limit}; "
        f"load average {load:.2f} at the start, nothing else running). Data generated on the "
        f"workers, {CHUNK} rows a chunk"
        + (
            ", written once as one Parquet file per chunk and read again in every pass "
            "('checks s': reading the table's metadata, counting missing and infinite values "
            "and drawing the 20,000-row sample, as `robustkernel fit DATA.parquet` does)"
            if args.source == "parquet" else ", generated again in every pass"
        )
        + "; rbf kernel, epsilon 0.2, alpha 1, gamma 0.2, refine=None, Nystroem features. "
        "A pass is one iteration's loss pass and refit pass over the chunks; 'CPU s' adds the "
        "workers' and the client's user + system time; the in-memory fit is the same "
        "estimator on the computed NumPy arrays in the client process.\n\n"
        + markdown_table(frame)
    )
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / f"distributed_{args.source}.md").write_text(body)
    replace_markdown_section(ROOT / "BENCHMARKS.md", heading, body)


if __name__ == "__main__":
    raise SystemExit(main())
