"""Exact minimizers of the objective restricted to a fixed set S of kept rows.

The alternating solver calls one of these once per iteration:

* :class:`RidgeSubsetFitter` (squared loss): kernel ridge regression on S in closed form. It
  factorizes K + alpha I once and answers every later subset through the Schur complement of the
  rows left out, caching the columns of (K + alpha I)^-1 it has needed; when the subset changes
  too much for that to pay off it factorizes K_SS + alpha I directly.
* :class:`FeatureRidgeSubsetFitter` (squared loss on features Z): ridge regression on S from
  the m x m Gram matrix Z_S^T Z_S, updated by the rows that enter and leave S.
* :class:`LbfgsSubsetFitter` (logistic, softmax and squared hinge losses, kernel or
  features): L-BFGS warm-started at the current model; for the exact kernel model in
  coordinates whitened by a Cholesky factor of K computed once per fit.
* :class:`SvmSubsetFitter` (hinge loss): a support vector machine per pair of classes, by
  libsvm (scikit-learn's ``SVC``: on the precomputed kernel matrix, or with the linear kernel
  on features).

All honour the norm-ball constraint through :func:`fit_in_ball`. Their PyTorch counterparts
for ``device=`` are in :mod:`robustkernel._torch_backend`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.linalg import (
    LinAlgError,
    blas,
    cho_factor,
    cho_solve,
    cholesky,
    eigh,
    solve,
    solve_triangular,
)
from scipy.optimize import brentq, minimize
from scipy.sparse.linalg import eigsh
from sklearn.svm import SVC

from ..._kernel_model.losses import HingeLoss, class_indices
from ..._kernel_model.pairwise import class_pairs
from ..._memory import row_chunks
from .objective import Coefficients, FeatureProblem, Problem

_AMORTIZED_ITERATIONS = 3
# L-BFGS preconditioning of the exact kernel classifier (``LbfgsSubsetFitter``): the number of
# top eigen-directions of K rescaled, and the loss curvature assumed along them. A fit that
# classifies most kept rows confidently has a small curvature; on digits (1442 rows, alpha 0.1
# and 0.01) c = 0.02 took the fewest objective evaluations of 0.02, 0.05, 0.1 and 0.25, and 20
# directions as few as 50 or 100 at a third of the eigsh time.
PRECONDITIONED_DIRECTIONS = 20
TYPICAL_CURVATURE = 0.02
# Tolerance of the rough L-BFGS fits (scikit-learn's LogisticRegression default, on the mean
# loss): the alternating solver's intermediate subsets, polished at the fitter's own tolerance.
ROUGH_TOL = 1e-4


class RidgeSubsetFitter:
    """Kernel ridge regression (with optional unpenalized intercept) on a subset of the rows."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem
        n = problem.n_samples
        self._full = positive_definite_factor(problem.K, problem.alpha)
        self._inverse_columns = np.empty((n, 0))
        self._position = np.full(n, -1)

    def fit(self, mask: np.ndarray, w0: np.ndarray, b0: np.ndarray, alpha: float) -> Coefficients:
        """Minimize the objective over (w, b) with the kept rows fixed to ``mask`` (a float
        array: each row's weight, a direct weighted solve)."""
        problem = self.problem
        if mask.dtype != bool:
            return weighted_kernel_ridge(problem, mask, alpha)[0]
        rhs = ridge_rhs(problem, mask)
        if alpha == problem.alpha:
            solution = self._solve(mask, rhs)
        else:
            solution = cho_solve(cho_factor(_shifted(problem.K[np.ix_(mask, mask)], alpha)), rhs)
        return ridge_coefficients(problem, mask, solution)

    def _solve(self, mask: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """Solve (K_SS + alpha I) x = rhs, choosing the cheaper of Schur complement or direct."""
        n = self.problem.n_samples
        out = np.flatnonzero(~mask)
        if out.size == 0:
            return cho_solve(self._full, rhs)
        k = n - out.size
        missing = out[self._position[out] < 0]
        # New columns of (K + alpha I)^-1 are paid once and reused by every later iteration:
        # amortize them over the few iterations that typically follow.
        schur_cost = 2.0 * n * n * missing.size / _AMORTIZED_ITERATIONS + out.size**3 / 3.0
        direct_cost = k**3 / 3.0
        if direct_cost < schur_cost:
            sub = _shifted(self.problem.K[np.ix_(mask, mask)], self.problem.alpha)
            return cho_solve(cho_factor(sub), rhs)
        self._add_inverse_columns(missing)
        embedded = np.zeros((n, rhs.shape[1]))
        embedded[mask] = rhs
        z = cho_solve(self._full, embedded)
        columns = self._inverse_columns[:, self._position[out]]
        try:
            v = solve(columns[out], z[out], assume_a="pos")
        except LinAlgError:
            sub = _shifted(self.problem.K[np.ix_(mask, mask)], self.problem.alpha)
            return cho_solve(cho_factor(sub), rhs)
        return z[mask] - columns[mask] @ v

    def _add_inverse_columns(self, rows: np.ndarray) -> None:
        if rows.size == 0:
            return
        unit = np.zeros((self.problem.n_samples, rows.size))
        unit[rows, np.arange(rows.size)] = 1.0
        self._position[rows] = self._inverse_columns.shape[1] + np.arange(rows.size)
        self._inverse_columns = np.hstack([self._inverse_columns, cho_solve(self._full, unit)])


def ridge_rhs(problem: Problem, mask: np.ndarray) -> np.ndarray:
    """Right-hand sides of the kernel ridge system on S: Y_S, and a column of ones if centred."""
    rhs = problem.Y[mask]
    if problem.fit_intercept:
        rhs = np.column_stack([rhs, np.ones(rhs.shape[0])])
    return rhs


def ridge_coefficients(problem: Problem, mask: np.ndarray, solution: np.ndarray) -> Coefficients:
    """(w, b) from the solution of (K_SS + alpha I) x = :func:`ridge_rhs` (zero w off S).

    With intercept the solution holds u = A^-1 Y_S and v = A^-1 1; then b = 1^T u / 1^T v and
    w_S = u - v b.
    """
    w = np.zeros((problem.n_samples, problem.n_outputs))
    b = np.zeros(problem.n_outputs)
    if problem.fit_intercept:
        u, v = solution[:, :-1], solution[:, -1]
        b = u.sum(axis=0) / v.sum()
        w[mask] = u - np.outer(v, b)
    else:
        w[mask] = solution
    return w, b


@dataclass(frozen=True)
class SubsetGram:
    """Sums over the rows S of ``mask``: Z_S^T Z_S (m x m), Z_S^T 1 (m) and Z_S^T Y_S (m x C)."""

    mask: np.ndarray
    gram: np.ndarray
    ones: np.ndarray
    targets: np.ndarray

    @classmethod
    def empty(cls, n_samples: int, n_components: int, n_outputs: int) -> SubsetGram:
        """The sums over no rows."""
        return cls(
            np.zeros(n_samples, dtype=bool),
            np.zeros((n_components, n_components)),
            np.zeros(n_components),
            np.zeros((n_components, n_outputs)),
        )

    def moved_to(self, mask: np.ndarray, Z: np.ndarray, Y: np.ndarray) -> SubsetGram:
        """The sums over ``mask``: add the rows that enter, subtract those that leave.

        Costs O(r m^2) for r changed rows, in blocks of rows (products in float64).
        """
        gram, ones, targets = self.gram.copy(), self.ones.copy(), self.targets.copy()
        entering = np.flatnonzero(mask & ~self.mask)
        leaving = np.flatnonzero(self.mask & ~mask)
        for rows, sign in ((entering, 1.0), (leaving, -1.0)):
            for block in row_chunks(rows.size, Z.shape[1]):
                Z_block = np.asarray(Z[rows[block]], dtype=np.float64)
                gram += sign * (Z_block.T @ Z_block)
                ones += sign * Z_block.sum(axis=0)
                targets += sign * (Z_block.T @ Y[rows[block]])
        return SubsetGram(mask.copy(), gram, ones, targets)


class FeatureRidgeSubsetFitter:
    """Ridge regression on features (with optional unpenalized intercept) on a subset of rows.

    Keeps the sums of :class:`SubsetGram` for the last subset (and for all rows once seen) and
    moves them to the next subset from whichever of these, or from no rows, differs from it in
    the fewest rows: O(r m^2) for r changed rows, then an O(m^3) solve.
    """

    def __init__(self, problem: FeatureProblem) -> None:
        self.problem = problem
        self._last: SubsetGram | None = None
        self._all_rows: SubsetGram | None = None

    def subset_gram(self, mask: np.ndarray) -> SubsetGram:
        """The sums over ``mask``, by the cheapest update of a cached subset."""
        problem = self.problem
        start = SubsetGram.empty(problem.n_samples, problem.n_coefficients, problem.n_outputs)
        for cached in (self._last, self._all_rows):
            if cached is not None and np.sum(cached.mask != mask) < np.sum(start.mask != mask):
                start = cached
        sums = start.moved_to(mask, problem.Z, problem.Y)
        self._last = sums
        if mask.all():
            self._all_rows = sums
        return sums

    def fit(self, mask: np.ndarray, w0: np.ndarray, b0: np.ndarray, alpha: float) -> Coefficients:
        """Minimize the objective over (theta, b) with the kept rows fixed to ``mask``
        (:func:`ridge_from_sums` on the subset's sums; a float ``mask`` gives each row's
        weight: :func:`weighted_feature_ridge`)."""
        problem = self.problem
        if mask.dtype != bool:
            return weighted_feature_ridge(problem, mask, alpha)[:2]
        sums = self.subset_gram(mask)
        return ridge_from_sums(
            sums.gram,
            sums.targets,
            sums.ones,
            problem.Y[mask].sum(axis=0),
            np.count_nonzero(mask),
            alpha,
            problem.fit_intercept,
        )


DECOUPLED_RIDGE = 1e150  # alpha / weight beyond it: the row's coefficient is 0 to float precision


def weighted_kernel_ridge(
    problem: Problem, weights: np.ndarray, alpha: float
) -> tuple[Coefficients, np.ndarray, np.ndarray]:
    """Kernel ridge with row weights: minimize sum_i weights_i (f(x_i) - y_i)^2 + alpha
    ||f||_H^2 on the rows of positive weight. Returns (w, b), the lower Cholesky factor of
    K_SS + alpha W_S^-1 and the solution of that system for :func:`ridge_rhs`."""
    rows = weights > 0
    block = problem.K[np.ix_(rows, rows)]
    # a row of weight below ~1e-150 alpha decouples to float precision: its ridge is capped
    # there instead of overflowing
    with np.errstate(over="ignore"):
        block.flat[:: block.shape[0] + 1] += np.minimum(alpha / weights[rows], DECOUPLED_RIDGE)
    lower = cholesky(block, lower=True)
    solution = cho_solve((lower, True), ridge_rhs(problem, rows))
    return ridge_coefficients(problem, rows, solution), lower, solution


def weighted_feature_ridge(
    problem: FeatureProblem, weights: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, Any, np.ndarray, float]:
    """Ridge on features with row weights (intercept unpenalized): theta, b, the Cholesky
    factor of the centred weighted Gram matrix + alpha I, the weighted feature mean and the
    total weight."""
    m = problem.n_coefficients
    gram, sums, targets = np.zeros((m, m)), np.zeros(m), np.zeros((m, problem.n_outputs))
    for rows in row_chunks(problem.n_samples, m):
        Z = np.asarray(problem.Z[rows], dtype=np.float64)
        weighted = Z * weights[rows, None]
        gram += weighted.T @ Z
        sums += weighted.sum(axis=0)
        targets += weighted.T @ problem.Y[rows]
    b = np.zeros(problem.n_outputs)
    centre = np.zeros(m)
    total = float(weights.sum())
    if problem.fit_intercept:
        y_total = weights @ problem.Y
        centre = sums / total
        gram -= np.outer(sums, sums) / total
        targets -= np.outer(sums, y_total) / total
    factor = cho_factor(_shifted(gram, alpha))
    theta = cho_solve(factor, targets)
    if problem.fit_intercept:
        b = (y_total - sums @ theta) / total
    return theta, b, factor, centre, total


def ridge_from_sums(
    gram: np.ndarray,
    targets: np.ndarray,
    ones: np.ndarray,
    y_total: np.ndarray,
    count: float,
    alpha: float,
    fit_intercept: bool,
) -> Coefficients:
    """Ridge (theta, b) on a row subset S from its sums: ``gram`` = Z_S^T Z_S (m, m),
    ``targets`` = Z_S^T Y_S (m, C), ``ones`` = Z_S^T 1 (m,), ``y_total`` = 1^T Y_S (C,) and
    ``count`` = |S|. With intercept the features and targets are centred on S:
    (Z_S^T Z_S - s s^T / k + alpha I) theta = Z_S^T Y_S - s (1^T Y_S) / k, s = Z_S^T 1; the
    in-memory feature fitter and the Dask fit (sums reduced over chunks) both solve it here.
    """
    A, rhs = gram, targets
    b = np.zeros(targets.shape[1])
    if fit_intercept:
        A = A - np.outer(ones, ones) / count
        rhs = rhs - np.outer(ones, y_total) / count
    theta = cho_solve(cho_factor(_shifted(A, alpha)), rhs)
    if fit_intercept:
        b = (y_total - ones @ theta) / count
    return theta, b


class LbfgsSubsetFitter:
    """Logistic / softmax regression on a subset, by L-BFGS.

    The variable is a coefficient vector v with f = Z v + b and ||f||_H^2 = ||v||^2, so that
    the Hessian of the ridge term is 2 alpha I. Features: Z is the feature matrix and v = theta.
    Exact kernel model: Z = L, the Cholesky factor of K + delta I = L L^T (delta the smallest
    jitter that factorizes, at most 1e-10 tr(K) / n for a positive definite K), and w = L^-T v:
    every objective evaluation is two matrix products with L, and one triangular solve per fit
    maps v back to w. L-BFGS stops when no gradient entry exceeds ``tol`` times the number of
    kept rows (``tol`` on the mean loss: scikit-learn's LogisticRegression stops at 1e-4).

    Exact kernel model, preconditioned: the Hessian in v is L^T D L + 2 alpha I (D the loss
    curvature of the kept rows), whose top directions are those of K's largest eigenvalues
    (an RBF kernel matrix of 1442 digits has lambda_1 = 544, lambda_2 = 84, against 2 alpha =
    0.2). L-BFGS runs on u with v = S u, S = I + Q (diag(s) - 1) Q^T, where the columns of Q
    are the ``PRECONDITIONED_DIRECTIONS`` top eigenvectors of L^T L (lambda_i those of K) and
    s_i = (2 alpha / (c lambda_i + 2 alpha))^(1/2) with c = ``TYPICAL_CURVATURE``; the
    intercept is scaled likewise by (2 alpha / (c k + 2 alpha))^(1/2). Objective evaluations
    on digits (1442 rows, 10 classes, epsilon=0.2, alpha = 0.1, refine=None): 262 -> 107.
    """

    def __init__(
        self, problem: Problem | FeatureProblem, max_iter: int = 1000, tol: float = 1e-6
    ) -> None:
        self.problem = problem
        self.max_iter = max_iter
        self.tol = tol
        self._chol = self._cholesky_factor() if isinstance(problem, Problem) else None
        self._top = self._top_eigenspace()

    def _top_eigenspace(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Eigenvalues lambda and orthonormal eigenvectors Q of the Gram operator in v for the
        top eigenpairs: of Z^T Z for features (from the m x m Gram matrix, one pass over the
        rows); of L^T L for the exact model, Q = L^T U / lambda^(1/2) from the top eigenpairs
        (lambda, U) of K. None when the problem has too few rows or features to be worth it."""
        problem = self.problem
        if isinstance(problem, FeatureProblem):
            if problem.n_samples <= 4 * PRECONDITIONED_DIRECTIONS:
                return None
            every_row = np.ones(problem.n_samples, dtype=bool)
            empty = SubsetGram.empty(problem.n_samples, problem.n_coefficients, problem.n_outputs)
            return gram_top_directions(empty.moved_to(every_row, problem.Z, problem.Y).gram)
        n = problem.n_samples
        if self._chol is None or n <= 4 * PRECONDITIONED_DIRECTIONS:
            return None
        start = np.random.default_rng(0).uniform(0.5, 1.5, size=n)  # deterministic ARPACK
        eigenvalues, U = eigsh(
            problem.K, k=PRECONDITIONED_DIRECTIONS, which="LA", tol=1e-3, v0=start
        )
        eigenvalues = np.maximum(eigenvalues, np.finfo(float).tiny)
        return eigenvalues, self._backward(U) / np.sqrt(eigenvalues)

    def _cholesky_factor(self) -> np.ndarray:
        return _jittered_cholesky(self.problem.K)

    def _forward(self, v: np.ndarray) -> np.ndarray:
        """Outputs Z v (without the intercept); L v by a triangular product (half a GEMM)."""
        if self._chol is None:
            return self.problem.apply(v)
        return blas.dtrmm(1.0, self._chol.T, v, lower=0, trans_a=1)

    def _backward(self, G: np.ndarray) -> np.ndarray:
        """Z^T G: the gradient in v of sum_i <G_i, (Z v)_i>."""
        if self._chol is None:
            return self.problem.backward(G)
        return blas.dtrmm(1.0, self._chol.T, G, lower=0, trans_a=0)

    def _from_variable(self, v: np.ndarray) -> np.ndarray:
        if self._chol is None:
            return v
        return solve_triangular(self._chol, v, lower=True, trans="T")

    def _to_variable(self, w: np.ndarray) -> np.ndarray:
        return w if self._chol is None else self._chol.T @ w

    def fit(self, mask: np.ndarray, w0: np.ndarray, b0: np.ndarray, alpha: float) -> Coefficients:
        """Minimize the objective over (w, b) with the kept rows fixed to ``mask``."""
        return self._minimize(mask, w0, b0, alpha, self.tol)

    def rough_fit(
        self, mask: np.ndarray, w0: np.ndarray, b0: np.ndarray, alpha: float
    ) -> Coefficients:
        """``fit`` to ``ROUGH_TOL``: enough to rank the losses of the next subset."""
        return self._minimize(mask, w0, b0, alpha, max(ROUGH_TOL, self.tol))

    def _minimize(
        self, mask: np.ndarray, w0: np.ndarray, b0: np.ndarray, alpha: float, tol: float
    ) -> Coefficients:
        problem = self.problem
        weights = mask.astype(float)[:, None]
        kept = mask if mask.dtype == bool else mask > 0

        def data_term(v: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
            losses, G = problem.loss.loss_and_gradient(self._forward(v) + b, problem.Y)
            G *= weights
            value = losses[kept].sum() if mask.dtype == bool else losses[kept] @ mask[kept]
            return float(value), self._backward(G), G.sum(axis=0)

        v, b = lbfgs_penalized(
            data_term, self._to_variable(w0), b0, alpha, float(weights.sum()),
            fit_intercept=problem.fit_intercept, tol=tol, max_iter=self.max_iter, top=self._top,
        )
        return self._from_variable(v), b


class SvmSubsetFitter:
    """The hinge loss on a subset: one support vector machine per pair of classes.

    sum_(i in S) c_i l_i(f) + alpha ||f||^2 with the hinge loss of each pair is the SVM of
    C = 1 / (2 alpha) on the pair's kept rows with row weights c_i (libsvm's per-row C), by
    scikit-learn's ``SVC``: on the pair's block of K (``kernel="precomputed"``), whose dual
    coefficients are the pair's column of w; on features with the linear kernel, whose dual
    coefficients times the support rows are the pair's weights. A pair with the rows of one
    class only predicts it everywhere (w = 0, b = +-1). The warm start is not used; libsvm
    solves each pair to its tolerance ``tol`` (``SVC``'s default 1e-3).
    """

    def __init__(self, problem: Problem | FeatureProblem, tol: float = 1e-3) -> None:
        self.problem = problem
        self.tol = tol
        self.labels = class_indices(problem.Y)
        self.pairs = class_pairs(max(problem.Y.shape[1], 2))

    @staticmethod
    def check_kernel(K: np.ndarray) -> None:
        """ValueError (:data:`NOT_PSD`) where K is not positive semidefinite (up to the
        jitters the L-BFGS fitter allows): libsvm would run on it without complaint."""
        _jittered_cholesky(K)

    @staticmethod
    def fits(loss: object) -> bool:
        """Whether this fitter is the one of ``loss`` (the hinge loss, not its square)."""
        return isinstance(loss, HingeLoss) and not loss.squared

    def fit(self, mask: np.ndarray, w0: np.ndarray, b0: np.ndarray, alpha: float) -> Coefficients:
        """The SVM of every pair on the kept rows ``mask`` (booleans, or row weights)."""
        problem, labels = self.problem, self.labels
        weights = mask.astype(float)
        w = np.zeros((problem.n_coefficients, len(self.pairs[0])))
        b = np.zeros(len(self.pairs[0]))
        for pair, (first, second) in enumerate(zip(*self.pairs, strict=True)):
            rows = np.flatnonzero((weights > 0) & ((labels == first) | (labels == second)))
            positive = labels[rows] == second
            if positive.all() or not positive.any():  # one class (or none) in the pair
                b[pair] = 0.0 if rows.size == 0 else (1.0 if positive.all() else -1.0)
                continue
            row_weights = None if mask.dtype == bool else weights[rows]
            if isinstance(problem, Problem):
                svm = SVC(kernel="precomputed", C=0.5 / alpha, tol=self.tol)
                svm.fit(problem.K[np.ix_(rows, rows)], positive, sample_weight=row_weights)
                w[rows[svm.support_], pair] = svm.dual_coef_[0]
            else:  # libsvm's linear kernel on the features: liblinear's dual coordinate
                # descent stopped at 10,000 iterations with C >= 10 on 3000 overlapping rows
                svm = SVC(kernel="linear", C=0.5 / alpha, tol=self.tol)
                svm.fit(problem.Z[rows], positive, sample_weight=row_weights)
                w[:, pair] = svm.dual_coef_[0] @ problem.Z[rows[svm.support_]]
            b[pair] = svm.intercept_[0]
        return w, b


def classifier_fitter(
    problem: Problem | FeatureProblem, tol: float
) -> SvmSubsetFitter | LbfgsSubsetFitter:
    """The subset fitter of a classification problem's loss: libsvm for the hinge loss, else
    L-BFGS to ``tol`` (the SVMs keep libsvm's tolerance)."""
    if SvmSubsetFitter.fits(problem.loss):
        return SvmSubsetFitter(problem)
    return LbfgsSubsetFitter(problem, tol=tol)


def gram_top_directions(gram: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The ``PRECONDITIONED_DIRECTIONS`` top eigenvalues and orthonormal eigenvectors of a
    feature Gram matrix Z^T Z (m x m), for :func:`lbfgs_penalized`'s ``top``; None when m is
    too small to be worth it. Feature classifiers, 2000 rows x 224 features, 3 classes: 69
    objective evaluations per L-BFGS fit without, 8.6 s against 18.1 s for the whole fit."""
    m = gram.shape[0]
    if m <= 4 * PRECONDITIONED_DIRECTIONS:
        return None
    eigenvalues, Q = eigh(gram, subset_by_index=[m - PRECONDITIONED_DIRECTIONS, m - 1])
    return np.maximum(eigenvalues, np.finfo(float).tiny), Q


DataTerm = Callable[[np.ndarray, np.ndarray], tuple[float, np.ndarray, np.ndarray]]
"""``data_term(v, b)``: the kept rows' summed loss of f = Z v + b, its gradient Z^T G in v and
G^T 1 in b (G the loss gradient in f, zero on the trimmed rows)."""


def lbfgs_penalized(
    data_term: DataTerm,
    v0: np.ndarray,
    b0: np.ndarray,
    alpha: float,
    k: float,
    *,
    fit_intercept: bool,
    tol: float,
    max_iter: int,
    top: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Minimize ``data_term(v, b) + alpha ||v||^2`` over (v, b) by L-BFGS from (v0, b0).

    The variable is preconditioned as in :class:`LbfgsSubsetFitter` (``top``: the eigenvalues
    and eigenvectors of its rescaled directions, or None), the intercept scaled by
    (2 alpha / (c k + 2 alpha))^(1/2) for ``k`` kept rows. Stops when no gradient entry exceeds
    ``tol * k``; returns the start when L-BFGS ends above it. The in-memory fitter and the fit
    on a Dask array (whose ``data_term`` is a pass over the chunks) share this loop.
    """
    n, C = v0.shape
    scale_b = np.sqrt(2.0 * alpha / (TYPICAL_CURVATURE * k + 2.0 * alpha))

    def scaled(u: np.ndarray, power: float = 1.0) -> np.ndarray:
        """S^power u: v from u (power 1), u from v (power -1); S is symmetric."""
        if top is None:
            return u
        eigenvalues, Q = top
        s = np.sqrt(2.0 * alpha / (TYPICAL_CURVATURE * eigenvalues + 2.0 * alpha))
        return u + Q @ ((s**power - 1.0)[:, None] * (Q.T @ u))

    def unpack(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v = scaled(x[: n * C].reshape(n, C))
        b = x[n * C :] * scale_b if fit_intercept else np.zeros(C)
        return v, b

    def value_and_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        if not np.all(np.isfinite(x)):  # a line-search trial step beyond float64
            return np.inf, np.zeros_like(x)
        with np.errstate(over="ignore", invalid="ignore"):
            v, b = unpack(x)
            value, grad_v, grad_b = data_term(v, b)
            value += alpha * np.sum(v * v)
            grad_v = grad_v + 2.0 * alpha * v
        if not np.isfinite(value):
            return np.inf, np.zeros_like(x)
        parts = [scaled(grad_v).ravel()]
        if fit_intercept:
            parts.append(grad_b * scale_b)
        return float(value), np.concatenate(parts)

    start = [scaled(v0, -1.0).ravel()]
    if fit_intercept:
        start.append(b0 / scale_b)
    x0 = np.concatenate(start)
    result = minimize(
        value_and_grad,
        x0,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "gtol": tol * max(k, 1), "ftol": 1e-14},
    )
    return unpack(result.x if result.fun <= value_and_grad(x0)[0] else x0)


PenalizedRefit = Callable[[np.ndarray, np.ndarray, np.ndarray, float], Coefficients]
"""``fit(mask, w0, b0, alpha)`` of a subset fitter: the minimizer on the kept rows at alpha."""


@dataclass(frozen=True)
class SubsetFit:
    """``fit_subset(mask, w0, b0)``: the fitter's minimizer on the kept rows ``mask`` at the
    problem's alpha, within its norm ball (:func:`fit_in_ball`).

    ``rough`` solves to the fitter's loose tolerance (``rough_fit``, the L-BFGS fitters'); the
    alternating solver runs on :meth:`loosened` fits until the subset repeats, then polishes
    with exact ones.
    """

    fitter: Any
    problem: Problem | FeatureProblem
    rough: bool = False

    def __call__(self, mask: np.ndarray, w0: np.ndarray, b0: np.ndarray) -> Coefficients:
        fit = self.fitter.rough_fit if self.rough else self.fitter.fit
        return fit_in_ball(fit, self.problem, mask, w0, b0)

    def loosened(self) -> SubsetFit:
        """The rough variant, or this fit when the fitter is exact anyway (ridge)."""
        return replace(self, rough=True) if hasattr(self.fitter, "rough_fit") else self


def fit_in_ball(
    fit: PenalizedRefit,
    problem: Problem | FeatureProblem,
    mask: np.ndarray,
    w0: np.ndarray,
    b0: np.ndarray,
) -> Coefficients:
    """Minimize on S subject to ||f|| <= radius.

    For a convex loss the constrained minimizer is the penalized one with the ridge raised to
    alpha + mu, mu >= 0 the Lagrange multiplier; mu is found by a root search on log(mu).
    """
    w, b = fit(mask, w0, b0, problem.alpha)
    if problem.radius is None or _rkhs_norm(problem, w) <= problem.radius:
        return w, b

    def excess(log_mu: float) -> float:
        w_mu, _ = fit(mask, w0, b0, problem.alpha + np.exp(log_mu))
        return _rkhs_norm(problem, w_mu) - problem.radius

    low = np.log(max(problem.alpha, 1e-12)) - 30.0
    high = np.log(max(problem.alpha, 1.0))
    while excess(high) > 0:
        high += 2.0
    log_mu = brentq(excess, low, high, xtol=1e-10, rtol=1e-10)
    w, b = fit(mask, w0, b0, problem.alpha + np.exp(log_mu))
    norm = _rkhs_norm(problem, w)
    if norm > problem.radius:
        w = w * (problem.radius / norm)
    return w, b


def _rkhs_norm(problem: Problem | FeatureProblem, w: np.ndarray) -> float:
    return float(np.sqrt(max(problem.squared_norm(w, problem.apply(w)), 0.0)))


def _shifted(K: np.ndarray, shift: float) -> np.ndarray:
    A = K.copy()
    A.flat[:: A.shape[0] + 1] += shift
    return A


def positive_definite_factor(K: np.ndarray, alpha: float) -> tuple[np.ndarray, bool]:
    """``cho_factor(K + alpha I)``; ValueError (:data:`NOT_PSD`) if it is not positive definite."""
    try:
        return cho_factor(_shifted(K, alpha))
    except LinAlgError as error:
        raise ValueError(NOT_PSD) from error


NOT_PSD = (
    "The kernel matrix (plus alpha I) is not positive definite: a kernel must be symmetric "
    "positive semidefinite. Check a precomputed or callable kernel."
)


def jitters(trace: float, n: int) -> list[float]:
    """The shifts delta tried in turn to factorize K + delta I: 1e-10, 1e-9, ..., 1e-2 x tr(K)/n."""
    scale = max(trace / n, np.finfo(float).tiny)
    return [10.0**exponent * scale for exponent in range(-10, -1)]


def _jittered_cholesky(K: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor of K + delta I, delta the smallest of :func:`jitters` that works."""
    for delta in jitters(float(np.trace(K)), K.shape[0]):
        try:
            return np.linalg.cholesky(_shifted(K, delta))
        except np.linalg.LinAlgError:
            continue
    raise ValueError(NOT_PSD)
