"""Are the regressor's p-values calibrated on clean data, and what does it flag there?

``SubquantileKernelRegressor()`` (no arguments) gives every row a p-value (``outlier_pvalues_``:
its honest residual against a local scale and the tails the rows show) and flags a row where its
high-breakdown start flags it and the p-value is below 0.01. On clean data the share of rows with
p-value below q should be near q; the issue's target: within [0.5 q, 1.5 q] at q = 0.01 and
0.05, for Gaussian, Student-t(3) and heteroscedastic noise. R's ``lmrob`` (robustness weight
below 0.1 / n, robustbase's ``eps.outlier``) is beside it where ``Rscript`` and robustbase are
installed (else left out with a note): the heavy-tail target is a flagged share of at most twice
lmrob's.

Data: x ~ U(-2, 2)^2, y = x1 + x2 / 2 + e with e ~ N(0, 1) ("gaussian"), e ~ t(3) ("t3") or
e ~ (0.3 + 0.7 (x1 + 2)) N(0, 1) ("heteroscedastic": sd from 0.3 to 3.1); ``--rows`` rows,
seeds 0 .. ``--seeds`` - 1. One BLAS thread. Run on a quiet machine::

    python benchmarks/bench_evidence.py [--rows 1000] [--seeds 3] [--no-write]

It prints a table per seed and noise, then the medians against the targets, and writes its
section of BENCHMARKS.md.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from harness.report import (  # noqa: E402
    RunClock,
    cpu_description,
    markdown_table,
    replace_markdown_section,
    rows_and_seeds_parser,
)

from robustkernel import SubquantileKernelRegressor  # noqa: E402

SECTION = "## Calibration of the regressor's p-values (bench_evidence.py)"
NOISES = ("gaussian", "t3", "heteroscedastic")
LEVELS = (0.01, 0.05)
HERE = Path(__file__).resolve().parent
R_LMROB = (
    'suppressPackageStartupMessages(library("robustbase")); '
    "d <- read.csv(commandArgs(trailingOnly = TRUE)[1]); "
    "set.seed(0); fit <- lmrob(y ~ x1 + x2, data = d); "
    "cat(mean(fit$rweights < 0.1 / nrow(d)))"
)


def make_data(noise: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The clean rows of one seed and noise (see the module docstring)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    if noise == "gaussian":
        e = rng.normal(size=n)
    elif noise == "t3":
        e = rng.standard_t(3, size=n)
    else:
        e = (0.3 + 0.7 * (X[:, 0] + 2.0)) * rng.normal(size=n)
    return X, X[:, 0] + 0.5 * X[:, 1] + e


def lmrob_share(X: np.ndarray, y: np.ndarray) -> float | None:
    """lmrob's flagged share through Rscript; None where R or robustbase is missing."""
    rscript = shutil.which("Rscript")
    if rscript is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "data.csv"
        np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="x1,x2,y", comments="")
        done = subprocess.run(
            [rscript, "--vanilla", "-e", R_LMROB, str(path)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    try:
        return float(done.stdout.strip())
    except ValueError:
        return None


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark (see the module docstring)."""
    parser = rows_and_seeds_parser(__doc__.splitlines()[0], 1000, 3, HERE.parent / "BENCHMARKS.md")
    parser.add_argument("--json", type=Path, help="also write the per-seed rows (the scorecard)")
    args = parser.parse_args(argv)
    clock = RunClock()
    rows = []
    for noise in NOISES:
        for seed in range(args.seeds):
            X, y = make_data(noise, args.rows, seed)
            model = SubquantileKernelRegressor().fit(X, y)
            p = model.outlier_pvalues_
            lmrob = lmrob_share(X, y)
            row = {
                "noise": noise,
                "seed": seed,
                "kernel_": model.kernel_,
                **{f"share p < {q}": float(np.mean(p < q)) for q in LEVELS},
                "flagged": float(np.mean(~model.inlier_mask_)),
                "lmrob flagged": lmrob,
            }
            rows.append(row)
            print(row, flush=True)
    summary = []
    for noise in NOISES:
        chosen = [row for row in rows if row["noise"] == noise]
        line: dict[str, object] = {"noise": noise}
        for q in LEVELS:
            median = float(np.median([row[f"share p < {q}"] for row in chosen]))
            inside = 0.5 * q <= median <= 1.5 * q
            line[f"median share p < {q} (target [{0.5 * q:g}, {1.5 * q:g}])"] = (
                f"{median:.4f} ({'met' if inside else 'missed'})"
            )
        line["median flagged"] = float(np.median([row["flagged"] for row in chosen]))
        shares = [row["lmrob flagged"] for row in chosen if row["lmrob flagged"] is not None]
        line["median lmrob flagged"] = float(np.median(shares)) if shares else None
        summary.append(line)
    body = (
        f"{SECTION}\n\n"
        "Command: `python benchmarks/bench_evidence.py "
        f"--rows {args.rows} --seeds {args.seeds}`  \n"
        f"Machine: {cpu_description()}. One BLAS thread.  \n"
        f"{clock.note()}\n\n"
        "Clean rows (no contamination); see the script's docstring for the data. A row's p-value: "
        "`outlier_pvalues_` of `SubquantileKernelRegressor()`; flagged: `~inlier_mask_`; lmrob: "
        "R's robustbase, robustness weight below 0.1 / n ('-': R not installed).\n\n"
        + markdown_table(pd.DataFrame(summary))
        + "\nPer seed:\n\n"
        + markdown_table(pd.DataFrame(rows))
        + "\n"
    )
    print(body)
    if args.json is not None:
        args.json.write_text(json.dumps({"rows": rows}))
    if not args.no_write:
        replace_markdown_section(args.out, SECTION, body)
        print(f"wrote the section {SECTION[3:]!r} of {args.out}")


if __name__ == "__main__":
    main()
