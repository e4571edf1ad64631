"""Fit time of the Subquantile regressor on a PyTorch device (``device=``) against NumPy.

The data and kernel of ``bench_subquantile.py`` (RBF, eps = 0.2 of the labels replaced). For
each n and solver: the median fit time with ``device=None`` (NumPy / SciPy) and on the device,
the speed-up, the largest prediction difference on the test rows relative to the largest
prediction, and whether both paths keep the same rows. With a CUDA GPU the device is "cuda"
(n = 2000 ... 20000); without one it is torch on the CPU at small n, which checks the backend
but says nothing about GPU speed.

    python benchmarks/bench_gpu.py [--sizes 2000 5000 10000 20000] [--repeats 1]

needs the ``gpu`` extra (PyTorch); prints the table and writes it into BENCHMARKS.md (section
"GPU backend").
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from harness.data import EPSILON, PARAMS, make_data
from harness.report import cpu_description, markdown_table, replace_markdown_section

from robustkernel import SubquantileKernelRegressor

SOLVERS = {"alternating": {"solver": "alternating"}, "gd": {"solver": "gd", "max_iter": 200}}
CUDA_SIZES = [2000, 5000, 10000, 20000]
CPU_SIZES = [500, 1000, 2000]
SECTION = "## GPU backend"


def median_fit(options: dict, X: np.ndarray, y: np.ndarray, repeats: int):
    """Median wall time of ``repeats`` fits and the last fitted model."""
    times = []
    for _ in range(repeats):
        model = SubquantileKernelRegressor(
            epsilon=EPSILON, refine=None, n_components=None, **PARAMS, **options
        )
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning at the gd iteration cap
            model.fit(X, y)
        times.append(time.perf_counter() - start)
    return statistics.median(times), model


def bench_size(n: int, device: str, repeats: int) -> list[dict]:
    X, y, X_test, _, _ = make_data(n)
    rows = []
    for name, options in SOLVERS.items():
        numpy_time, reference = median_fit(options, X, y, repeats)
        device_time, on_device = median_fit({**options, "device": device}, X, y, repeats)
        expected = reference.predict(X_test)
        difference = np.max(np.abs(on_device.predict(X_test) - expected))
        same_rows = np.array_equal(reference.inlier_mask_, on_device.inlier_mask_)
        rows.append(
            {
                "n": n,
                "solver": name,
                "NumPy fit s": round(numpy_time, 3),
                f"{device} fit s": round(device_time, 3),
                "speed-up": round(numpy_time / device_time, 2),
                "iterations (NumPy / device)": f"{reference.n_iter_} / {on_device.n_iter_}",
                "max pred. diff / max |pred|": f"{difference / np.max(np.abs(expected)):.1e}",
                "same kept rows": bool(same_rows),
            }
        )
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(  # the repository's BENCHMARKS.md, wherever the script runs from
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
    )
    args = parser.parse_args()
    has_cuda = torch.cuda.is_available()
    device = "cuda" if has_cuda else "cpu"
    sizes = args.sizes or (CUDA_SIZES if has_cuda else CPU_SIZES)
    # Warm-up: CUDA context and kernels load on the first call, not inside the timings.
    median_fit({"device": device}, *make_data(200)[:2], repeats=1)
    rows = [row for n in sizes for row in bench_size(n, device, args.repeats)]
    table = markdown_table(pd.DataFrame(rows))
    print(table)
    threads = os.environ.get("OMP_NUM_THREADS")
    command = ("" if threads is None else f"OMP_NUM_THREADS={threads} ") + " ".join(
        [
            "python benchmarks/bench_gpu.py",
            "--sizes",
            *map(str, sizes),
            "--repeats",
            str(args.repeats),
        ]
    )
    if has_cuda:
        where = f"GPU: {torch.cuda.get_device_name()} (device='cuda')."
    else:
        where = (
            "**No GPU was available for this run**: the device column is PyTorch on the CPU "
            "(device='cpu'), which checks that the backend reproduces the NumPy path but says "
            "nothing about GPU speed (torch's OpenMP threads and NumPy's BLAS threads take turns "
            "every iteration; on a shared CPU run it with OMP_NUM_THREADS=1). Rerun the command "
            "on a machine with CUDA for the GPU timings (n = 2000 ... 20000 by default there)."
        )
    body = (
        f"{SECTION}\n\n"
        f"`SubquantileKernelRegressor(epsilon={EPSILON}, kernel='rbf', alpha={PARAMS['alpha']}, "
        f"gamma={PARAMS['gamma']})` on the data of 'Subquantile solvers', with device=None "
        "(NumPy / SciPy) and with `device=`: the kernel matrix, its products and the Cholesky "
        "solves on the device, the O(n) work per iteration on the host. gd is capped at "
        f"{SOLVERS['gd']['max_iter']} iterations. Times are medians of the repeats, after one "
        "warm-up fit on the device; 'max pred. diff' is over 1000 test rows. "
        f"{where}\n\n"
        f"Command: `{command}`  \n"
        f"Machine: {platform.machine()}, {cpu_description()}, "
        f"Python {platform.python_version()}, numpy {np.__version__}, torch {torch.__version__} "
        f"({torch.get_num_threads()} CPU threads)."
        "\n\n" + table
    )
    replace_markdown_section(Path(args.out), SECTION, body)


if __name__ == "__main__":
    main()
