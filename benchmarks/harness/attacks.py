"""The attacks of the robustness race (each (X, y, eps, seed) -> Corruption) and its splits: 80/20,
standardized with the clean training statistics, eps of the training rows corrupted; the cells
and the per-split options of the label-noise scripts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from robustkernel.corruption import contaminated_split, corrupt, n_corrupted

from .data import CLASSIFICATION

CLEAN = "none"  # the attack of the eps = 0 cells


# ----------------------------------------------------------------------------------------------
# Attacks: each f(X, y, eps, seed) -> (X, y, corrupted row indices) on the standardized clean
# training rows; the inputs are not modified.

Corruption = tuple[np.ndarray, np.ndarray, np.ndarray]


def library_attack(X: np.ndarray, y: np.ndarray, eps: float, seed: int, *, kind: str) -> Corruption:
    """An attack of :data:`robustkernel.corruption.CORRUPTIONS` (its seeded choice of rows).

    Parameters
    ----------
    X, y : ndarray
        Clean training rows.
    eps : float
        Corrupted fraction: floor(eps n) rows.
    seed : int
        Seeds the rows and the replacement values.
    kind : str
        The library's corruption name.

    Returns
    -------
    X, y, index : ndarray
        Corrupted copies and the sorted corrupted rows.
    """
    bad = corrupt(X, y, kind, eps, random_state=seed)
    return bad.X, bad.y, bad.index


def _random_rows(n: int, eps: float, seed: int, salt: int) -> np.ndarray:
    """floor(eps n) distinct rows drawn uniformly (generator seeded by ``(seed, salt)``).

    Parameters
    ----------
    n : int
        Number of rows.
    eps : float
        Fraction.
    seed, salt : int
        Seed of the run and a per-attack constant.

    Returns
    -------
    index : ndarray of int
        Sorted row indices.
    """
    rng = np.random.default_rng([seed, salt])
    return np.sort(rng.permutation(n)[: n_corrupted(n, eps)])


def fixed_class(X: np.ndarray, y: np.ndarray, eps: float, seed: int) -> Corruption:
    """Systematic label noise: floor(eps n) random rows of the other classes all relabeled t.

    t is the class with the fewest clean training rows (ties: the smallest label), so for two
    classes every flip goes from the larger class c to t ("all flips of c to one fixed other
    class"); with more classes every flipped row, whatever its class, becomes t. Drawing from the
    larger classes keeps the attack possible at every eps < 0.5 (at least n / 2 rows are not t).

    Parameters
    ----------
    X, y : ndarray
        Clean training rows.
    eps : float
        Corrupted fraction.
    seed : int
        Seeds the rows.

    Returns
    -------
    X, y, index : ndarray
        Corrupted copies and the corrupted rows.
    """
    classes, counts = np.unique(y, return_counts=True)
    target = classes[np.argmin(counts)]
    others = np.flatnonzero(y != target)
    rng = np.random.default_rng([seed, 4])
    index = np.sort(rng.permutation(others)[: n_corrupted(X.shape[0], eps)])
    y = np.array(y, copy=True)
    y[index] = target
    return np.array(X, dtype=float), y, index


def pair_flip(X: np.ndarray, y: np.ndarray, eps: float, seed: int) -> Corruption:
    """Pair flipping: random rows get the next class, c -> c + 1 (cyclic, in sorted order).

    Every class's flips go to one fixed other class and every class loses about eps of its rows,
    so the true class stays the majority label everywhere for eps < 0.5. With two classes this
    is the random flip; the benchmark runs it on data with three or more classes only.

    Parameters
    ----------
    X, y : ndarray
        Clean training rows.
    eps : float
        Corrupted fraction.
    seed : int
        Seeds the rows.

    Returns
    -------
    X, y, index : ndarray
        Corrupted copies and the corrupted rows.
    """
    classes = np.unique(y)
    index = _random_rows(X.shape[0], eps, seed, salt=5)
    y = np.array(y, copy=True)
    position = np.searchsorted(classes, y[index])
    y[index] = classes[(position + 1) % classes.size]
    return np.array(X, dtype=float), y, index


Attack = Callable[[np.ndarray, np.ndarray, float, int], Corruption]

CLASSIFICATION_ATTACKS: dict[str, tuple[Attack, str]] = {
    "random_flip": (
        partial(library_attack, kind="wrong_class"),
        "a uniformly random other class (robustkernel.corruption 'wrong_class')",
    ),
    "fixed_class": (
        fixed_class,
        "random rows of the classes other than t all relabeled t, t = the class with the "
        "fewest clean training rows (two classes: every flip goes c -> t; beyond eps = half "
        "the share of c, c's flipped rows outnumber its clean ones and no method can recover)",
    ),
    "pair_flip": (
        pair_flip,
        "random rows get the next class, c -> c + 1 (cyclic); data with 3 or more classes only "
        "(with 2 it is random_flip)",
    ),
}
MULTICLASS_ONLY = frozenset({"pair_flip"})
ATTACKS = {CLASSIFICATION: CLASSIFICATION_ATTACKS}


@dataclass(frozen=True)
class Split:
    """One seed's training and test rows.

    Attributes
    ----------
    X_train, y_train : ndarray
        Standardized, then corrupted training rows.
    X_test, y_test : ndarray
        Clean test rows (standardized with the clean training statistics).
    corrupted : ndarray of bool
        True for the corrupted training rows.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    corrupted: np.ndarray


def make_split(
    X: np.ndarray, y: np.ndarray, task: str, attack: str, eps: float, seed: int
) -> Split:
    """The seed's 80/20 split, standardized with clean training statistics, then attacked.

    Parameters
    ----------
    X, y : ndarray
        The data set.
    task : {"classification"}
        The race's task (its splits are stratified).
    attack : str
        A key of :data:`CLASSIFICATION_ATTACKS`, or "none".
    eps : float
        Corrupted fraction of the training rows.
    seed : int
        Seeds the split and the attack.

    Returns
    -------
    split : Split
        Training and test rows and the corrupted mask.
    """
    # only the protocol of "wrong_class" is used (eps = 0): a stratified split, X standardized
    clean = contaminated_split(X, y, "wrong_class", 0.0, random_state=seed)
    X_train, y_train = clean.X_train, clean.y_train
    corrupted = np.zeros(X_train.shape[0], dtype=bool)
    if attack != CLEAN and eps > 0:
        function, _ = ATTACKS[task][attack]
        X_train, y_train, index = function(X_train, y_train, eps, seed)
        corrupted[index] = True
    return Split(X_train, y_train, clean.X_test, clean.y_test, corrupted)


