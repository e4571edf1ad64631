"""Which rows a trimmed fit keeps: the subquantile of the losses, with row weights and class
floors, and the plain mask of the smallest losses.

Every engine ranks rows by a loss and keeps the best-explained share; these functions are the one
definition of that choice (ties are broken by row order everywhere, so that equal losses give
the same rows in every engine).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._fractions import n_kept
from .._kernel_model.losses import class_indices, power_of_two_below


def smallest(losses: np.ndarray, k: int) -> np.ndarray:
    """The mask of the ``k`` rows of smallest loss (ties: the first rows)."""
    mask = np.zeros(losses.size, dtype=bool)
    mask[np.argsort(losses, kind="stable")[:k]] = True
    return mask


@dataclass(frozen=True)
class ClassFloors:
    """Classifiers keep at least ``minimum[c]`` rows of each class c (``labels``: class per row).

    With ``minimum`` = half of each class, no trim (a given epsilon, or one estimated by
    epsilon="auto" from a misfit that gives every row of a class a low probability) can remove
    a class: a fit that never sees a class never predicts it.
    """

    labels: np.ndarray
    minimum: np.ndarray

    @classmethod
    def half_of_each_class(cls, Y: np.ndarray, weights: np.ndarray | None = None) -> ClassFloors:
        """Floors of ceil(n_c / 2) for the encoded labels ``Y`` ({0, 1} column or one-hot);
        with row ``weights``, half of each class's weight (rounded up for integer weights: the
        floors of the rows repeated)."""
        return cls.from_labels(class_indices(Y), weights)

    @classmethod
    def from_labels(cls, labels: np.ndarray, weights: np.ndarray | None = None) -> ClassFloors:
        """:meth:`half_of_each_class` of integer class labels 0, 1, ... (one per row)."""
        if weights is None:
            return cls(labels, (np.bincount(labels) + 1) // 2)
        halves = np.bincount(labels, weights=weights) / 2.0
        if np.all(weights == np.round(weights)):  # whole rows: rounded up, as the repeated rows
            halves = np.ceil(halves)
        return cls(labels, halves)

    def protect(self, kept: np.ndarray, dropped: np.ndarray, losses: np.ndarray) -> np.ndarray:
        """``dropped`` without the rows whose removal from ``kept`` would break a floor.

        A class that would fall short keeps the dropped rows of smallest loss it needs.
        """
        dropped = dropped.copy()
        for label, minimum in enumerate(self.minimum):
            in_class = self.labels == label
            short = int(minimum) - int(np.count_nonzero(kept & ~dropped & in_class))
            if short > 0:
                candidates = np.flatnonzero(dropped & in_class)
                dropped[candidates[np.argsort(losses[candidates], kind="stable")[:short]]] = False
        return dropped


def subquantile(
    losses: np.ndarray, k: int, floors: ClassFloors | None = None
) -> tuple[np.ndarray, float]:
    """Mask of the k rows with the smallest loss (ties broken by row index) and the threshold.

    The threshold is the k-th smallest loss: the maximizing t of the papers' g(t, f). With
    ``floors``, the mask minimizes the sum of the kept losses under the floors: the
    ``minimum[c]`` smallest losses of each class c first, then the smallest of the rest up to
    k rows in all (more if the floors alone exceed k); the threshold stays the k-th smallest
    loss overall. (`kept_weights` with unit weights.)
    """
    order = np.argsort(losses, kind="stable")
    if floors is None:
        mask = np.zeros(losses.shape[0], dtype=bool)
        mask[order[:k]] = True
    else:
        mask = kept_weights(losses, k, None, floors, order) > 0
    return mask, float(losses[order[k - 1]])


def weighted_subquantile(
    losses: np.ndarray,
    epsilon: float,
    weights: np.ndarray | None = None,
    floors: ClassFloors | None = None,
) -> np.ndarray:
    """The weight each row carries in the fit on the subquantile of ``losses``.

    Without ``weights``: 1 for the k = ceil((1 - epsilon) n) rows of smallest loss (ties broken
    by row index), 0 for the others. With ``weights``: the rows of smallest loss keep their
    weight until the kept weight reaches (1 - epsilon) of the total; the row that crosses it
    keeps the part it needs, so integer weights give the fit on the data with each row repeated
    that many times. ``floors`` keep the smallest losses of each class c first, up to a weight of
    ``minimum[c]``.
    """
    total = losses.shape[0] if weights is None else np.asarray(weights, dtype=float).sum()
    if weights is None or np.all(weights == np.round(weights)):
        needed = float(n_kept(round(total), epsilon))
    else:  # to 12 significant digits of the total: sums of real weights carry rounding noise
        unit = power_of_two_below(total)
        needed = round((1.0 - epsilon) * total / unit, 12) * unit
    return kept_weights(losses, needed, weights, floors)


def kept_weights(
    losses: np.ndarray,
    needed: float,
    weights: np.ndarray | None = None,
    floors: ClassFloors | None = None,
    order: np.ndarray | None = None,
) -> np.ndarray:
    """Each row's kept weight when the rows of smallest loss (ties by row index; ``order``, the
    stable argsort of ``losses``, when known) are kept until their weight reaches ``needed``,
    each class c's smallest first up to ``minimum[c]`` under ``floors``; the row that crosses a
    bound keeps the part it needs."""
    n = losses.shape[0]
    weights = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    # in units of a power of two near the largest weight (exact): sums of weights of any
    # magnitude neither overflow nor lose digits to subnormals
    unit = power_of_two_below(weights.max()) if n else 1.0
    order = np.argsort(losses, kind="stable") if order is None else order
    ordered = weights[order] / unit
    kept = np.zeros(n)
    if floors is not None:  # each class's smallest losses first, up to its floor
        labels = floors.labels[order]
        for label in np.unique(labels):
            rows = np.flatnonzero(labels == label)
            before = np.cumsum(ordered[rows]) - ordered[rows]
            kept[rows] = np.clip(floors.minimum[label] / unit - before, 0.0, ordered[rows])
    spare = ordered - kept
    before = np.cumsum(spare) - spare
    kept += np.clip(needed / unit - kept.sum() - before, 0.0, spare)
    # a part below 1e-12 of a row's weight is the rounding of the running sums, not a choice
    # (uniform weights of 0.1 kept a 1e-14 sliver of one row too many)
    kept[kept < 1e-12 * ordered] = 0.0
    result = np.empty(n)
    result[order] = kept * unit
    return result
