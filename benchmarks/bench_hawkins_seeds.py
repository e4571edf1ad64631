"""Hawkins-like masking on eight seeds: the defaults beside R's ltsReg and lmrob.

The generator of the tests (``harness.data.hawkins_like``, after Hawkins, Bradu & Kass 1984):
75 rows in 3 dimensions, rows 0-9 a cluster of bad leverage points (far in x, off the plane),
rows 10-13 good leverage points (far in x, on the plane), the rest the plane plus N(0, 0.5^2)
noise. A fit is *right* on a seed when it flags all 10 bad rows and keeps all 4 good ones.

Methods: ``SubquantileKernelRegressor()`` and ``SubquantileRegressor(LinearRegression())`` with
no other arguments (flags: ``~inlier_mask_``), R's ``ltsReg(X, y)`` (flags: ``lts.wt == 0``)
and ``lmrob(y ~ X)`` (flags: robustness weight below 0.1 / n), through ``Rscript``
(``harness.rscript``; left out with a note where Rscript or robustbase is missing: Debian /
Ubuntu ``apt-get install r-base-core r-cran-robustbase``). One BLAS thread::

    python benchmarks/bench_hawkins_seeds.py [--seeds 8] [--no-write]

It prints one row per method and seed (bad rows flagged of 10, good rows kept of 4, clean rows
flagged of 61, right or not), then the count of seeds each method gets right, and writes its
section of BENCHMARKS.md.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

import argparse  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from harness.data import hawkins_like  # noqa: E402
from harness.report import (  # noqa: E402
    RunClock,
    cpu_description,
    markdown_table,
    replace_markdown_section,
)
from harness.rscript import R_INSTALL, R_METHODS, r_version, run_robustbase_batch  # noqa: E402
from sklearn.linear_model import LinearRegression  # noqa: E402

from robustkernel import SubquantileKernelRegressor, SubquantileRegressor  # noqa: E402

SECTION = "## Hawkins-like masking on eight seeds (bench_hawkins_seeds.py)"
HERE = Path(__file__).resolve().parent
BAD, GOOD = np.arange(10), np.arange(10, 14)
LIBRARY = {
    "SubquantileKernelRegressor()": SubquantileKernelRegressor,
    "SubquantileRegressor(LinearRegression())": lambda: SubquantileRegressor(LinearRegression()),
}


def judge(method: str, seed: int, flagged: np.ndarray, n: int) -> dict:
    """One row of the table: the flagged rows (0-based indices) against the planted ones."""
    mask = np.zeros(n, dtype=bool)
    mask[flagged] = True
    bad, good = int(mask[BAD].sum()), int((~mask[GOOD]).sum())
    clean = int(mask[14:].sum())
    return {
        "method": method,
        "seed": seed,
        "bad flagged (of 10)": bad,
        "good kept (of 4)": good,
        "clean flagged (of 61)": clean,
        "right": bad == BAD.size and good == GOOD.size,
    }


def run(seeds: range) -> tuple[pd.DataFrame, str]:
    """Every method on every seed: the table and a note on R."""
    rows = []
    data = {f"hawkins_{seed}": hawkins_like(seed) for seed in seeds}
    for seed in seeds:
        X, y = data[f"hawkins_{seed}"]
        for method, make in LIBRARY.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = make().fit(X, y)
            rows.append(judge(method, seed, np.flatnonzero(~model.inlier_mask_), y.size))
    version, note = r_version()
    if version is None:
        return pd.DataFrame(rows), f"R's robustbase left out: {note} ({R_INSTALL})."
    fits, failure = run_robustbase_batch(data, timeout=600)
    for seed in seeds:
        for method in R_METHODS:
            fit = fits.get(f"hawkins_{seed}", {}).get(method)
            if fit is None or fit.error is not None:
                continue
            rows.append(judge(method, seed, fit.flagged, 75))
    note = f"R: {version}." + (f" {failure}." if failure else "")
    return pd.DataFrame(rows), note


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--out", type=Path, default=HERE.parent / "BENCHMARKS.md")
    args = parser.parse_args(argv)
    clock = RunClock()
    table, r_note = run(range(args.seeds))
    order = list(LIBRARY) + list(R_METHODS)
    summary = (
        table.groupby("method", sort=False)["right"]
        .agg(["sum", "size"])
        .reindex([m for m in order if m in set(table["method"])])
    )
    right = pd.DataFrame(
        {
            "method": summary.index,
            "seeds right": [
                f"{int(s)} of {int(z)}"
                for s, z in zip(summary["sum"], summary["size"], strict=True)
            ],
            "which": [
                ", ".join(str(s) for s in table[(table["method"] == m) & table["right"]]["seed"])
                or "none"
                for m in summary.index
            ],
        }
    )
    per_seed = table.assign(right=table["right"].map({True: "yes", False: "no"}))
    body = "\n".join(
        [
            SECTION,
            "",
            f"Command: `python benchmarks/bench_hawkins_seeds.py --seeds {args.seeds}` "
            f"({cpu_description()}, one BLAS thread). {clock.note()} {r_note}",
            "",
            "Right = all 10 bad leverage rows flagged and all 4 good leverage rows kept.",
            "",
            markdown_table(right),
            "",
            markdown_table(per_seed),
            "",
        ]
    )
    print(body)
    if not args.no_write:
        replace_markdown_section(args.out, SECTION, body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
