"""The label-noise route of the in-memory fit (a classifier with epsilon="auto"): out-of-fold
choice of alpha and gamma, confident learning's flags in rounds
(:mod:`robustkernel.trimming.label_flags`, :func:`robustkernel.trimming.flag_rounds`), the
model on the unflagged rows or, where the flips go into one class, the forward-corrected log
loss on every row; with loss="auto" the hinge and log losses compared out of fold."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from functools import partial

import numpy as np
from sklearn.base import TransformerMixin

from ..._fractions import trimmed_fraction
from ..._kernel_model.losses import (
    ForwardCorrectedLoss,
    HingeLoss,
    class_indices,
    class_probabilities,
)
from ...trimming import ClassFloors, flag_rounds, label_flags
from .._automatic.folds import flag_probabilities, fold_probabilities, out_of_fold_outputs
from .._solve.objective import FeatureProblem, Problem
from .core import InMemoryFit
from .stage import Candidates, Stage


@dataclass(frozen=True)
class OutOfFoldChoice:
    """The classifier's (gamma, alpha) of least out-of-fold error, its out-of-fold outputs
    (n, n_outputs), the errors of every pair (n_gammas, n_alphas) and the problem at that
    gamma, so that the rounds refit its folds without building its kernel matrix again."""

    error: float
    alpha: float
    gamma: float | None
    outputs: np.ndarray
    scores: np.ndarray
    problem: Problem | FeatureProblem  # at the chosen gamma (its alpha: the grid's first)


def label_noise_stage(fit: InMemoryFit, candidates: Candidates) -> Stage:
    """The label-noise route (:func:`_fit_label_noise`) with the given loss; with
    loss="auto" (and alpha and gamma "auto": a given alpha is a penalty of the log loss,
    which then fits), with the hinge loss (its square with features) and with the log loss.
    Two classes: the hinge loss's fit is returned only where its out-of-fold error on the
    rows both keep is below the log loss's by more than ``LOSS_STANDARD_ERRORS`` standard
    errors (:func:`.label_flags.clearly_fewer_errors`); three or more: the log loss's
    where its flips go into one class (its forward-corrected fit: the hinge has no
    correction) or where its error is so much below the hinge loss's."""
    settings = fit.settings
    automatic = all(settings.is_auto(name) for name in ("alpha", "gamma"))
    if settings.params.get("loss") != "auto" or not automatic:
        return _fit_label_noise(fit, candidates)
    # the hinge by libsvm on the kernel matrix; on features its square by L-BFGS (libsvm's
    # linear kernel costs O(n^2) per pair, liblinear's hinge did not converge)
    name = "hinge" if settings.n_components is None else "squared_hinge"
    hinge_fit = fit.replaced(target=replace(fit.target, loss=HingeLoss.named(name)))
    hinge = _fit_label_noise(hinge_fit, hinge_fit.candidates())
    if hinge.fold_outputs is None:  # no evidence about the labels: nothing to compare
        return hinge
    log = _fit_label_noise(fit, candidates, warn=False)
    if log.fold_outputs is None:  # the log loss finds no evidence where the hinge did
        return hinge
    if log.transition is not None:  # flips into one class: the corrected log loss
        return log
    labels = class_indices(fit.Y)
    both = hinge.kept & log.kept
    # the side kept unless the other is clearly better: the hinge for three or more classes
    default, other = (hinge, log) if labels.max() >= 2 else (log, hinge)
    wrong = [
        stage.problem.loss.predicted_classes(stage.fold_outputs)[both] != labels[both]
        for stage in (other, default)
    ]
    weights = np.ones(int(both.sum())) if fit.sample_weight is None else (
        fit.sample_weight[both]
    )
    return other if label_flags.clearly_fewer_errors(*wrong, weights) else default


def _fit_label_noise(fit: InMemoryFit, candidates: Candidates, warn: bool = True) -> Stage:
    """Classifier, epsilon, alpha and gamma "auto": confident learning, then the model.

    1. Every (gamma, alpha) is scored by its out-of-fold error against the given labels
       (:func:`_out_of_fold_choice`), its fold models fitted on every row of the other
       folds.
    2. The best pair's out-of-fold probabilities flag the rows whose label the data
       contradict (:func:`.label_flags.label_issues`; each class keeps at least half of
       its rows, and at most ``MAX_EPSILON`` of the rows are flagged).
    3. The pair's fold models are fitted again without the flagged rows, and their
       out-of-fold probabilities flag again; until the flags repeat or a round flags
       more than the one before and drops some of its flags
       (:func:`.label_flags.rounds_end`; the previous round's
       flags stay), at most ``label_flags.ROUNDS`` times (a model fitted on cleaner rows
       contradicts the flipped labels more clearly).
    4. alpha and gamma are chosen again with the flagged rows out of the fold fits and of
       the score, and the model is fitted once on the unflagged rows;
    5. where the loss is the log loss, there are three or more classes and the flips
       that the out-of-fold probabilities of step 4 estimate go mostly into one class
       (:func:`.label_flags.flips_into_one_class`), the model of the true classes is
       instead fitted on every row by the log loss corrected with their transition
       matrix (:func:`_forward_corrected`; the flagged rows stay flagged).

    The hinge losses' flags read a multinomial regression on the pairs' out-of-fold votes
    (:func:`.folds.flag_probabilities`); the no-signal guard and ``predict_proba`` read
    Platt's sigmoids of the pairs' outputs, coupled (:func:`.folds.fold_probabilities`,
    those of the final choice). Where the labels are unpredictable nothing is flagged, with
    a warning (``warn``), and the stage has no ``fold_outputs``.
    """
    n = fit.X.shape[0]
    labels = class_indices(fit.Y)
    weights = np.ones(n)
    if fit.sample_weight is not None:  # relative weights: the same choices at any scale
        weights = fit.sample_weight / fit.sample_weight.max()
    floors = ClassFloors.half_of_each_class(fit.Y, fit.sample_weight)
    every_row = np.ones(n, dtype=bool)
    first = _out_of_fold_choice(fit, candidates, every_row, labels, weights)
    # calibrated probabilities: Platt's (hinge losses) or the logits' temperature
    P, calibration = fold_probabilities(fit.target.loss, first.outputs, labels, weights)
    if calibration is None:
        P = label_flags.tempered(first.outputs, labels, weights)
    fitted = 1 if calibration is None else 2 * calibration.A.size
    reason = label_flags.unpredictable(
        P, labels, weights, fitted, partial(_fresh_fold_errors, fit, first, labels)
    )
    at_chance = reason is not None
    if at_chance and warn:
        warnings.warn(f"{fit.settings.estimator}: {reason}", UserWarning, stacklevel=2)
    flags = partial(_choice_flags, fit, first, labels, weights, floors)
    kept = flag_rounds(
        flags,
        lambda flagged, _: (~flagged, None),
        (every_row, first.outputs),
        0 if at_chance else label_flags.ROUNDS,
        first=~every_row,
        settled=lambda previous, flagged: label_flags.rounds_end(previous, flagged, weights),
    ).state[0]
    del first, flags  # its problem, before the second choice builds every gamma's
    best = _out_of_fold_choice(fit, candidates, kept, labels, weights)
    epsilon = trimmed_fraction(kept * weights, weights)
    problem, feature_map = fit.build_problem(best.alpha, best.gamma, epsilon)
    transition = None if at_chance else _one_class_flips(fit, best.outputs, labels, weights)
    if transition is None:
        stage = fit.refit_on_rows(
            problem, feature_map, kept, best.alpha, best.gamma, refine=False
        )
    else:
        stage = _forward_corrected(fit, problem, feature_map, kept, best, transition)
    calibration = fold_probabilities(fit.target.loss, best.outputs, labels, weights * kept)[1]
    return replace(
        stage,
        scores=best.scores if best.scores.size > 1 else None,
        calibration=calibration,
        fold_outputs=None if at_chance else best.outputs,
    )


def _choice_flags(
    fit: InMemoryFit,
    choice: OutOfFoldChoice,
    labels: np.ndarray,
    weights: np.ndarray,
    floors: ClassFloors,
    state: tuple[np.ndarray, np.ndarray | None],
) -> np.ndarray:
    """One round of flags (:func:`.label_flags.flagged_rows`) from the out-of-fold outputs
    of ``choice``'s pair on the rows ``state`` keeps (the first round: the choice's own
    outputs, ``state[1]``)."""
    kept, outputs = state
    if outputs is None:
        outputs = out_of_fold_outputs(choice.problem, kept, [choice.alpha])[0]
    P = flag_probabilities(fit.target.loss, outputs, labels, weights * kept)
    return label_flags.flagged_rows(P, labels, weights, floors)


def _one_class_flips(
    fit: InMemoryFit, outputs: np.ndarray, labels: np.ndarray, weights: np.ndarray
) -> np.ndarray | None:
    """The transition matrix T[true, given] of the calibrated confident joint of the
    out-of-fold ``outputs`` on every row, where the log loss is fitted and the estimated
    flips go mostly into one class (:func:`.label_flags.flips_into_one_class`); else
    None."""
    if isinstance(fit.target.loss, HingeLoss):
        return None
    Q = label_flags.confident_joint(class_probabilities(outputs), labels, weights)
    if not label_flags.flips_into_one_class(Q):
        return None
    return label_flags.transition_matrix(Q)


def _forward_corrected(
    fit: InMemoryFit,
    problem: Problem | FeatureProblem,
    feature_map: TransformerMixin | None,
    kept: np.ndarray,
    best: OutOfFoldChoice,
    transition: np.ndarray,
) -> Stage:
    """The model of the true classes fitted on every row by the forward-corrected log loss
    (:class:`ForwardCorrectedLoss` with ``transition``), at the choice ``best``: the
    flagged rows stay flagged (``kept`` is the stage's mask, the plain log loss of the
    given labels its losses), every row has its weight in the fit; the objective is the
    corrected one of every row."""
    every_row = np.ones(kept.size, dtype=bool)
    corrected = replace(problem, loss=ForwardCorrectedLoss(transition=transition))
    fitted = fit.refit_on_rows(
        corrected, feature_map, every_row, best.alpha, best.gamma, refine=False
    )
    result = fitted.result
    evaluation = problem.evaluate(result.w, result.b)
    evaluation = replace(
        evaluation,
        mask=kept,
        threshold=float(evaluation.losses[kept].max()),
        objective=result.evaluation.objective,
        # every row is in the fit: weight 1 (or its sample weight)
        weights=result.evaluation.fit_rows.astype(float),
    )
    return replace(
        fitted,
        problem=problem,
        result=replace(result, evaluation=evaluation),
        epsilon=trimmed_fraction(kept),
        transition=transition,
    )


def _fresh_fold_errors(fit: InMemoryFit, choice: OutOfFoldChoice, labels: np.ndarray) -> np.ndarray:
    """Whether each row's out-of-fold prediction at ``choice``'s (gamma, alpha) misses its
    label, on folds dealt in an order drawn from ``FRESH_FOLDS_SEED``: the least error of
    the grid is biased low."""
    every_row = np.ones(labels.size, dtype=bool)
    fresh = out_of_fold_outputs(
        choice.problem, every_row, [choice.alpha], seed=label_flags.FRESH_FOLDS_SEED
    )[0]
    return fit.target.loss.predicted_classes(fresh) != labels


def _out_of_fold_choice(
    fit: InMemoryFit,
    candidates: Candidates,
    kept: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray,
) -> OutOfFoldChoice:
    """The (gamma, alpha) of least out-of-fold error against the given labels (weighted
    share of the rows), the fold models fitted on the rows ``kept`` of the other folds.
    Only the rows ``kept`` count in the error: the others' given labels are thought
    wrong."""
    alphas, gammas = candidates
    scores = np.empty((len(gammas), len(alphas)))
    outputs, held = [], None
    for row, gamma in enumerate(gammas):
        problem = fit.build_problem(alphas[0], gamma, 0.0)[0]
        outputs.append(out_of_fold_outputs(problem, kept, alphas))
        predicted = np.array([fit.target.loss.predicted_classes(F) for F in outputs[-1]])
        wrong = (predicted != labels) & kept
        scores[row] = wrong @ weights / (weights @ kept)
        if held is None or scores[row].min() < scores[:row].min():
            held = problem  # at most two problems alive: the best so far and this one
        del problem
    # among equal errors the first in the grids' order: the smallest gamma (the smoothest
    # kernel), then the smallest alpha. Preferring the smallest alpha over every gamma
    # instead took breast cancer with 30% of one class's labels flipped from 0.851 to
    # 0.623 test accuracy (bench_robust.py, median of 3 seeds).
    row, column = np.unravel_index(int(np.argmin(scores)), scores.shape)
    return OutOfFoldChoice(
        float(scores[row, column]),
        alphas[column],
        gammas[row],
        outputs[row][column],
        scores,
        held,
    )
