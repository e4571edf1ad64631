"""The high-breakdown start of the automatic regression fit: kernel least trimmed squares.

A fit started from every row cannot see a group of outliers that mask one another: each one's
leave-one-out residual is small while its neighbours stay in, and hyper-parameters chosen with
the group inside bend the function to explain it. Robust statistics starts instead from a fit
with a breakdown point near 50% and then wins back efficiency by reweighting (Rousseeuw & Van
Driessen, "Computing LTS regression for large data sets", Data Min. Knowl. Disc. 12, 2006;
Gervini & Yohai, "A class of robust and fully efficient regression estimators", Ann. Statist.
30(2), 2002). This module does both for kernel ridge regression:

* :func:`kernel_lts` -- least trimmed squares with a kernel: the h of n rows (h about n / 2)
  whose kernel ridge fit predicts them best *out of sample*. Many cheap starts (random
  elemental subsets, plus deterministic starts so that the result does not hang on the draw:
  the rows nearest the centre of X, the rows nearest the median target, the best-predicted
  rows of the fit on every row), each followed by a few concentration steps (C-steps: fit the
  kept rows, keep the h rows of smallest honest residual) on a nested subsample of at most
  ``SUBSAMPLE_ROWS`` rows; the ``N_BEST`` best then concentrate on every row until the kept
  set repeats. Residuals are honest -- leave-one-out for the kept rows (leave-group-out for
  near-duplicates, :mod:`.groups`), out of sample for the others -- because in-sample losses
  prefer a kernel that interpolates any half. Starts are compared by the mean leave-one-out
  squared residual of their h kept rows.
* :func:`adaptive_flags` -- Gervini and Yohai's adaptive cutoff: the standardized residuals'
  tail is compared with that of the normal (chi^2 with one degree of freedom per output for the
  squared residuals) beyond ``CUTOFF_START``, and only the excess is flagged. Under Gaussian
  errors the flagged fraction tends to 0 (full efficiency); under contamination the start's
  breakdown point is kept. No fixed k-sigma rule.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve
from scipy.linalg.lapack import dpotri
from scipy.stats import chi2
from sklearn.utils import check_random_state

from ..._kernel_model.kernels import check_fit_kernel, compute_kernel
from ..._progress import step
from ...trimming import smallest, truncated_variance
from .auto_epsilon import added_row_factors
from .groups import duplicate_groups
from .hyperparameters import ALPHAS, MIN_TRIM, kernel_honest_residuals, trimmed_mean
from .second_stage import Evidence, release_misfit, second_stage

N_STARTS = 500  # random elemental starts, at most (FAST-LTS's count)
START_CONFIDENCE = 0.99  # of drawing one clean start at 50% contamination (random_starts)
BATCH_STARTS = 50  # starts fitted at once (500: about 60 MB of temporaries on 120 rows)
# n x n float64 arrays the start holds at once, at most: its peak (tracemalloc) was 11.1-11.2
# n^2 from 500 to 2000 rows (three rbf matrices, their eigendecompositions, the fits' copies)
START_MATRICES = 12
N_STEPS = 2
N_BEST = 5
MAX_STEPS = 6
SUBSAMPLE_ROWS = 120
CUTOFF_START = 2.5  # Gervini & Yohai's t0, in standard deviations of one output
# A row outside the fit is studentized by 1 - h_jj, its leverage had it been added, but by no
# less than this: far from every kept row (leverage near 1) the model has no opinion, and a
# tight group of bad leverage points there would never be flagged (an RBF fit on the clean
# half of a sine, 30% of the rows a cluster 3 units away with a wrong target: median
# studentized loss 2.5 sigma^2 and none of the 90 flagged without the floor, all 90 at 0.2
# or 0.5; at 0.5 clean rows at the edge of clean 4-dimensional data were flagged too, 7 and 13
# of 400, at 0.2 none).
MIN_ADDED_FACTOR = 0.2
# The adaptive cutoff flags floor(n d_n + EXCESS_TOLERANCE) rows. n d_n is the count of rows at
# or beyond a point less the count the normal model expects there, n (1 - F(u)); for k rows far
# out that is k less a sliver, and a bare floor kept the least extreme of them every time
# (starsCYG: the four giants at 4.5 to 6 sigma, n d_n = 3.9997, one giant kept, and it pulled
# the fit). The tolerance forgives an expectation below 0.1 rows, a point the normal model
# reaches in fewer than one sample in ten; at 0.5 (rounding) the small classic sets flagged
# rows at 2.5 to 3 sigma (delivery: 6 of 25 rows; the clean pilot data: 1 of 20).
EXCESS_TOLERANCE = 0.1


@dataclass(frozen=True)
class TrimmedFit:
    """A kernel ridge fit on the kept rows and every row's honest squared residual."""

    kept: np.ndarray  # bool mask of the kept rows
    losses: np.ndarray  # (n,): leave-one-out (kept) or out-of-sample (others) squared norm
    score: float  # mean of ``losses`` over the kept rows: the out-of-sample trimmed loss
    studentized: np.ndarray | None = None  # (n,): the losses scaled to variance sigma^2
    residuals: np.ndarray | None = None  # (n, C): the honest residuals y - f(x) themselves


def ridge_on_rows(
    K: np.ndarray,
    Y: np.ndarray,
    kept: np.ndarray,
    alpha: float,
    fit_intercept: bool,
    groups: Sequence[np.ndarray] = (),
    studentized: bool = False,
) -> TrimmedFit:
    """Kernel ridge on the rows ``kept`` of ``K`` (n x n) and ``Y`` (n, C) at ``alpha``.

    Returns every row's honest squared residual norm: leave-one-out for a kept row (Cawley &
    Talbot's closed form c_i / M_ii, M the inverse of the bordered system), leave-group-out
    for the kept rows of a near-duplicate ``groups`` entry (indices into all rows), and the
    plain residual of the others, which the fit did not see. A singular system (alpha 0 on a
    rank-deficient kernel) scores inf.
    """
    index = np.flatnonzero(kept)
    A = K[np.ix_(index, index)]
    A[np.diag_indices_from(A)] += alpha
    try:
        factor = cho_factor(A, lower=True, overwrite_a=True, check_finite=False)
    except LinAlgError:
        return TrimmedFit(kept, np.full(K.shape[0], np.inf), np.inf)
    coef = cho_solve(factor, Y[index], check_finite=False)
    intercept = np.zeros(Y.shape[1])
    inverse, info = dpotri(factor[0], lower=True)
    if info != 0:
        return TrimmedFit(kept, np.full(K.shape[0], np.inf), np.inf)
    inverse = np.tril(inverse) + np.tril(inverse, -1).T
    if fit_intercept:
        ones = inverse.sum(axis=1)
        intercept = coef.sum(axis=0) / ones.sum()
        coef = coef - np.outer(ones, intercept)
        inverse = inverse - np.outer(ones, ones) / ones.sum()
    residuals = Y - K[:, index] @ coef - intercept
    n = K.shape[0]
    factors = np.ones(n)  # studentized: each squared residual times its variance factor
    with np.errstate(divide="ignore", invalid="ignore"):
        diagonal = np.diag(inverse)
        residuals[index] = coef / diagonal[:, None]
        if studentized:
            factors[index] = alpha * diagonal
            added = added_row_factors(K, kept, factor, alpha, fit_intercept)
            factors[~kept] = np.maximum(added, MIN_ADDED_FACTOR)
        position = np.full(n, -1)
        position[index] = np.arange(index.size)
        for group in groups:
            members = position[group][position[group] >= 0]
            if 1 < members.size < index.size:
                # the block is symmetric: eigh's pseudo-inverse (gesdd's SVD did not converge
                # on the finite 311 x 311 block of a tight 30% cluster at 20,000 rows)
                deleted_inverse = np.linalg.pinv(inverse[np.ix_(members, members)], hermitian=True)
                residuals[index[members]] = deleted_inverse @ coef[members]
                if studentized:
                    factors[index[members]] = alpha / np.diag(deleted_inverse)
    losses = np.sum(residuals**2, axis=1)
    losses = np.where(np.isnan(losses), np.inf, losses)
    with np.errstate(invalid="ignore", over="ignore"):  # where() computes both sides
        scaled = np.where(np.isfinite(losses), losses * factors, np.inf) if studentized else None
    return TrimmedFit(kept, losses, float(np.mean(losses[index])), scaled, residuals)


def concentrate(
    K: np.ndarray,
    Y: np.ndarray,
    fit: TrimmedFit,
    h: int,
    alpha: float,
    fit_intercept: bool,
    groups: Sequence[np.ndarray],
    steps: int,
) -> TrimmedFit:
    """Up to ``steps`` C-steps from ``fit``: keep the h rows of smallest honest loss, refit;
    stop when the kept set repeats. Returns the best fit seen (honest losses need not fall
    at every step, unlike in-sample ones)."""
    best = fit
    for _ in range(steps):
        kept = smallest(fit.losses, h)
        if np.array_equal(kept, fit.kept):
            break
        fit = ridge_on_rows(K, Y, kept, alpha, fit_intercept, groups)
        if fit.score < best.score:
            best = fit
    return best


def batched_ridge(
    K: np.ndarray, Y: np.ndarray, sets: np.ndarray, alpha: float, fit_intercept: bool
) -> np.ndarray:
    """Honest squared residuals of many small kernel ridge fits at once.

    ``sets`` (B, s) holds the kept rows of B fits of s rows each; returns (B, n) losses:
    leave-one-out for the kept rows, plain residuals for the others. Rows of a singular
    system score inf.
    """
    if sets.shape[0] > BATCH_STARTS:  # in batches: the (B, s, s) and (B, n, s) arrays
        return np.vstack(
            [
                batched_ridge(K, Y, sets[start : start + BATCH_STARTS], alpha, fit_intercept)
                for start in range(0, sets.shape[0], BATCH_STARTS)
            ]
        )
    B, s = sets.shape
    A = K[sets[:, :, None], sets[:, None, :]]
    A[:, np.arange(s), np.arange(s)] += alpha
    with np.errstate(all="ignore"):
        try:
            inverse = np.linalg.inv(A)
        except LinAlgError:
            inverse = np.linalg.pinv(A, hermitian=True)
        targets = Y[sets]  # (B, s, C)
        coef = inverse @ targets
        intercept = np.zeros((B, 1, Y.shape[1]))
        if fit_intercept:
            ones = inverse.sum(axis=2)  # (B, s)
            total = ones.sum(axis=1)[:, None]
            intercept = (coef.sum(axis=1) / total)[:, None, :]
            coef = coef - ones[:, :, None] * intercept
            diagonal = np.diagonal(inverse, axis1=1, axis2=2) - ones**2 / total
        else:
            diagonal = np.diagonal(inverse, axis1=1, axis2=2)
        predictions = np.einsum("bns,bsc->bnc", K[:, sets].transpose(1, 0, 2), coef)
        residuals = Y[None] - predictions - intercept
        loo = coef / diagonal[:, :, None]
        np.put_along_axis(residuals, sets[:, :, None], loo, axis=1)
        losses = np.sum(residuals**2, axis=2)
    return np.where(np.isfinite(losses), losses, np.inf)


def random_starts(elemental_size: int) -> int:
    """Random elemental starts enough to draw one free of outliers with probability
    ``START_CONFIDENCE`` when half the rows are outliers (RANSAC's count), at most
    ``N_STARTS``: 72 for sets of 4 rows (p = 2), 146 for 5, 588 (capped) for 7. The starts'
    concentration steps were 0.8 of a 1.2 s fit at 100 rows with 500 of them."""
    clean = 0.5**elemental_size
    return min(N_STARTS, int(np.ceil(np.log1p(-START_CONFIDENCE) / np.log1p(-clean))))


def _smallest_rows(losses: np.ndarray, h: int) -> np.ndarray:
    """Row indices (B, h) of the h smallest losses of every row of ``losses`` (B, n)."""
    return np.sort(np.argsort(losses, axis=1, kind="stable")[:, :h], axis=1)


def kernel_lts(
    K: np.ndarray,
    Y: np.ndarray,
    h: int,
    alpha: float,
    fit_intercept: bool,
    starts: Sequence[np.ndarray],
    elemental_size: int,
    rng: np.random.RandomState,
    groups: Sequence[np.ndarray] = (),
    n_starts: int | None = None,
) -> TrimmedFit:
    """The kept set of h rows of least out-of-sample trimmed loss (kernel LTS, FAST-LTS style).

    Parameters
    ----------
    K : ndarray of shape (n, n)
        The kernel matrix.
    Y : ndarray of shape (n, C)
        The targets.
    h : int
        The rows kept.
    alpha : float
        The ridge penalty of every fit.
    fit_intercept : bool
        Fit an unpenalized intercept.
    starts : sequence of ndarray of bool
        Deterministic starting sets, masks over all rows.
    elemental_size : int
        Rows of a random start.
    rng : RandomState
        Draws the random starts and the nested subsample.
    groups : sequence of ndarray
        Near-duplicate groups of rows (indices), deleted together by leave-one-out in the
        final concentration on every row.
    n_starts : int, optional
        Random starts; :func:`random_starts` of ``elemental_size`` where None.
    """
    n = K.shape[0]
    if n_starts is None:
        n_starts = random_starts(elemental_size)
    sub = np.arange(n)
    if n > SUBSAMPLE_ROWS:
        sub = np.sort(rng.choice(n, SUBSAMPLE_ROWS, replace=False))
    K_sub, Y_sub = K[np.ix_(sub, sub)], Y[sub]
    h_sub = max(elemental_size, min(sub.size - 1, round(h * sub.size / n)))
    elemental = np.sort(
        np.argsort(rng.random_sample((n_starts, sub.size)), axis=1)[:, :elemental_size], axis=1
    )
    losses = batched_ridge(K_sub, Y_sub, elemental, alpha, fit_intercept)
    deterministic = [
        ridge_on_rows(K, Y, mask, alpha, fit_intercept, groups).losses[sub] for mask in starts
    ]
    if deterministic:
        losses = np.vstack([np.asarray(deterministic), losses])
    for _ in range(N_STEPS):
        sets = _smallest_rows(losses, h_sub)
        losses = batched_ridge(K_sub, Y_sub, sets, alpha, fit_intercept)
    scores = np.take_along_axis(losses, sets, axis=1).mean(axis=1)
    # The deterministic starts always reach the full data: on the subsample, without
    # group deletion, halves that hold a tight cluster of outliers score best.
    chosen = list(range(len(deterministic)))
    for candidate in np.argsort(scores, kind="stable"):
        if len(chosen) >= len(deterministic) + N_BEST:
            break
        if not any(np.array_equal(sets[candidate], sets[other]) for other in chosen):
            chosen.append(int(candidate))
    best = None
    for candidate in chosen:
        fit = ridge_on_rows(K, Y, _mask(n, sub[sets[candidate]]), alpha, fit_intercept, groups)
        fit = ridge_on_rows(K, Y, smallest(fit.losses, h), alpha, fit_intercept, groups)
        fit = concentrate(K, Y, fit, h, alpha, fit_intercept, groups, MAX_STEPS)
        if best is None or fit.score < best.score:
            best = fit
    if best is None or not np.isfinite(best.score):
        raise LinAlgError("no start of the trimmed kernel fit could be solved")
    return best


def _mask(n: int, rows: np.ndarray) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    return mask


def adaptive_flags(losses: np.ndarray, variance: float, n_outputs: int) -> np.ndarray:
    """Gervini & Yohai's adaptive cutoff: the rows in the excess of the tail over chi^2_C.

    u_(1) <= ... <= u_(n), the squared residual norms over sigma^2; beyond the start u_0 (the
    ``CUTOFF_START`` sigma point for one output), d_n = max_i {F(u_(i)) - (i - 1) / n}^+ with F
    the chi^2_C distribution function, and the floor(n d_n + ``EXCESS_TOLERANCE``) largest are
    flagged.
    """
    n = losses.size
    if not variance > 0:
        return np.zeros(n, dtype=bool)
    order = np.argsort(losses, kind="stable")
    u = losses[order] / variance
    start = chi2.ppf(chi2.cdf(CUTOFF_START**2, df=1), df=n_outputs)
    tail = u >= start
    excess = chi2.cdf(u[tail], df=n_outputs) - np.flatnonzero(tail) / n
    count = int(np.floor(n * max(0.0, float(excess.max(initial=0.0))) + EXCESS_TOLERANCE))
    flags = np.zeros(n, dtype=bool)
    if count:
        flags[order[n - count :]] = True
    return flags


def cutoff_flags(
    studentized: np.ndarray, kept: np.ndarray, n_outputs: int
) -> tuple[np.ndarray, float]:
    """:func:`adaptive_flags` of the ``studentized`` squared residuals with sigma^2 the
    truncated variance of the ``kept`` rows (:func:`..trimming.truncated_variance`: they are
    the rows of smallest residual); returns the flags and that variance."""
    variance = truncated_variance(studentized, kept, n_outputs)
    return adaptive_flags(studentized, variance, n_outputs), variance


# -- kernel="auto": the start, the kernel choice and the reweighting --------------------------

FAMILIES = ("linear", "poly", "cubic", "rbf")  # simplest first
DEGREES = {"poly": 2, "cubic": 3}  # the polynomial families (kernel "poly") and their degrees
ROWS_PER_MONOMIAL = 10
"""The cubic family is tried only on at least this many rows per monomial of degree <= 3
(comb(p + 3, 3): 4 for one column, 84 for six). With fewer, its fit is a least-squares fit of
few rows per coefficient, and it grows as |x|^3 beyond them: on cpus (209 rows, 6 skewed
columns) the folds that chose it predicted at 2.40x KernelRidge + GridSearchCV's CV RMSE, the
rbf and linear kernels at 1.78x."""
POLY_COEF0 = 1.0  # the polynomial kernel's coef0: the fit's, reported as ``coef0_``
START_GAMMA_FACTORS = (0.25, 1.0, 4.0)  # times the robust "scale" gamma (rbf)
START_ALPHA = {"linear": 1e-6, "poly": 1e-6, "cubic": 1e-6, "rbf": 0.1}  # times mean k(x, x)
STANDARD_ERRORS = 2.0  # the simpler kernel stays unless beaten by this many paired SEs
REWEIGHTING_ROUNDS = 2
START_SEED = 0
HELD_OUT_FOLDS = 5  # the second stage's cross-fitting (:func:`held_out_residuals`)
MIN_ROWS = 4  # fewer rows: no trimmed start (every row kept, the linear kernel)


@dataclass(frozen=True)
class Start:
    """What :func:`high_breakdown_start` found: the kernel and the rows it keeps."""

    kernel: str
    degree: float | None  # the polynomial's degree (None for the other kernels)
    kept: np.ndarray  # bool mask: the rows the second stage keeps
    start: np.ndarray  # bool mask: the h rows of the trimmed start
    standardized: np.ndarray  # (n,): the last reweighting's squared residuals over sigma^2
    evidence: Evidence | None = None  # the second stage's per-row evidence

    @property
    def kernel_settings(self) -> dict[str, object]:
        """The estimator's parameters that replace kernel="auto": the kernel, and the
        polynomial's degree and coef0."""
        if self.degree is None:
            return {"kernel": self.kernel}
        return {"kernel": self.kernel, "degree": self.degree, "coef0": POLY_COEF0}


@dataclass(frozen=True)
class Family:
    """The kernel matrices of one kernel family (three gammas for rbf) and the near-duplicate
    groups of each."""

    name: str
    matrices: list[np.ndarray]
    groups: list[list[np.ndarray]]

    @classmethod
    def of(cls, name: str, X: np.ndarray, gamma: float) -> Family:
        if name == "linear":
            settings = [("linear", {})]
        elif name in DEGREES:
            settings = [("poly", {"gamma": gamma, "degree": DEGREES[name], "coef0": POLY_COEF0})]
        else:
            settings = [("rbf", {"gamma": factor * gamma}) for factor in START_GAMMA_FACTORS]
        matrices = []
        for kernel, params in settings:
            matrices.append(compute_kernel(X, None, kernel, params))
            check_fit_kernel(matrices[-1], X, kernel)
        return cls(name, matrices, [duplicate_groups(K) for K in matrices])

    def best_on_rows(
        self, Y: np.ndarray, kept: np.ndarray, fit_intercept: bool
    ) -> tuple[float, TrimmedFit]:
        """The least trimmed leave-one-out score on ``kept`` over the matrices and the alpha
        grid (:meth:`choice_on_rows`), and the fit at the best pair (losses studentized)."""
        score, index, alpha = self.choice_on_rows(Y, kept, fit_intercept)
        return score, self.fit_on_rows(Y, kept, fit_intercept, index, alpha)

    def choice_on_rows(
        self, Y: np.ndarray, kept: np.ndarray, fit_intercept: bool
    ) -> tuple[float, int, float]:
        """The least trimmed leave-one-out score on ``kept`` over the matrices and the alpha
        grid (times the mean of k(x, x)): every alpha of a matrix from one eigendecomposition
        (:func:`.hyperparameters.kernel_honest_residuals`); the score, the matrix's index and
        the alpha."""
        best: tuple[float, int, float] | None = None
        for index, K in enumerate(self.matrices):
            alphas = [alpha * _level(K) for alpha in ALPHAS]
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                losses = kernel_honest_residuals(K, Y, kept, alphas, fit_intercept)[:, kept]
            losses = np.where(np.isnan(losses), np.inf, losses)
            scores = trimmed_mean(losses, MIN_TRIM)
            position = int(np.argmin(scores))
            if best is None or scores[position] < best[0]:
                best = (float(scores[position]), index, alphas[position])
        assert best is not None
        return best

    def fit_on_rows(
        self, Y: np.ndarray, kept: np.ndarray, fit_intercept: bool, index: int, alpha: float
    ) -> TrimmedFit:
        """Kernel ridge on the rows ``kept`` with the ``index``-th matrix at ``alpha``, every
        row's honest residual studentized (:func:`ridge_on_rows`)."""
        return ridge_on_rows(
            self.matrices[index],
            Y,
            kept,
            alpha,
            fit_intercept,
            self.groups[index],
            studentized=True,
        )

    def start(
        self,
        Y: np.ndarray,
        h: int,
        fit_intercept: bool,
        starts: list[np.ndarray],
        elemental_size: int,
        rng: np.random.RandomState,
    ) -> TrimmedFit:
        """The :func:`kernel_lts` start of least score over the family's matrices."""
        fits = [
            kernel_lts(
                K,
                Y,
                h,
                START_ALPHA[self.name] * _level(K),
                fit_intercept,
                starts,
                elemental_size,
                rng,
                groups,
            )
            for K, groups in zip(self.matrices, self.groups, strict=True)
        ]
        return min(fits, key=lambda fit: fit.score)


def _level(K: np.ndarray) -> float:
    """The mean of k(x, x): the unit of the ridge penalties."""
    value = float(np.mean(np.diag(K)))
    return value if value > 0 else 1.0


def _deterministic_starts(X: np.ndarray, Y: np.ndarray, h: int) -> list[np.ndarray]:
    """The h rows nearest the coordinatewise median of X (MAD units), the h rows whose
    targets are nearest their median, and every row (the ordinary fit)."""
    centre = np.median(X, axis=0)
    spread = 1.4826 * np.median(np.abs(X - centre), axis=0)
    spread[spread == 0] = 1.0
    with np.errstate(over="ignore"):  # a row beyond 1e154 spreads away ranks last (inf)
        distance = np.sum(((X - centre) / spread) ** 2, axis=1)
    target = np.sum(np.abs(Y - np.median(Y, axis=0)), axis=1)
    return [smallest(distance, h), smallest(target, h), np.ones(X.shape[0], dtype=bool)]


def families(n_rows: int, n_columns: int) -> tuple[str, ...]:
    """The families tried on ``n_rows`` rows of ``n_columns`` columns: ``FAMILIES``, the cubic
    only with at least ``ROWS_PER_MONOMIAL`` rows per monomial."""
    if n_rows >= ROWS_PER_MONOMIAL * math.comb(n_columns + 3, 3):
        return FAMILIES
    return tuple(name for name in FAMILIES if name != "cubic")


def simplest_adequate(
    X: np.ndarray, Y: np.ndarray, gamma: float, fit_intercept: bool, tried: Sequence[str]
) -> str:
    """The simplest of the families ``tried`` whose leave-one-out losses on these rows exceed
    the best family's (the least trimmed score) by at most ``STANDARD_ERRORS`` standard errors
    of the paired per-row differences, on the rows the trimmed score counts (the best family's
    losses below their 1 - ``MIN_TRIM`` quantile: one gross outlier among the rows would
    otherwise swamp the standard error and make any family look adequate) that the best
    family's adaptive cutoff does not flag (:func:`adaptive_flags`). The rows may still hold a
    group the simpler family explains and the best one calls outliers: 15% of the rows copied
    onto one point of a curved surface with a wrong target, kept by the linear start, made the
    linear kernel adequate (20 of them counted: paired mean 0.24 against 2 SE of 0.19) where
    the rbf kernel's losses on the other rows were 40 times smaller.
    """
    every = np.ones(X.shape[0], dtype=bool)
    results = [Family.of(name, X, gamma).best_on_rows(Y, every, fit_intercept) for name in tried]
    best_fit = min(results, key=lambda item: item[0])[1]
    best = best_fit.losses
    counted = np.zeros(best.size, dtype=bool)
    kept = max(1, int(np.floor((1.0 - MIN_TRIM) * best.size)))
    counted[np.argsort(best, kind="stable")[:kept]] = True
    assert best_fit.studentized is not None
    beyond, _ = cutoff_flags(best_fit.studentized, every, Y.shape[1])
    if (counted & ~beyond).any():
        counted &= ~beyond
    for name, (_, fit) in zip(tried, results, strict=True):
        paired = fit.losses[counted] - best[counted]
        paired = paired[np.isfinite(paired)]
        if paired.mean() <= STANDARD_ERRORS * paired.std() / np.sqrt(paired.size):
            return name
    return tried[-1]


def start_rows(n_samples: int, n_features: int) -> int:
    """h: about half the rows plus half the dimension (LTS's maximal breakdown choice
    floor((n + p + 1) / 2), p counting the intercept), at most 60% of the rows."""
    h = (n_samples + n_features + 2) // 2
    return max(n_samples // 2 + 1, min(h, int(0.6 * n_samples), n_samples - 1))


def reweighted(
    family: Family, Y: np.ndarray, kept: np.ndarray, fit_intercept: bool
) -> tuple[np.ndarray, np.ndarray]:
    """``REWEIGHTING_ROUNDS`` rounds of :func:`adaptive_flags` from the rows ``kept``: the
    studentized honest residuals of the family's fit on the kept rows (alpha and gamma chosen
    on them), the scale from the kept rows. Returns the rows kept at the end and the last
    round's standardized squared residuals (u_i, mean about 1 per output under the model)."""
    for _ in range(REWEIGHTING_ROUNDS):
        _, current = family.best_on_rows(Y, kept, fit_intercept)
        assert current.studentized is not None
        flagged, variance = cutoff_flags(current.studentized, kept, Y.shape[1])
        standardized = current.studentized / variance if variance > 0 else current.studentized
        updated = ~flagged
        if np.array_equal(updated, kept):
            break
        kept = updated
    return kept, standardized


def high_breakdown_start(
    X: np.ndarray,
    Y: np.ndarray,
    fit_intercept: bool,
    gamma: float,
    random_state: object,
) -> Start:
    """kernel="auto": the trimmed start, the kernel and the rows the reweighting keeps.

    From the linear kernel, and moving only toward more flexible families:

    1. the family's LTS start (:func:`kernel_lts`, h from :func:`start_rows`; a later family
       also starts from the rows the earlier one kept), and :func:`reweighted`: the rows its
       adaptive cutoff keeps;
    2. on those rows, the simplest adequate family (:func:`simplest_adequate`): where it is
       more flexible than the current one, repeat from 1 with it. Outliers are defined
       relative to the simplest model that explains the bulk; the bulk is judged on the rows
       the reweighting keeps, not only on the start's half, which the linear start picks
       among the rows a linear model explains (Boston housing: the linear kernel adequate on
       its half, the rbf kernel better on the 91% of rows it kept). The families: linear,
       the polynomials of degree 2 and 3 (the SubQ papers' cubic; the cubic only with
       ``ROWS_PER_MONOMIAL`` rows per monomial, :func:`families`) and rbf;
    2b. where the simplest adequate family on the rows the last family kept lies between
       that family and the one before it (a family the loop stepped over, never tried), the
       last reweighting is run again with it from those rows, and it replaces the last family
       where it keeps at least as many rows (on fair's survey, the degree-2 polynomial was
       adequate on the rows rbf kept and flagged 18.2% of the rows against rbf's 13.0%:
       rbf stays). The SubQ papers' cubic of
       normal x: the linear start keeps the middle rows, on which rbf beats the cubic by two
       paired standard errors (trimmed leave-one-out 0.00659 against 0.00671 at 1000 rows);
       on the rows rbf then keeps the cubic is adequate, and from them it keeps the tails the
       rbf fit flagged. A family the loop tried and left is not gone back to: on yacht hulls'
       low speeds, which the rbf fit keeps, the linear kernel is adequate, and going back to
       it flagged every row of the steep rise (40 of 154);
    3. the second stage (:func:`.second_stage.second_stage`): the rows the reweighting
       flagged are given back where their residual, held out of the fit and of the choice of
       its rows (:func:`held_out_residuals`), is plausible under a local scale and a
       reference distribution fitted to the rows; under the rbf family, the flagged rows a
       flexible fit of every row explains without harm are given back too
       (:func:`.second_stage.release_misfit`). ``Start.kept`` are its rows and
       ``Start.evidence`` every row's p-value.

    ``random_state`` draws the random starts (a fixed seed where None: the default fit is
    reproducible). Fewer than ``MIN_ROWS`` rows keep every row with the linear kernel. With an
    intercept the targets are fitted less their median: the same fits in exact arithmetic, but
    an offset no longer leaves rounding residuals that the cutoff, scaled by them, flags (a
    constant target of 40 rows: up to 19 rows flagged at squared residuals of 1e-30).
    Each family's start, each held-out fold and each flexible fit is announced as a step
    (:func:`.._progress.step`: a progress bar, where one listens).
    """
    n, p = X.shape
    if n < MIN_ROWS:
        every = np.ones(n, dtype=bool)
        return Start("linear", None, every, every, np.zeros(n))
    rng = check_random_state(START_SEED if random_state is None else random_state)
    offset = np.zeros(Y.shape[1])
    if fit_intercept:  # the intercept takes any offset: fit the targets less their median
        offset = np.median(Y, axis=0)
        Y = Y - offset
    h = start_rows(n, p)
    elemental_size = min(h, p + 2)
    starts = _deterministic_starts(X, Y, h)
    name = FAMILIES[0]
    step(f"{name} kernel: trimmed start")
    family = Family.of(name, X, gamma)
    fit = family.start(Y, h, fit_intercept, starts, elemental_size, rng)
    kept, standardized = reweighted(family, Y, fit.kept, fit_intercept)
    previous = name
    while True:
        adequate = simplest_adequate(X[kept], Y[kept], gamma, fit_intercept, families(n, p))
        if FAMILIES.index(adequate) <= FAMILIES.index(name):
            break
        previous, name = name, adequate
        step(f"{name} kernel: trimmed start")
        family = Family.of(name, X, gamma)
        fit = family.start(Y, h, fit_intercept, [*starts, fit.kept, kept], elemental_size, rng)
        kept, standardized = reweighted(family, Y, fit.kept, fit_intercept)
    # 2b: a family the loop stepped over (never tried), adequate on the rows it now keeps
    if FAMILIES.index(previous) < FAMILIES.index(adequate) < FAMILIES.index(name):
        step(f"{adequate} kernel: reweighting")
        simpler = Family.of(adequate, X, gamma)
        simpler_kept, simpler_standardized = reweighted(simpler, Y, kept, fit_intercept)
        if simpler_kept.sum() >= kept.sum():  # it explains every row the flexible one does
            name, family, kept, standardized = adequate, simpler, simpler_kept, simpler_standardized

    _, index, alpha = family.choice_on_rows(Y, kept, fit_intercept)
    folds = np.random.RandomState(START_SEED).permutation(n) % HELD_OUT_FOLDS

    def held_out(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return held_out_residuals(family, Y, rows, fit_intercept, index, alpha, folds)

    evidence = second_stage(X, Y + offset, kept, held_out)
    if family.name == "rbf" and not evidence.kept.all():
        evidence = release_misfit(X, evidence, flexible_fit(Y, family, fit_intercept))
    kernel = "poly" if name in DEGREES else name
    return Start(kernel, DEGREES.get(name), evidence.kept, fit.kept, standardized, evidence)


def held_out_residuals(
    family: Family,
    Y: np.ndarray,
    kept: np.ndarray,
    fit_intercept: bool,
    index: int,
    alpha: float,
    folds: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Every row's residual (n, C) and studentized squared norm (n,) held out of its fold
    (``folds``: each row's fold number) *and* of the choice of the rows that predict it: for
    each fold, the family's ``index``-th matrix at ``alpha`` is fitted on the other folds'
    ``kept`` rows, those rows are chosen again among the other folds by the adaptive cutoff
    (:func:`reweighted`'s rule, ``REWEIGHTING_ROUNDS`` fits), and the last fit predicts the
    fold.

    The kept rows' own leave-one-out residuals are not honest: they are the rows chosen for
    small residuals, and where the model has many degrees of freedom for its rows the chosen
    set fits itself closely (mtcars, 32 rows and 10 columns: the start keeps 21 rows with a
    median absolute leave-one-out residual of 0.48 mpg, where ordinary least squares on every
    row has 3.5; 11 correct rows flagged at p-values down to 1e-51)."""
    n = Y.shape[0]
    residuals = np.empty_like(Y)
    studentized = np.empty(n)
    labels = np.unique(folds)
    for number, fold in enumerate(labels, start=1):
        step(f"second stage: held-out fold {number} of {labels.size}")
        others = folds != fold
        rows = kept & others
        for _ in range(REWEIGHTING_ROUNDS):
            fit = family.fit_on_rows(Y, rows, fit_intercept, index, alpha)
            assert fit.studentized is not None and fit.residuals is not None
            chosen = np.zeros(n, dtype=bool)
            chosen[others] = ~cutoff_flags(fit.studentized[others], rows[others], Y.shape[1])[0]
            if np.array_equal(chosen, rows):
                break
            rows = chosen
        held = ~others
        residuals[held] = fit.residuals[held]
        studentized[held] = fit.studentized[held]
    return residuals, studentized


def flexible_fit(
    Y: np.ndarray, family: Family, fit_intercept: bool
) -> Callable[[np.ndarray], TrimmedFit]:
    """The fit of the rbf ``family`` on given rows, its matrix and alpha chosen on them (least
    trimmed leave-one-out loss): every row's honest residual (leave-one-out for those rows),
    studentized. The flexible fit of :func:`.second_stage.release_misfit` (chosen again
    without the gross errors: chosen with them, the gamma and alpha missed the relation)."""

    def fit(rows: np.ndarray) -> TrimmedFit:
        step(f"misfit: flexible fit of {int(rows.sum())} rows")
        _, index, alpha = family.choice_on_rows(Y, rows, fit_intercept)
        return family.fit_on_rows(Y, rows, fit_intercept, index, alpha)

    return fit
