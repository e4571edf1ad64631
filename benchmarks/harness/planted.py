"""The scorecard's planted grid: truths, attacks and the data of one cell.

A cell is (truth, attack, eps, n); a run is a cell and a seed. Every run draws its training rows
x ~ N(0, I_p), y = f(x) + noise, then moves floor(eps n) of them by the attack, and a clean test
set of ``N_TEST`` rows on which the RMSE *to the truth* f is measured.

Truths (:data:`TRUTHS`):

* ``linear``: y = x . beta, p = 5, noise sd 0.5 (beta a random unit vector);
* ``smooth``: y = sin(x . w) + (x . v)^2 / 2 + 0.5 x_3, p = 5, noise sd 0.3 (w, v random unit
  vectors);
* ``near_deterministic``: y = x^3 - 2 x (the SubQ papers' cubic family), p = 1, noise sd 0.05.

Attacks (:data:`ATTACKS`), on the rows ``bad`` (``m = floor(eps n)`` of them):

* ``vertical``: y += U(-8, 8) sd(y) (rows at random);
* ``sign_flip``: y <- -y (rows at random);
* ``coherent_shift``: the 2m rows nearest to a random training row form a region; half of
  them (m rows at random) get y += 3 sd(y), the others stay correct beside them;
* ``leverage``: the rows move to one far point c (5 sd of x from the origin along a random
  direction, spread 0.1 per coordinate) with y = f(c) + 5 sd(y) (sign at random);
* ``mixed``: half of the rows vertical, the other half leverage.

Only the rows whose target lies more than ``FAR_NOISE_SDS`` noise sds from the truth count in
the recall (a sign flip of a target near 0 is no error).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from robustkernel.corruption import n_corrupted

__all__ = [
    "ATTACKS",
    "CLEAN",
    "FAR_NOISE_SDS",
    "N_TEST",
    "TRUTHS",
    "Cell",
    "PlantedData",
    "cells",
    "generate",
]

CLEAN = "none"  # the attack of the eps = 0 cells
ATTACKS = ("vertical", "sign_flip", "coherent_shift", "leverage", "mixed")
TRUTHS = {  # name: (features, noise sd)
    "linear": (5, 0.5),
    "smooth": (5, 0.3),
    "near_deterministic": (1, 0.05),
}
EPSILONS = (0.1, 0.2, 0.3, 0.4)
SIZES = (200, 1000)
N_TEST = 2000
FAR_NOISE_SDS = 3.0
VERTICAL = 8.0  # x sd(y)
SHIFT = 3.0  # x sd(y)
LEVERAGE_DISTANCE = 5.0  # x sd of x
LEVERAGE_SPREAD = 0.1
LEVERAGE_OFFSET = 5.0  # x sd(y)
_CODES = {name: code for code, name in enumerate((CLEAN, *ATTACKS, *TRUTHS))}


@dataclass(frozen=True)
class Cell:
    """One cell of the planted grid."""

    truth: str
    attack: str
    eps: float
    n: int

    def key(self) -> dict:
        """The cell as a dict of plain values (cache keys, table columns)."""
        return asdict(self)


@dataclass(frozen=True)
class PlantedData:
    """The rows of one run: training rows, the moved rows, and the clean test rows."""

    X: np.ndarray
    y: np.ndarray
    bad: np.ndarray  # bool, the rows the attack moved
    far: np.ndarray  # bool, the moved rows more than FAR_NOISE_SDS noise sds from the truth
    X_test: np.ndarray
    f_test: np.ndarray  # the truth at the test rows
    noise_sd: float


def cells(sizes=SIZES, epsilons=EPSILONS, truths=tuple(TRUTHS), attacks=ATTACKS) -> list[Cell]:
    """Every cell: per truth and size, the clean cell and each attack at each eps > 0."""
    grid = []
    for truth in truths:
        for n in sizes:
            grid.append(Cell(truth, CLEAN, 0.0, n))
            grid += [Cell(truth, a, float(e), n) for a in attacks for e in epsilons if e > 0]
    return grid


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def _truth(name: str, seed: int):
    """The function f of a truth (its random directions drawn from the seed)."""
    p = TRUTHS[name][0]
    rng = np.random.default_rng([1, seed, _CODES[name]])
    beta, w, v = (_unit(rng.normal(size=p)) for _ in range(3))
    if name == "linear":
        return lambda X: X @ beta
    if name == "smooth":
        return lambda X: np.sin(X @ w) + 0.5 * (X @ v) ** 2 + 0.5 * X[:, 2]
    return lambda X: X[:, 0] ** 3 - 2.0 * X[:, 0]


def generate(cell: Cell, seed: int) -> PlantedData:
    """The training and test rows of one run (the same clean rows for every attack and eps)."""
    p, noise_sd = TRUTHS[cell.truth]
    f = _truth(cell.truth, seed)
    rng = np.random.default_rng([2, seed, cell.n, _CODES[cell.truth]])
    X = rng.normal(size=(cell.n, p))
    y = f(X) + noise_sd * rng.normal(size=cell.n)
    X_test = np.random.default_rng([3, seed, _CODES[cell.truth]]).normal(size=(N_TEST, p))
    bad = np.zeros(cell.n, dtype=bool)
    if cell.attack != CLEAN:
        rng = np.random.default_rng(
            [4, seed, cell.n, _CODES[cell.truth], _CODES[cell.attack], round(100 * cell.eps)]
        )
        X, y, rows = _attack(cell.attack, X, y, n_corrupted(cell.n, cell.eps), f, rng)
        bad[rows] = True
    far = bad & (np.abs(y - f(X)) > FAR_NOISE_SDS * noise_sd)
    return PlantedData(X, y, bad, far, X_test, f(X_test), noise_sd)


def _attack(kind: str, X: np.ndarray, y: np.ndarray, m: int, f, rng: np.random.Generator):
    """X, y with m rows moved by the attack ``kind``, and those rows."""
    X, y = X.copy(), y.copy()
    n = y.size
    scale = float(np.std(y))
    if kind == "coherent_shift":
        centre = X[rng.integers(n)]
        region = np.argsort(np.linalg.norm(X - centre, axis=1), kind="stable")[: min(n, 2 * m)]
        rows = rng.choice(region, size=m, replace=False)
        y[rows] += SHIFT * scale
        return X, y, rows
    rows = rng.choice(n, size=m, replace=False)
    vertical = {"vertical": rows, "sign_flip": rows[:0], "leverage": rows[:0]}.get(
        kind, rows[: m // 2]
    )
    leverage = rows[vertical.size :] if kind in ("leverage", "mixed") else rows[:0]
    if kind == "sign_flip":
        y[rows] = -y[rows]
    y[vertical] += VERTICAL * scale * rng.uniform(-1.0, 1.0, size=vertical.size)
    if leverage.size:
        p = X.shape[1]
        centre = LEVERAGE_DISTANCE * _unit(rng.normal(size=p))
        X[leverage] = centre + LEVERAGE_SPREAD * rng.normal(size=(leverage.size, p))
        y[leverage] = f(centre[None, :])[0] + rng.choice([-1.0, 1.0]) * LEVERAGE_OFFSET * scale
    return X, y, rows
