"""Out-of-fold outputs of the classifier: every row predicted by models that never saw it.

In-sample losses cannot tell a flipped label from a clean one once a flexible model (a sharp
kernel, a small alpha) has fitted it. Out of fold they can: the row is predicted by a model
fitted on the kept rows of the other folds. The folds are stratified by the given labels and
deterministic (the rows of each label dealt in turn), like scikit-learn's
``StratifiedKFold(shuffle=False)`` in ``LogisticRegressionCV``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from ..._kernel_model.losses import HingeLoss, Loss, class_indices, class_probabilities
from ..._kernel_model.pairwise import PairwisePlatt, n_classes_of, ovr_decision
from .._solve.objective import FeatureProblem, Problem
from .._solve.refits import classifier_fitter

FOLDS = 3
# L-BFGS tolerance on the mean loss of the fold fits. At 1e-4 (LogisticRegression's) the
# out-of-fold error counts depended on the optimizer's path: preconditioning the same fits
# changed the gamma chosen on 2 of 5 iris splits (20% wrong labels); at 1e-5 and 1e-6 the counts
# agree with and without it.
FOLD_TOL = 1e-5
# Inverse penalty of the calibration of scores by a multinomial regression (the hinge losses'
# flags, :func:`flag_probabilities`; :func:`regression_probabilities`): next to nothing, as a
# ridge that only keeps separable folds finite.
FLAG_CALIBRATION_C = 1e4


def stratified_folds(
    labels: np.ndarray, n_folds: int = FOLDS, seed: int | None = None
) -> np.ndarray:
    """Fold of every row: the rows of each label dealt in turn to folds 0, 1, ..., n_folds - 1
    (in row order, or in an order drawn from ``seed``)."""
    folds = np.empty(labels.size, dtype=int)
    rng = None if seed is None else np.random.default_rng(seed)
    for label in np.unique(labels):
        rows = np.flatnonzero(labels == label)
        turns = np.arange(rows.size) if rng is None else rng.permutation(rows.size)
        folds[rows] = turns % n_folds
    return folds


def out_of_fold_outputs(
    problem: Problem | FeatureProblem,
    kept: np.ndarray,
    alphas: Sequence[float],
    n_folds: int = FOLDS,
    seed: int | None = None,
) -> np.ndarray:
    """Outputs F (logits, or the hinge losses' outputs per pair of classes) of every row under
    the model fitted at each alpha on the kept rows of the other folds; shape (len(alphas),
    n_samples, n_outputs).

    Per fold the alphas run from the largest down, each fit warm-started at the previous one.
    A fold whose other folds keep no row predicts 0 (no evidence). The problem's own alpha and
    radius are not used. ``seed``: the folds dealt in an order drawn from it
    (:func:`stratified_folds`).
    """
    Y = problem.Y
    folds = stratified_folds(class_indices(Y), n_folds, seed)
    outputs = np.zeros((len(alphas), Y.shape[0], problem.n_outputs))
    for fold in range(n_folds):
        held_out = np.flatnonzero(folds == fold)
        fitted_rows = np.flatnonzero(kept & (folds != fold))
        if fitted_rows.size == 0:
            continue
        fitter = classifier_fitter(problem.restricted(fitted_rows), tol=FOLD_TOL)
        every_row = np.ones(fitted_rows.size, dtype=bool)
        w = np.zeros((fitter.problem.n_coefficients, problem.n_outputs))
        b = np.zeros(problem.n_outputs)
        for position in np.argsort(alphas)[::-1]:
            w, b = fitter.fit(every_row, w, b, alphas[position])
            outputs[position, held_out] = problem.predict_rows(held_out, fitted_rows, w) + b
    return outputs


def fold_probabilities(
    loss: Loss, outputs: np.ndarray, labels: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, PairwisePlatt | None]:
    """Class probabilities (n_samples, K) of out-of-fold outputs, and their calibration: the
    sigmoid or softmax of logits (None), or for the hinge losses Platt's sigmoid of every pair
    fitted on these outputs of the rows of positive ``weights``, the pairs coupled
    (:class:`.._kernel_model.pairwise.PairwisePlatt`)."""
    if not isinstance(loss, HingeLoss):
        return class_probabilities(outputs), None
    calibration = PairwisePlatt.fit(outputs, labels, weights)
    return calibration.probabilities(outputs), calibration


def flag_probabilities(
    loss: Loss, outputs: np.ndarray, labels: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """Class probabilities (n_samples, K) of out-of-fold outputs, read by the label-noise flags:
    the sigmoid or softmax of logits; for the hinge losses a multinomial logistic regression of
    the given labels on the per-class votes of the pairs' outputs (:func:`ovr_decision`; two
    classes: on the one output, Platt's sigmoid without his smoothed targets), fitted on the
    rows of positive ``weights`` with a nearly vanishing penalty (C = ``FLAG_CALIBRATION_C``).

    Unlike Platt's sigmoid per pair, coupled, the regression weighs every class's votes for
    every class: where the flips into one class come from all the others, that class's votes
    are learned to be worth less. bench_robust.py --task classification (51 cells x 3 seeds),
    loss="hinge", cells best or within 2 points against SVC + GridSearchCV and the two
    cleanlab rows: 28 with the coupled sigmoids, 32 with this (Landsat, 20% of the rows moved
    to the smallest class: 0.755 -> 0.815 test accuracy). The log loss's logits through the
    same regression: 28 cells against 33 with their softmax, so logits keep the softmax.
    """
    if not isinstance(loss, HingeLoss):
        return class_probabilities(outputs)
    n_classes = n_classes_of(outputs.shape[1])
    Z = outputs if n_classes == 2 else ovr_decision(outputs)
    return regression_probabilities(Z, labels, weights, n_classes)


def regression_probabilities(
    Z: np.ndarray, labels: np.ndarray, weights: np.ndarray, n_classes: int
) -> np.ndarray:
    """Class probabilities (n_samples, ``n_classes``) of a multinomial logistic regression of
    the given labels on out-of-fold scores ``Z`` (n_samples, n_scores), fitted on the rows of
    positive ``weights`` with a nearly vanishing penalty (C = ``FLAG_CALIBRATION_C``); a class
    absent from those rows gets probability 0.

    Where the regression stops at its iteration limit (scores that separate the classes
    almost perfectly, which only the penalty bounds), its probabilities are used as they
    are, without scikit-learn's warning: that warning advises scaling the user's data, and
    these scores are not the user's data (it was shown on fits of bench_robust.py's 600
    digits with the hinge loss).
    """
    P = np.zeros((labels.size, n_classes))
    rows = weights > 0
    present = np.unique(labels[rows])
    if present.size < 2:  # nothing to regress on: the one class present
        P[:, present] = 1.0
        return P
    # scikit-learn's tolerance: at 1e-8 the hinge's fits took three times as long (median 10.3
    # against 3.5 s on bench_robust.py's cells) and kept no more cells within 2 points (30
    # against 32)
    regression = LogisticRegression(C=FLAG_CALIBRATION_C, max_iter=2000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        regression.fit(Z[rows], labels[rows], sample_weight=weights[rows])
    P[:, regression.classes_] = regression.predict_proba(Z)
    return P
