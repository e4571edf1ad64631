"""epsilon="auto": estimate the contaminated fraction by the reweighting step of LTS.

Start from a generous trim (``START``). Under the current fit, flag the rows whose loss is
implausible for a clean row; refit keeping the others (epsilon = the flagged fraction); repeat
until the flagged set is a fixed point. ``epsilon_`` is the fraction finally trimmed.

Regression (Rousseeuw & Leroy's reweighted least trimmed squares): the clean residuals are taken
as N(0, sigma^2) per output. A trimmed row's residual is already out of sample; a kept row's
in-sample residual is replaced by its leave-one-out residual (closed form for kernel ridge on the
kept rows), so that the kernel fit's in-sample shrinkage does not make clean trimmed rows look
like outliers. The scale comes from the median loss of the kept rows, corrected for their
truncation: the kept fraction q holds the losses below the q-quantile of sigma^2 chi^2_C, so
their median is sigma^2 times the q/2-quantile of chi^2_C (a median, not a mean, because at a
weak ridge the kept rows may still hold outliers whose leave-one-out residual is large). A row
is flagged when its loss exceeds sigma^2 times the ``REGRESSION_LEVEL`` quantile of chi^2_C
(for one output: |residual| > 2.5 sigma).

Classification: a row is flagged when the fit gives its observed label a probability below 1/2
(loss above log 2): for two classes, the rows the robust fit misclassifies.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.stats import chi2

from ._problem import Evaluation, Problem

START = 0.4
MAX_EPSILON = 0.49
MAX_ROUNDS = 20
REGRESSION_LEVEL = chi2.cdf(2.5**2, df=1)  # 0.98758...: |r| > 2.5 sigma for one output


def regression_flags(problem: Problem, evaluation: Evaluation) -> np.ndarray:
    """Rows whose squared residual is beyond the chi^2 cutoff of the truncation-corrected scale."""
    mask = evaluation.mask
    losses = evaluation.losses.copy()
    losses[mask] = _leave_one_out_losses(problem, evaluation)
    C = problem.n_outputs
    variance = np.median(losses[mask]) / chi2.ppf(mask.mean() / 2.0, df=C)
    return losses > variance * chi2.ppf(REGRESSION_LEVEL, df=C)


def _leave_one_out_losses(problem: Problem, evaluation: Evaluation) -> np.ndarray:
    """Squared leave-one-out residuals of kernel ridge on the kept rows.

    With A = K_SS + alpha I the residuals are r = alpha M y, M = A^-1 (minus the intercept's
    rank-one term), and the leave-one-out residual is r_i / (alpha M_ii).
    """
    mask = evaluation.mask
    factor = cho_factor(problem.K[np.ix_(mask, mask)] + problem.alpha * np.eye(mask.sum()))
    inverse_diagonal = np.diag(cho_solve(factor, np.eye(mask.sum())))
    if problem.fit_intercept:
        inverse_ones = cho_solve(factor, np.ones(mask.sum()))
        inverse_diagonal = inverse_diagonal - inverse_ones**2 / inverse_ones.sum()
    residuals = (evaluation.F - problem.Y)[mask] / (problem.alpha * inverse_diagonal)[:, None]
    return np.sum(residuals**2, axis=1)


def classification_flags(problem: Problem, evaluation: Evaluation) -> np.ndarray:
    """Rows whose observed label gets probability below 1/2 under the fit."""
    return evaluation.losses > np.log(2.0)
