"""epsilon="auto": estimate the contaminated fraction by the reweighting step of LTS.

The regressor starts from a generous trim (``REGRESSION_START``). Under the current fit, flag
the rows whose loss is implausible for a clean row; refit keeping the others (epsilon = the
flagged fraction); repeat until the flagged set is a fixed point or moves by at most
``SETTLED_FRACTION`` of the rows. ``epsilon_`` is the fraction finally trimmed. (The classifier's
epsilon="auto" is confident learning, :mod:`robustkernel.trimming.label_flags`; its rule below
serves refine="reject" at a given epsilon.)

Regression (Rousseeuw & Leroy's reweighted least trimmed squares): the clean residuals are taken as
N(0, sigma^2) per output, and every residual is studentized before it is compared with the scale. A
kept row's squared residual is divided by 1 - h_ii (h its leverage in the kernel ridge fit on the
kept rows, or in the ridge fit on the features with ``n_components``); a trimmed row's out-of-sample
squared residual is multiplied by 1 - h_jj, its leverage had it been kept. Both then have variance
sigma^2 under the model, so rows far from the kept ones (high leverage, or out-of-sample) are not
flagged merely for being hard to predict. Kept rows with near-duplicates (``groups``) are
judged by the fit without their whole group: a tight cluster of rows sharing a wrong target
predicts each of its members, and row-by-row leave-one-out would call it clean (generated data,
20% of the rows copied onto one point with the target + 5: the cluster was kept and 30 clean rows
trimmed; with groups it is flagged, test RMSE 3.2x -> 0.97x the oracle's). Each refit starts from
the fit without the flagged rows. The scale comes from the median studentized loss of the
kept rows, corrected for their truncation: the kept fraction q holds the losses below the q-quantile
of sigma^2 chi^2_C, so their median is sigma^2 times the q/2-quantile of chi^2_C (a median, not a
mean, because kept rows may still hold outliers). A row is flagged when its studentized loss exceeds
sigma^2 times the ``REGRESSION_LEVEL`` quantile of chi^2_C (for one output: |residual| > 3 sigma,
the three-sigma rule; at 2.5 sigma, clusters of clean rows at the edge of the data were trimmed
together and kept each other out).

The rule reads every residual beyond the cutoff as contamination, so it needs the fit's bias to
be small next to the noise. A ridge penalty far too strong for the noise level (e.g. alpha = 1 on
the Subquantile papers' cubic polynomial problem, noise sd 0.1 on a target of sd ~10) leaves a
systematic misfit at the edges of the data, and clean edge rows are flagged (epsilon_ 0.14 at
eps = 0); with alpha = 0.01 the same problem gives epsilon_ = eps exactly for eps in {0, 0.1, 0.3}.

Classification (refine="reject"; epsilon="auto" used the same rule before confident learning):
a row is flagged when its observed label gets a probability below
``CLASSIFICATION_PROBABILITY`` (0.2; loss above log 5) out of fold, from the model fitted on the
kept rows of the other folds (``folds``), as confident learning does. In-sample probabilities
failed once alpha and gamma were chosen: a fit at alpha = 0.01 explains the flipped rows it kept,
and on 600 digits with 20% of the labels all flipped to one class epsilon_ came out 0.03 and
the fit kept 96 of the 96 flips (out of fold: 0.200). A flipped label deep inside the other
class gets a probability near 0 and is flagged; near the decision boundary a flipped label is
indistinguishable from a clean one (probability near 1/2) and is kept, so for label flips the
estimate counts the detectable flips and falls short of the truth when many flips sit near the
boundary (measured on a two-class problem with a curved boundary, 200 rows: within 0.07 of the
truth for eps up to 0.2, 0.1 short at eps = 0.3; a cutoff of 1/2 flagged the clean boundary
rows as well and degraded the fit, a cutoff of 0.1 missed a third of the flips at eps = 0.3).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy.linalg import cho_factor, cho_solve, cholesky, solve_triangular
from scipy.linalg.lapack import dpotri

from ..._kernel_model.losses import LinkSquaredLoss, class_indices
from ..._memory import row_chunks
from ...trimming import REGRESSION_LEVEL, REGRESSION_START, REJECTION_LEVEL, beyond_scale
from .._solve.objective import Evaluation, FeatureProblem, Problem
from .folds import fold_probabilities, out_of_fold_outputs
from .groups import deletable_groups

CLASSIFICATION_PROBABILITY = 0.2


def regression_start(Y: np.ndarray) -> float:
    """Initial trimmed fraction for regression targets ``Y`` (n, C)."""
    return REGRESSION_START


def regression_flags(
    problem: Problem | FeatureProblem, evaluation: Evaluation, level: float = REGRESSION_LEVEL
) -> np.ndarray:
    """Rows whose studentized squared residual is beyond the chi^2 ``level`` quantile of the
    robust scale."""
    losses = studentized_losses(problem, evaluation)
    return beyond_scale(losses, evaluation.mask, problem.n_outputs, level)


def studentized_losses(problem: Problem | FeatureProblem, evaluation: Evaluation) -> np.ndarray:
    """Squared residuals of the fit on the kept rows, each scaled to variance sigma^2 under the
    model: leave-one-out (near-duplicates: leave-group-out) for the kept rows, out-of-sample
    for the others. A row of leverage 1 (e.g. the only row, or one row per intercept and
    coefficient) has a residual of 0 whatever its target: no evidence either way, score 0."""
    if isinstance(problem.loss, LinkSquaredLoss):
        return link_honest_losses(problem, evaluation.mask)
    with np.errstate(divide="ignore", invalid="ignore"):
        if isinstance(problem, FeatureProblem):
            factors = _feature_residual_variance_factors(problem, evaluation.mask)
            losses = evaluation.losses * factors
        else:
            losses = _kernel_studentized_losses(problem, evaluation)
        return np.where(np.isfinite(losses), losses, 0.0)


def link_honest_losses(problem: Problem | FeatureProblem, kept: np.ndarray) -> np.ndarray:
    """Squared residuals (omega(f) - y)^2 of a link model, out of fold: each row predicted by
    the model at the problem's alpha fitted on the ``kept`` rows of the other folds (no
    leverage formula exists through a nonlinear link)."""
    outputs = out_of_fold_outputs(problem, kept, [problem.alpha])[0]
    return problem.loss.loss(outputs, problem.Y)


def regression_honest_losses(
    problem: Problem | FeatureProblem, evaluation: Evaluation
) -> np.ndarray:
    """:func:`studentized_losses` of the fit on every row: what the automatic configuration's
    trimmed fits start from (the rows of smallest honest loss).

    In-sample losses of the ordinary fit rank a tight cluster of rows sharing a wrong target
    among the best explained (it pulls the fit to itself, and the clean rows around it look
    wrong); deleted together it is predicted by the rest of the data and ranks last.
    """
    every_row = replace(evaluation, mask=np.ones(problem.n_samples, dtype=bool))
    return studentized_losses(problem, every_row)


def regression_rejections(problem: Problem | FeatureProblem, evaluation: Evaluation) -> np.ndarray:
    """Rows beyond ``REJECTION_LEVEL`` (five sigma): what ``refine="reject"`` drops."""
    return regression_flags(problem, evaluation, REJECTION_LEVEL)


def _kernel_studentized_losses(problem: Problem, evaluation: Evaluation) -> np.ndarray:
    """Squared residuals scaled to variance sigma^2 under the model (kernel ridge on the kept
    rows S at the problem's alpha).

    Kernel ridge on S has residuals r = alpha M y with A = K_SS + alpha I and M = A^-1 minus
    the intercept's rank-one term, so a kept row's leverage is h_ii = 1 - alpha M_ii and
    r_i^2 / (1 - h_ii) has variance sigma^2. A kept row with near-duplicates in S
    (``groups``) is scored by the residual of the fit without its whole group, e_G =
    (alpha M_GG)^-1 r_G, divided by the diagonal of (alpha M_GG)^-1 (for a group of one,
    r_i^2 / (1 - h_ii) again): a cluster of rows sharing a wrong target no longer explains
    itself (a group of every kept row, with an intercept, leaves nothing to fit and keeps the
    one-row scores: ``_groups.deletable_groups``). A trimmed row j is scored as if it were
    added to S: its residual is then the leave-one-out residual of the augmented fit,
    r_j^2 (1 - h_jj) has variance sigma^2, and 1 - h_jj = alpha M_aug,jj follows from the
    block inverse of A_aug (Schur complement s_j = k_jj + alpha - k_Sj^T A^-1 k_Sj).
    """
    mask, alpha, K = evaluation.mask, problem.alpha, problem.K
    kept = np.flatnonzero(mask)
    A = K[np.ix_(mask, mask)]
    groups = deletable_groups(A, problem.fit_intercept)
    A[np.diag_indices_from(A)] += alpha
    factor = cho_factor(A, lower=True, overwrite_a=True)
    added = added_row_factors(K, mask, factor, alpha, problem.fit_intercept)
    intercept_term = np.zeros(kept.size)  # M = A^-1 - intercept_term intercept_term^T
    if problem.fit_intercept:
        u = cho_solve(factor, np.ones(kept.size))
        intercept_term = u / np.sqrt(u.sum())
    # A^-1 in place of its Cholesky factor (its lower triangle), without an n x n identity.
    inverse, info = dpotri(factor[0], lower=True, overwrite_c=True)
    if info != 0:
        raise np.linalg.LinAlgError("K_SS + alpha I is not positive definite")
    diagonal = np.diag(inverse) - intercept_term**2
    losses = np.empty(problem.n_samples)
    losses[mask] = evaluation.losses[mask] / (alpha * diagonal)
    losses[~mask] = evaluation.losses[~mask] * added
    residuals = (problem.Y - evaluation.F)[mask]
    for group in groups:
        block = np.tril(inverse[np.ix_(group, group)])
        term = intercept_term[group]
        block = block + np.tril(block, -1).T - np.outer(term, term)
        deleted_inverse = np.linalg.inv(alpha * block)
        deleted = deleted_inverse @ residuals[group]
        losses[kept[group]] = np.sum(deleted**2, axis=1) / np.diag(deleted_inverse)
    return losses


def added_row_factors(
    K: np.ndarray,
    kept: np.ndarray,
    factor: tuple[np.ndarray, bool],
    alpha: float,
    fit_intercept: bool,
) -> np.ndarray:
    """1 - h_jj for every row j outside the kernel ridge fit on the ``kept`` rows (``factor``:
    the Cholesky factor of K_SS + alpha I), its leverage had it been added: alpha times the
    diagonal of the augmented inverse, 1 / s_j with the Schur complement s_j = k_jj + alpha -
    k_Sj^T A^-1 k_Sj, less the intercept's rank-one term. r_j^2 (1 - h_jj) then has variance
    sigma^2 under the model."""
    B = K[np.ix_(kept, ~kept)]
    G = cho_solve(factor, B, check_finite=False)
    schur = np.diag(K)[~kept] + alpha - np.sum(B * G, axis=0)
    del G
    diagonal = 1.0 / schur
    if fit_intercept:
        u = cho_solve(factor, np.ones(B.shape[0]), check_finite=False)
        v = (1.0 - B.T @ u) / schur
        # v^2 / (sum(u) + v^2 schur), as 1 / (sum(u) / v^2 + schur): v^2 may overflow (rows of
        # 1e-76 under a linear kernel), and the limit is then 1 / schur
        with np.errstate(over="ignore", divide="ignore"):
            squared = v * v
            intercept_term = np.where(squared > 0, 1.0 / (u.sum() / squared + schur), 0.0)
        diagonal = diagonal - intercept_term
    return alpha * diagonal


def _feature_residual_variance_factors(problem: FeatureProblem, mask: np.ndarray) -> np.ndarray:
    """1 - h_ii for the feature model f = Z theta + b, in O(n m^2) without an n x n matrix.

    Ridge on the kept rows S with design x_i = (1, z_i) (z_i alone without intercept) and
    penalty alpha on theta only has A = X_S^T X_S + diag(0, alpha I): a kept row's leverage is
    h_ii = q_i = x_i^T A^-1 x_i; a trimmed row j added to S has leverage q_j / (1 + q_j)
    (Sherman-Morrison), so 1 - h_jj = 1 / (1 + q_j). The same quantities as the kernel version
    for K = Z Z^T.
    """
    Z = problem.Z
    n, m = Z.shape
    columns = m + int(problem.fit_intercept)

    def design(rows: slice | np.ndarray) -> np.ndarray:
        block = np.asarray(Z[rows], dtype=float)
        if problem.fit_intercept:
            block = np.hstack([np.ones((block.shape[0], 1)), block])
        return block

    A = np.diag(np.full(columns, problem.alpha))
    if problem.fit_intercept:
        A[0, 0] = 0.0
    for rows in row_chunks(n, columns):
        block = design(rows)[mask[rows]]
        A += block.T @ block
    # q_i = ||L^-1 x_i||^2 (A = L L^T): one matrix product per chunk with the inverse factor
    inverse_factor = solve_triangular(cholesky(A, lower=True), np.eye(columns), lower=True)
    q = np.empty(n)
    for rows in row_chunks(n, columns):
        q[rows] = np.sum(np.square(design(rows) @ inverse_factor.T), axis=1)
    return np.where(mask, 1.0 / (1.0 - q), 1.0 / (1.0 + q))


def classification_flags(problem: Problem | FeatureProblem, evaluation: Evaluation) -> np.ndarray:
    """Rows whose observed label gets probability below ``CLASSIFICATION_PROBABILITY`` out of
    fold: from the model at the problem's alpha fitted on the kept rows of the other folds."""
    outputs = out_of_fold_outputs(problem, evaluation.mask, [problem.alpha])[0]
    labels = class_indices(problem.Y)
    P = fold_probabilities(problem.loss, outputs, labels, evaluation.mask.astype(float))[0]
    return P[np.arange(labels.size), labels] < CLASSIFICATION_PROBABILITY
