"""Flipped labels found by confident learning on out-of-fold probabilities.

The classifier with epsilon="auto" and alpha / gamma "auto" (:meth:`._in_memory.InMemoryFit.
_fit_label_noise`) reads the out-of-fold class probabilities of every row and flags the rows
whose given label the data contradict, in the way of confident learning (Northcutt, Jiang &
Chuang, "Confident Learning: Estimating Uncertainty in Dataset Labels", JAIR 2021):

1. each class j gets its own threshold t_j, the mean probability of j over the rows labelled j
   (its self-confidence): a hard class or a class that received many flips has a low t_j, so
   one global cut neither flags all of a hard class nor misses the flips into an easy one;
2. a row *confidently* belongs to class j when p_j >= t_j; among such classes its estimated true
   label is the most probable one. The confident joint C[i, j] counts the rows labelled i whose
   estimated true label is j;
3. C is calibrated so that each row i sums to the number of rows labelled i, and divided by n:
   Q[i, j] estimates the joint share of (given i, true j). For every pair i != j the
   round(n Q[i, j]) rows labelled i with the largest margin p_j - p_i are flagged (pruning by the
   noise rate of each pair, as the paper's "prune by noise rate").

This module computes on probabilities only; the fits that produce them live in the caller.
"""

from __future__ import annotations

import numpy as np

# Rounds of flags, each from fold models fitted without the previous round's flagged rows.
# benchmarks/bench_robust.py --task classification (51 cells, 3 seeds): the flags of the first
# round alone left the defaults best or within 2% in 28 cells (median gap to the oracle 0.033);
# up to 3 rounds, 32 (0.025). 5 folds instead of 3 did not add to it (27 with 3 rounds).
ROUNDS = 3
# Flags need a model that predicts the labels: where the out-of-fold error is not below the
# error of always predicting the most frequent class by this many binomial standard errors,
# the labels are treated as unpredictable and nothing is flagged (random labels of 300 rows:
# 45-48% of the rows were flagged before).
CHANCE_STANDARD_ERRORS = 3.0
# The error compared with chance is the best pair's on folds dealt in an order drawn from this
# seed, not the least error of the grid, which is biased low: random labels of 300 rows with
# the hinge loss's 20 pairs passed the guard in 2 of 12 fits (35% and 42% of the rows flagged).
CHANCE_FOLDS_SEED = 0
# loss="auto" keeps the hinge loss unless the log loss's out-of-fold error is lower by more
# than this many standard errors of the paired difference (the one-standard-error rule).
LOSS_STANDARD_ERRORS = 1.0


def chance_level(labels: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """The error of always predicting the most frequent class, 1 - max_j share_j, and
    ``CHANCE_STANDARD_ERRORS`` binomial standard errors of it, sqrt(e (1 - e) / n_eff)
    (n_eff = (sum w)^2 / sum w^2: the rows the weights amount to).

    Parameters
    ----------
    labels : ndarray of int, shape (n_samples,)
        Given class indices.
    weights : ndarray of shape (n_samples,)
        Row weights.

    Returns
    -------
    chance : float
        The majority class's error.
    margin : float
        ``CHANCE_STANDARD_ERRORS`` standard errors of it.
    """
    shares = np.bincount(labels, weights=weights) / weights.sum()
    chance = 1.0 - float(shares.max())
    effective = weights.sum() ** 2 / float(weights @ weights)
    return chance, CHANCE_STANDARD_ERRORS * float(np.sqrt(chance * (1.0 - chance) / effective))


def class_thresholds(P: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """t_j: the (weighted) mean probability of class j over the rows labelled j (1 for a class
    without rows: no row is confidently in it)."""
    K = P.shape[1]
    totals = np.bincount(labels, weights=weights, minlength=K)
    sums = np.bincount(labels, weights=weights * P[np.arange(labels.size), labels], minlength=K)
    return np.where(totals > 0, sums / np.where(totals > 0, totals, 1.0), 1.0)


def confident_joint(P: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The calibrated joint Q[i, j] of (given label i, estimated true label j), summing to 1.

    Rows with no class above its threshold count nowhere; each row of the count matrix is
    scaled to the weight of the rows labelled i (a given class none of whose rows is confident
    anywhere gets Q[i, i] = its share).
    """
    K = P.shape[1]
    above = P >= class_thresholds(P, labels, weights)
    confident = above.any(axis=1)
    estimated = np.argmax(np.where(above, P, -np.inf), axis=1)
    counts = np.zeros((K, K))
    np.add.at(counts, (labels[confident], estimated[confident]), weights[confident])
    given = np.bincount(labels, weights=weights, minlength=K)
    totals = counts.sum(axis=1)
    empty = np.flatnonzero(totals == 0)
    counts[empty, empty] = 1.0
    totals[empty] = 1.0
    return counts / totals[:, None] * given[:, None] / weights.sum()


def label_issues(
    P: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None
) -> np.ndarray:
    """Rows flagged by pruning each pair (given i, true j != i) by its estimated share of
    flips: the rows labelled i of largest margin p_j - p_i, as many as hold round(n Q[i, j]) of
    the weight.

    Parameters
    ----------
    P : ndarray of shape (n_samples, n_classes)
        Out-of-fold class probabilities (rows sum to 1).
    labels : ndarray of shape (n_samples,)
        Given class indices 0, ..., n_classes - 1.
    weights : ndarray of shape (n_samples,), default=None
        Row weights (a row of weight w counts as w rows); every row 1 where None.

    Returns
    -------
    flagged : ndarray of bool, shape (n_samples,)
    """
    n, K = P.shape
    weights = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    Q = confident_joint(P, labels, weights)
    total = weights.sum()
    flagged = np.zeros(n, dtype=bool)
    for i in range(K):
        members = np.flatnonzero(labels == i)
        for j in range(K):
            budget = round(total * Q[i, j])
            if i == j or budget <= 0:
                continue
            order = members[np.argsort(P[members, i] - P[members, j], kind="stable")]
            # the rows whose weight, added in margin order, stays within the budget (at least one)
            within = np.cumsum(weights[order]) <= budget + 1e-9
            within[0] = True
            flagged[order[within]] = True
    return flagged


def log_loss_wins(wrong_log: np.ndarray, wrong_hinge: np.ndarray, weights: np.ndarray) -> bool:
    """Whether the log loss's out-of-fold errors are below the hinge loss's on the same rows
    by more than ``LOSS_STANDARD_ERRORS`` standard errors of their (weighted) mean paired
    difference (n_eff = (sum w)^2 / sum w^2 rows).

    Parameters
    ----------
    wrong_log, wrong_hinge : ndarray of bool, shape (n_rows,)
        Whether each row's out-of-fold prediction under each loss misses its given label.
    weights : ndarray of shape (n_rows,)
        Row weights.

    Returns
    -------
    bool
    """
    if not weights.size:
        return False
    difference = wrong_log.astype(float) - wrong_hinge
    total = weights.sum()
    mean = float(weights @ difference / total)
    variance = float(weights @ (difference - mean) ** 2 / total)
    effective = total**2 / float(weights @ weights)
    return mean < -LOSS_STANDARD_ERRORS * np.sqrt(variance / effective)
