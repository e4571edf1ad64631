"""Flipped labels found by confident learning on out-of-fold probabilities.

The Subquantile classifier with epsilon="auto" and alpha / gamma "auto" (its label-noise
route) and the meta-estimator ``SubquantileClassifier(epsilon="auto")`` read the out-of-fold
class probabilities of every row and flag the rows whose given label the data contradict, in
the way of confident learning (Northcutt, Jiang & Chuang, "Confident Learning: Estimating
Uncertainty in Dataset Labels", JAIR 2021):

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

from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize_scalar

from .._fractions import n_kept
from .._kernel_model.losses import class_probabilities
from .rules import MAX_EPSILON
from .selection import ClassFloors, smallest

# Rounds of flags, each from fold models fitted without the previous round's flagged rows.
# benchmarks/bench_robust.py --task classification (51 cells, 3 seeds): the flags of the first
# round alone left the defaults best or within 2% in 28 cells (median gap to the oracle 0.033);
# up to 3 rounds, 32 (0.025). 5 folds instead of 3 did not add to it (27 with 3 rounds).
# The rounds stop where a round flags more weight than the one before and drops some of its
# flags (:func:`rounds_end`; a round that keeps every earlier flag and adds more goes on:
# bench_robust.py's classification splits and the held-out sets, 357 splits of seeds 0-2, mean
# test accuracy 0.8439 either way, 9 splits changed, 3 of 119 cells up by more than 0.005, none
# down; separable blobs with 10% of the labels flipped, 12 draws: mean recall 0.885 -> 0.96,
# precision 1.0):
# its fold models, fitted on cleaner rows, grew confident enough to contradict the hard rows
# of the true classes too. On 2000 generated rows of two overlapping classes with 20% of the
# labels flipped (seed 0) the flags went from 25.3% (precision 0.65, recall 0.82) to 27.0%
# (0.59, 0.79) in three rounds and test accuracy from 0.868 to 0.843 (SVC() 0.878). The
# bench_robust.py splits (benchmarks/bench_flag_rounds.py, 51 cells x 6 seeds, the defaults
# fitted with 1, 2 and 3 rounds): mean test accuracy 0.8133 / 0.8183 / 0.8155, stopping where
# the flags grow 0.8191 (seeds 3-5 alone, after the rule was read on seeds 0-2: 0.8032 /
# 0.8076 / 0.8051 and 0.8090); within 2 points of the best of the four in 39 / 46 / 42 / 44
# cells.
# SubquantileClassifier (any estimator) keeps its rounds until the flags repeat: with
# LogisticRegression and a quarter of one class relabelled (tests/test_meta_estimators.py)
# the later rounds find the flips the first round's biased boundary hid (test accuracy 0.952;
# stopping where the flags grow, 0.922).
ROUNDS = 3
# Flags need a model whose out-of-fold probabilities say something about the labels: where
# they do not lower the Brier score of the class shares alone (each row given the shares) by
# this many standard errors of the mean paired difference, the labels are treated as
# unpredictable and nothing is flagged. The 0/1 error is the wrong test: with 30% of breast
# cancer's rows moved to the smaller class, half of the other class's region carries the wrong
# label, no model errs less than the majority class, and yet the probabilities (1/2 there, near
# 1 elsewhere) find the flips (bench_robust.py: 0.85 test accuracy with the flags, 0.65
# without). Random labels of 300 rows, 2 and 3 classes, 8 seeds, both losses: no flags.
CHANCE_STANDARD_ERRORS = 2.0
# ... and where the chosen pair's out-of-fold error, on folds dealt in an order drawn from
# FRESH_FOLDS_SEED, is not below the majority class's error by this many binomial standard
# errors. The least error of the grid is biased low (the least of many noisy errors: with the
# hinge loss's 20 grid pairs it let random labels through in 3 of 16 fits at 2 and at 3
# standard errors). The error test keeps sharp models of symmetric flips, whose probabilities
# lose to the shares' even tempered (200 rows, 30% flipped: out-of-fold error 0.3 against 0.5).
ERROR_STANDARD_ERRORS = 3.0
FRESH_FOLDS_SEED = 0
# loss="auto" keeps the log loss with two classes, the hinge loss with more, unless the other
# loss's out-of-fold error is lower by more than this many standard errors of the paired
# difference. The class count decides the side: bench_robust.py --task classification, the
# hinge's flags from its votes (_folds.flag_probabilities), cells best or within 2 points
# against SVC + GridSearchCV and the two cleanlab rows: 36 of 51 (log loss alone 33, hinge
# alone 32; SVC + GridSearchCV 39 in each of these races). The better of the two by test
# accuracy would give 44, but that is the test rows' noise: benchmarks/bench_loss_choice.py,
# the same comparison on the rows either keeps: 38 on these splits, and on seeds 3-5 within 2
# points of the better loss in 42 cells against this rule's 43; keeping the fit with fewer
# truly corrupted rows (an oracle): 36. Earlier, one side for every class count (cells best
# or within 2 points among eight methods, "auto" against the log loss alone in the same run):
# keeping the hinge unless the log loss was better by one standard error, 24 against 28 (with
# an earlier no-signal guard); the log loss unless the hinge was better by one, 26 against
# 31; by two, 30 against 32.
LOSS_STANDARD_ERRORS = 2.0
# The log loss's label-noise fit with three or more classes corrects the loss of every row by
# the estimated transition matrix (forward correction, Patrini et al. 2017) instead of leaving
# the flagged rows out, where at least this share of the estimated flips lands in one given
# class (flips that all go into one class: the flags then miss many, and the rows left keep a
# bias towards that class). benchmarks/bench_forward_correction.py, seeds 0-2, every eps: the
# share is 0.45-0.93 on digits' and Landsat's one-class flips and 0.13-0.27 on their random and
# pair flips; glass (6 classes, 214 rows) 0.21-0.42 for every attack. Two classes: the flips go
# into one of two classes anyway (random flips 0.50-0.69, one-class flips 0.52-1.0); correcting
# every row changed the one-class splits of breast cancer, heart and moons by +0.004 on
# average (27 splits of seeds 0-2, and of seeds 3-5) and the random ones by -0.024 / -0.037;
# a cut at 0.7 keeps the random flips out and gains +0.041 / +0.411 summed over 9 / 12 splits,
# but sits 0.01 above their largest share: not adopted, the flags stay. And only where the
# estimated flips are at least MIN_CORRECTED_FLIPS of the rows: digits with 10% of its rows
# moved to one class (estimated 0.08-0.11, share 0.77-0.93) lost 0.000-0.075 to it on six seeds, the
# flags alone doing well there; Landsat's clean rows (0.06-0.08, share 0.35-0.44) did not move.
# Both thresholds were read on seeds 0-2 (the second after seeds 3-5 had run): where both
# hold (glass's clean rows, digits' and Landsat's one-class flips of 20% and 30%, Landsat's of
# 10%), the correction changed test accuracy by +0.080 on average over 31 splits of seeds 0-5,
# 26 better and 3 worse by more than half a point.
ONE_SIDED_SHARE = 0.4
MIN_CORRECTED_FLIPS = 0.15


def _mean_and_standard_error(values: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """The weighted mean of ``values`` and its standard error, sqrt(variance / n_eff) with
    n_eff = (sum w)^2 / sum w^2 (the rows the weights amount to)."""
    total = weights.sum()
    mean = float(weights @ values / total)
    variance = float(weights @ (values - mean) ** 2 / total)
    effective = total**2 / float(weights @ weights)
    return mean, float(np.sqrt(variance / effective))


def tempered(F: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The class probabilities of logits F / T, T > 0 of least weighted log loss (temperature
    scaling, Guo et al. 2017): the probabilities of a sharp model of noisy labels, brought to
    the confidence its out-of-fold errors support."""

    def loss(log_temperature: float) -> float:
        P = class_probabilities(F / np.exp(log_temperature))
        given = np.maximum(P[np.arange(labels.size), labels], np.finfo(float).tiny)
        return float(-weights @ np.log(given))

    best = minimize_scalar(loss, bounds=(-5.0, 10.0), method="bounded")
    return class_probabilities(F / np.exp(best.x))


def chance_level(labels: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """The error of always predicting the most frequent class, 1 - max_j share_j, and
    ``ERROR_STANDARD_ERRORS`` binomial standard errors of it, sqrt(e (1 - e) / n_eff)
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
        ``ERROR_STANDARD_ERRORS`` standard errors of it.
    """
    shares = np.bincount(labels, weights=weights) / weights.sum()
    chance = 1.0 - float(shares.max())
    # the binomial variance e (1 - e) of the majority's 0/1 errors
    majority_wrong = labels != np.argmax(shares)
    return chance, ERROR_STANDARD_ERRORS * _mean_and_standard_error(majority_wrong, weights)[1]


def brier_gain(
    P: np.ndarray, labels: np.ndarray, weights: np.ndarray, fitted: int = 0
) -> tuple[float, float]:
    """How much out-of-fold probabilities lower the Brier score of the class shares alone:
    the weighted mean over rows of sum_j (share_j - [j = y_i])^2 - sum_j (p_ij - [j = y_i])^2,
    less ``fitted`` / n_eff for parameters fitted on these very rows (the hinge losses' Platt
    sigmoids, two a pair: without it random labels of 300 rows in 3 classes passed in 3 of 8
    fits), and ``CHANCE_STANDARD_ERRORS`` standard errors of it (n_eff = (sum w)^2 / sum w^2
    rows). The Brier score is bounded: a flipped label that the model confidently contradicts
    costs at most 2, where its log loss is unbounded (a sharp model of data with 20% of its
    labels flipped lost to the shares by log loss).

    Parameters
    ----------
    P : ndarray of shape (n_samples, n_classes)
        Out-of-fold class probabilities.
    labels : ndarray of int, shape (n_samples,)
        Given class indices.
    weights : ndarray of shape (n_samples,)
        Row weights.
    fitted : int, default=0
        Parameters of P fitted on these rows.

    Returns
    -------
    gain : float
        Per row (negative where the probabilities do worse than the shares).
    margin : float
        ``CHANCE_STANDARD_ERRORS`` standard errors of it.
    """
    total = weights.sum()
    one_hot = np.eye(P.shape[1])[labels]
    shares = np.bincount(labels, weights=weights, minlength=P.shape[1]) / total
    gains = np.sum((shares - one_hot) ** 2, axis=1) - np.sum((P - one_hot) ** 2, axis=1)
    mean, standard_error = _mean_and_standard_error(gains, weights)
    effective = total**2 / float(weights @ weights)
    return mean - fitted / effective, CHANCE_STANDARD_ERRORS * standard_error


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


def flip_shares(Q: np.ndarray) -> tuple[float, float]:
    """The estimated flips of the calibrated joint ``Q`` (given, true): their share of the
    rows (Q's off-diagonal weight) and the largest share of them in one given class (one row
    of Q; 0 without flips)."""
    flips = Q - np.diag(np.diag(Q))
    total = float(flips.sum())
    return total, float(flips.sum(axis=1).max()) / total if total > 0.0 else 0.0


def flips_into_one_class(Q: np.ndarray) -> bool:
    """Whether the estimated flips of the calibrated joint ``Q`` go mostly into one given
    class (:func:`flip_shares`): three or more classes, at least ``MIN_CORRECTED_FLIPS`` of
    the rows flipped and at least ``ONE_SIDED_SHARE`` of them into one class (the condition
    for forward correction)."""
    total, largest = flip_shares(Q)
    return Q.shape[0] >= 3 and total >= MIN_CORRECTED_FLIPS and largest >= ONE_SIDED_SHARE


def transition_matrix(Q: np.ndarray) -> np.ndarray:
    """T[i, j], the probability that a row of true class i is given label j, from the
    calibrated joint ``Q`` (given, true): Q's columns normalized, transposed. A true class no
    row is estimated in has no flips (T[i] = e_i).

    Parameters
    ----------
    Q : ndarray of shape (n_classes, n_classes)
        :func:`confident_joint`'s estimate of the joint share of (given i, true j).

    Returns
    -------
    T : ndarray of shape (n_classes, n_classes)
        Rows sum to 1.
    """
    totals = Q.sum(axis=0)
    T = np.eye(Q.shape[0])
    estimated = totals > 0
    T[estimated] = (Q[:, estimated] / totals[estimated]).T
    return T


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


def clearly_fewer_errors(
    wrong_candidate: np.ndarray, wrong_default: np.ndarray, weights: np.ndarray
) -> bool:
    """Whether a candidate's out-of-fold errors are below the default's on the same rows by
    more than ``LOSS_STANDARD_ERRORS`` standard errors of their (weighted) mean paired
    difference (n_eff = (sum w)^2 / sum w^2 rows).

    Parameters
    ----------
    wrong_candidate, wrong_default : ndarray of bool, shape (n_rows,)
        Whether each row's out-of-fold prediction under each model misses its given label.
    weights : ndarray of shape (n_rows,)
        Row weights.

    Returns
    -------
    bool
    """
    if not weights.size:
        return False
    difference = wrong_candidate.astype(float) - wrong_default
    mean, standard_error = _mean_and_standard_error(difference, weights)
    return mean < -LOSS_STANDARD_ERRORS * standard_error


def unpredictable(
    P: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray,
    fitted: int,
    out_of_fold_wrong: Callable[[], np.ndarray],
) -> str | None:
    """Why the labels look unpredictable, or None where the probabilities carry evidence.

    The labels are unpredictable where the out-of-fold probabilities ``P`` do not lower the
    Brier score of the class shares by ``CHANCE_STANDARD_ERRORS`` standard errors
    (:func:`brier_gain`) and the out-of-fold errors (``out_of_fold_wrong()``, computed only
    then) are not below the most frequent class's by ``ERROR_STANDARD_ERRORS`` standard errors
    (:func:`chance_level`).

    Parameters
    ----------
    P : ndarray of shape (n_samples, n_classes)
        Calibrated out-of-fold class probabilities.
    labels : ndarray of int, shape (n_samples,)
        Given class indices.
    weights : ndarray of shape (n_samples,)
        Row weights.
    fitted : int
        Parameters of P fitted on these rows.
    out_of_fold_wrong : callable
        Returns whether each row's out-of-fold prediction misses its given label.

    Returns
    -------
    reason : str or None
        The sentence a warning gives.
    """
    gain, margin = brier_gain(P, labels, weights, fitted)
    if gain > margin:
        return None
    chance, error_margin = chance_level(labels, weights)
    error = float(weights @ out_of_fold_wrong() / weights.sum())
    if error < chance - error_margin:
        return None
    return (
        f"the out-of-fold probabilities of the model lower the Brier score of the class shares "
        f"alone by {gain:.3f} a row, not by {CHANCE_STANDARD_ERRORS:g} standard errors "
        f"({margin:.3f}), and its out-of-fold error ({error:.3f}) is not below the most "
        f"frequent class's ({chance:.3f}) by {ERROR_STANDARD_ERRORS:g} standard errors "
        f"({error_margin:.3f}): the features carry no evidence about the labels that these "
        "rows can show, so no label is flagged as wrong (epsilon_ = 0)."
    )


def rounds_end(
    previous: np.ndarray | None, flagged: np.ndarray, weights: np.ndarray
) -> bool:
    """Whether the rounds of flags end before a round's ``flagged`` rows replace the
    ``previous`` round's (None in the first round, which ends where it flags nothing): where
    they repeat them, or flag more weight than they did while dropping some of them (a model
    fitted without the previous flags that contradicts other labels has grown sharper on the
    cleaner rows, not found more flips; see ``ROUNDS``). A round that flags more and keeps
    every earlier flag goes on: the model without them sees more of the same flips (separable
    classes, 10% of the labels flipped: the first round's flags are all right and the second
    finds the rest).

    Parameters
    ----------
    previous : ndarray of bool, shape (n_samples,) or None
        The rows the previous round flagged.
    flagged : ndarray of bool, shape (n_samples,)
        The rows this round flags.
    weights : ndarray of shape (n_samples,)
        Row weights.

    Returns
    -------
    end : bool
        True: keep the previous round's flags.
    """
    if previous is None:
        return not flagged.any()
    grew = weights @ flagged > weights @ previous
    return bool(np.array_equal(flagged, previous) or (grew and not flagged[previous].all()))


def flagged_rows(
    P: np.ndarray, labels: np.ndarray, weights: np.ndarray, floors: ClassFloors
) -> np.ndarray:
    """The rows one round of confident learning flags: :func:`label_issues`, less the rows a
    class needs to keep half of its rows (``floors``, the rows of largest probability of
    their label first), and at most ``MAX_EPSILON`` of the weight (beyond it, the rows of
    smallest probability of their label).

    Parameters
    ----------
    P : ndarray of shape (n_samples, n_classes)
        Out-of-fold class probabilities.
    labels : ndarray of int, shape (n_samples,)
        Given class indices.
    weights : ndarray of shape (n_samples,)
        Row weights.
    floors : ClassFloors
        The rows each class keeps at least.

    Returns
    -------
    flagged : ndarray of bool, shape (n_samples,)
    """
    n = labels.size
    given = P[np.arange(n), labels]
    flagged = floors.protect(np.ones(n, dtype=bool), label_issues(P, labels, weights), -given)
    if weights @ flagged > MAX_EPSILON * weights.sum():
        flagged = ~smallest(-given, n_kept(n, MAX_EPSILON))
    return flagged
