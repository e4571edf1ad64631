"""The second stage of the automatic regression fit: every row the high-breakdown start flagged
is judged again against a scale that follows the data, and given back where it is plausible.

The start's adaptive cutoff (:func:`.high_breakdown.adaptive_flags`) compares residuals with
one normal scale taken from the rows it keeps. On real tables that is too strict: where the
spread of the targets grows with x or with the fitted value (heteroscedastic), or the errors
have tails heavier than the normal's, correct rows in the tails become flags, and the model
then loses exactly the rows it needs there (Rousseeuw & Van Driessen's reweighting and
Gervini & Yohai's cutoff both assume one normal scale). As MM-estimators follow an S-start with
an efficient M-step (Yohai, "High breakdown-point and high efficiency robust estimates for
regression", Ann. Statist. 15(2), 1987), this stage re-weighs every row against:

* honest residuals, **held out of the choice of the rows too**: for each of five folds, the
  start's model is fitted on the other folds' kept rows, those rows are chosen again among
  the other folds by the start's cutoff, and the fit predicts the fold
  (:func:`.high_breakdown.held_out_residuals`), studentized. A kept row's leave-one-out
  residual is not honest: it is small because the row was chosen for it, and where the model
  has many degrees of freedom for its rows the chosen set fits itself (32 rows and 10
  columns: 11 correct rows flagged at p-values down to 1e-51). sigma^2 is the larger of the
  kept rows' truncated estimate and every row's median (:func:`judge`);
* a **local scale**: the mean of the clipped standardized squared residuals of the
  ``neighbours`` nearest kept rows, in x or in the fitted value (whichever varies more beyond
  its sampling noise), shrunk towards the global scale by the share of its spread that is not
  noise (a James-Stein factor: on homoscedastic data it is close to 0). Only kept rows enter,
  so a group of outliers cannot widen its own scale;
* a **reference distribution** for the standardized residuals: Student's t with nu degrees of
  freedom (nu >= ``MIN_DOF``) and a scale s, fitted by maximum likelihood to every row's
  value within ``TRUNCATION`` (a truncated likelihood: the gross outliers beyond it do not
  enter, and their number does not either; the kept rows alone would lack the clean tail the
  start flagged); the normal stays unless the t's likelihood is
  better by a likelihood-ratio test at level 0.01.

A row's p-value is the reference's two-sided tail probability of its standardized residual.
A row is flagged where the start flagged it *and* its p-value is below ``FLAG_LEVEL``: the
stage only gives rows back, it flags none the start kept, so the start's breakdown point and
its masking protection stay. The rows are judged again from the rows kept, until they
repeat. Where the start chose the rbf family, :func:`release_misfit` then gives back the
flagged rows that a flexible fit of every row explains without harm (misfit, not outliers:
a relation steeper at its edge than in its bulk).

Error rate: a clean row whose residual follows the reference is flagged with probability at
most ``FLAG_LEVEL`` (less where the start did not flag it); the p-values are calibrated where
the reference and the local scale are right (tests/test_second_stage.py measures it on
Gaussian, t(3) and heteroscedastic data).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import optimize, special, stats
from sklearn.neighbors import NearestNeighbors

from ...trimming import truncated_variance

FLAG_LEVEL = 0.01  # a start-flagged row stays flagged where its p-value is below this
ROUNDS = 3  # the second stage judges again from the rows it kept at most this many times
HARM_RATIO = 4.0  # see :func:`release_misfit`
CONFLICT_NEIGHBOURS = 3  # see :func:`release_misfit`
LOCAL_NEIGHBOURS = 10  # see :func:`release_misfit`
LOCAL_HARM = 2.0  # see :func:`release_misfit`
TRUNCATION = 3.0  # the reference is fitted to standardized residuals within this
MIN_DOF = 3.0  # the heaviest reference tail: t(3)
DOFS = (MIN_DOF, 4.0, 5.0, 7.0, 10.0, 15.0, 30.0)  # the t's tried beside the normal
LIKELIHOOD_RATIO = stats.chi2.ppf(0.99, df=1)  # 2 x log-likelihood gain that the t must show
CLIP = 9.0  # squared standardized residuals are clipped here in the local scale (3 sigma)
MIN_NEIGHBOURS = 10
LOCAL_X_ROWS = 20_000  # beyond: the local scale follows the fitted value only (k-NN cost)
MAX_NEIGHBOURS = 200  # (n x 200 indices: 32 MB at 20,000 rows)
NEIGHBOUR_SHARE = 0.2  # the local scale's neighbours: this share of the kept rows, at least 10
LOCAL_RANGE = 25.0  # the local variance stays within [1 / 25, 25] times the global one
X_NEIGHBOURS = 5  # the x-distance is to the 5th nearest kept row
UNUSUAL_X = 3.0  # x-distance (in units of the kept rows' typical spacing) beyond: unusual x
FLEXIBLE_PASSES = 4  # release_misfit's flexible fits: every row, then its plausible rows again


@dataclass(frozen=True)
class Reference:
    """The reference distribution of standardized residuals: t(dof) (normal: dof inf) times
    ``scale``."""

    dof: float
    scale: float

    def pvalues(self, z: np.ndarray) -> np.ndarray:
        """Two-sided tail probabilities of |z| (inf for a row with no finite residual: p 0)."""
        dist = stats.norm if np.isinf(self.dof) else stats.t(self.dof)
        with np.errstate(invalid="ignore"):
            p = 2.0 * dist.sf(np.abs(z) / self.scale)
        return np.where(np.isnan(p), 0.0, p)


def fit_reference(z: np.ndarray) -> Reference:
    """Student's t (dof in ``DOFS``) or the normal, with a free scale, by maximum likelihood of
    the |z| within ``TRUNCATION`` (the density truncated there); the normal unless a t beats it
    by the likelihood-ratio test."""
    values = np.abs(z[np.isfinite(z)])
    values = values[values <= TRUNCATION]
    if values.size < MIN_NEIGHBOURS:
        return Reference(np.inf, 1.0)

    def fitted(dof: float) -> tuple[float, Reference]:
        # the densities and distribution functions by scipy.special, not scipy.stats's frozen
        # distributions, whose per-call overhead was most of this function's time
        if np.isinf(dof):
            constant = -0.5 * np.log(2.0 * np.pi)

            def log_density(x: np.ndarray) -> np.ndarray:
                return constant - 0.5 * x**2

            def cdf(x: float) -> float:
                return float(special.ndtr(x))
        else:
            constant = (
                special.gammaln((dof + 1.0) / 2.0) - special.gammaln(dof / 2.0)
                - 0.5 * np.log(dof * np.pi)
            )

            def log_density(x: np.ndarray) -> np.ndarray:
                return constant - (dof + 1.0) / 2.0 * np.log1p(x**2 / dof)

            def cdf(x: float) -> float:
                return float(special.stdtr(dof, x))

        def negative_log_likelihood(log_scale: float) -> float:
            scale = np.exp(log_scale)
            inside = 2.0 * cdf(TRUNCATION / scale) - 1.0
            return -float(
                np.sum(log_density(values / scale)) - values.size * (log_scale + np.log(inside))
            )

        best = optimize.minimize_scalar(
            negative_log_likelihood, bounds=(-3.0, 3.0), method="bounded"
        )
        return float(best.fun), Reference(dof, float(np.exp(best.x)))

    normal_loss, normal = fitted(np.inf)
    heavy_loss, heavy = min((fitted(dof) for dof in DOFS), key=lambda item: item[0])
    if 2.0 * (normal_loss - heavy_loss) >= LIKELIHOOD_RATIO:
        return heavy
    return normal


def other_kept_neighbours(
    coordinates: np.ndarray, kept: np.ndarray, neighbours: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``neighbours`` nearest kept rows other than itself: their distances and
    their positions among the kept rows, each (n, neighbours), nearest first (one k-NN search
    of ``neighbours + 1``: a kept row finds itself first, the others drop their last)."""
    index = np.flatnonzero(kept)
    search = NearestNeighbors(n_neighbors=neighbours + 1).fit(coordinates[index])
    distances, nearest = search.kneighbors(coordinates)
    own = kept[:, None]
    return (
        np.where(own, distances[:, 1:], distances[:, :-1]),
        np.where(own, nearest[:, 1:], nearest[:, :-1]),
    )


@dataclass(frozen=True)
class LocalVariance:
    """The local variance of :func:`local_variance`: every row's ``factors`` (the row itself
    left out of its neighbours), the spread they explain (``explained``, the shrunk variance of
    the factors), and what predicts the factor at new coordinates (:meth:`at`): the kept rows'
    clipped standardized squared residuals ``clipped`` (their mean ``mean``), the
    ``neighbours`` averaged and the shrinkage ``shrink`` towards 1."""

    factors: np.ndarray
    explained: float
    clipped: np.ndarray
    mean: float
    shrink: float
    neighbours: int
    limit: float = LOCAL_RANGE
    geometric: bool = False

    def at(self, nearest: np.ndarray) -> np.ndarray:
        """The variance factors of rows whose nearest kept rows are ``nearest`` (positions
        among the kept rows, (m, neighbours))."""
        return self.of_means(self.clipped[nearest].mean(axis=1))

    def of_means(self, means: np.ndarray) -> np.ndarray:
        """The variance factors of rows whose nearest kept rows' ``clipped`` values average
        ``means``."""
        return _shrunk(means / self.mean, self.shrink, self.limit, self.geometric)


def _shrunk(local: np.ndarray, shrink: float, limit: float, geometric: bool) -> np.ndarray:
    """Local variance ratios shrunk towards 1 by ``shrink`` (``geometric``: their logarithms,
    which keeps the ratio between a quiet and a noisy region instead of compressing the quiet
    side most), within [1 / limit, limit]."""
    if geometric:
        with np.errstate(divide="ignore"):
            shrunk = np.exp(shrink * np.log(np.maximum(local, 1.0 / limit)))
    else:
        shrunk = 1.0 + shrink * (local - 1.0)
    return np.clip(shrunk, 1.0 / limit, limit)


def local_neighbours(kept_rows: int) -> int:
    """The kept rows the local scale averages: ``NEIGHBOUR_SHARE`` of them, at least
    ``MIN_NEIGHBOURS``, at most ``MAX_NEIGHBOURS`` and one fewer than them."""
    share = int(np.ceil(NEIGHBOUR_SHARE * kept_rows))
    return min(kept_rows - 1, MAX_NEIGHBOURS, max(MIN_NEIGHBOURS, share))


def local_variance(
    coordinates: np.ndarray,
    standardized: np.ndarray,
    kept: np.ndarray,
    limit: float = LOCAL_RANGE,
    passes: int = 2,
    neighbours: int | None = None,
    geometric: bool = False,
) -> LocalVariance:
    """Each row's variance factor from its nearest kept rows in ``coordinates`` (the row itself
    left out), relative to the kept rows' mean, shrunk towards 1 by the share of its spread
    that is not sampling noise, within [1 / ``limit``, ``limit``]. ``passes`` over one
    neighbour search: each after the first clips each squared residual at ``CLIP`` times the
    previous pass's factor, so that a wide region is not clipped to the global scale (where
    the variance varies 25-fold, two passes recover about 19-fold of it, five the whole).
    ``neighbours``: how many kept rows each row averages (None: :func:`local_neighbours`);
    ``geometric``: shrink the logarithms of the factors (:func:`_shrunk`), by the share of
    their spread that each neighbourhood's own relative variance does not explain (the global
    variance of the residuals, which the linear shrinkage divides by, includes the spread it
    estimates: where the noise varies 36-fold it shrank 0.2 of the way to 1)."""
    size = int(kept.sum())
    neighbours = local_neighbours(size) if neighbours is None else min(neighbours, size - 1)
    factors = np.ones(standardized.size)
    if neighbours < 2:
        return LocalVariance(
            factors, 0.0, np.ones(size), 1.0, 0.0, max(neighbours, 0), limit, geometric
        )
    _, nearest = other_kept_neighbours(coordinates, kept, neighbours)
    for _ in range(passes):
        clipped = np.minimum(standardized, CLIP * factors)[kept]
        mean = float(np.mean(clipped))
        if not mean > 0:
            return LocalVariance(
                np.ones(standardized.size), 0.0, clipped, 1.0, 0.0, neighbours, limit, geometric
            )
        local = clipped[nearest].mean(axis=1) / mean
        if geometric:  # the logarithms' spread against each neighbourhood's own sampling noise
            around = clipped[nearest]
            level = np.maximum(around.mean(axis=1), np.finfo(float).tiny)
            noise = float(np.mean((around / level[:, None]).var(axis=1))) / neighbours
            spread = float(np.var(np.log(np.maximum(local, 1.0 / limit))))
        else:
            noise = float(np.var(clipped)) / mean**2 / neighbours
            spread = float(np.var(local))
        shrink = max(0.0, 1.0 - noise / spread) if spread > 0 else 0.0
        factors = _shrunk(local, shrink, limit, geometric)
    return LocalVariance(
        factors, shrink**2 * spread, clipped, mean, shrink, neighbours, limit, geometric
    )


class HonestFit(Protocol):
    """A fit's honest residuals (n, C) and their studentized squared norms (n,)."""

    residuals: np.ndarray
    studentized: np.ndarray


@dataclass(frozen=True)
class Evidence:
    """Every row's evidence after the second stage (in the units the fit saw)."""

    kept: np.ndarray  # bool: the rows kept
    pvalues: np.ndarray  # (n,): two-sided p-value of the honest residual
    z: np.ndarray  # (n,): the robust z, the normal quantile of the p-value signed as the residual
    residuals: np.ndarray  # (n,) or (n, C): honest residual y - f(x)
    fitted: np.ndarray  # (n,) or (n, C): the honest prediction f(x)
    x_distance: np.ndarray  # (n,): see :func:`x_distance`
    reference: Reference


def x_distance(X: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Each row's Euclidean distance to its ``X_NEIGHBOURS``-th nearest kept row (itself left
    out), over the median of that distance among the kept rows (1 where that median is 0):
    a few kept rows near a flagged group (hbk's four good leverage rows beside its ten bad
    ones) do not make its region a usual one."""
    neighbours = min(X_NEIGHBOURS, int(kept.sum()) - 1)
    if neighbours < 1:
        return np.zeros(X.shape[0])
    distance = other_kept_neighbours(X, kept, neighbours)[0][:, -1]
    typical = float(np.median(distance[kept]))
    return distance / typical if typical > 0 else distance


def judge(
    X: np.ndarray | None,
    fitted: np.ndarray,
    studentized: np.ndarray,
    kept: np.ndarray,
    honest: bool = False,
) -> tuple[np.ndarray, Reference]:
    """p-values of every row: ``studentized`` (squared honest residuals of variance sigma^2)
    over sigma^2, over the local variance (in x, or in the honest fitted values ``fitted``
    (n, C) where C = 1; X None: in the fitted values only; from the ``kept`` rows), against
    the reference fitted on every row.

    sigma^2 is the kept rows' median over the chi^2 quantile of their share
    (:func:`..trimming.truncated_variance`: they are the rows of smallest residual); where
    every row's residual is ``honest`` (held out of the choice of the rows too), at least every
    row's median over the chi^2 median, which the choice of the kept rows cannot shrink and
    fewer than half the rows cannot break."""
    finite = np.isfinite(studentized)
    n_outputs = fitted.shape[1]
    variance = truncated_variance(studentized[finite], kept[finite], n_outputs)
    if honest:
        everywhere = float(np.median(studentized[finite])) / stats.chi2.ppf(0.5, df=n_outputs)
        variance = max(variance, everywhere)
    if not variance > 0:
        return np.ones(studentized.size), Reference(np.inf, 1.0)
    scaled = np.where(finite, studentized / variance, np.inf)
    candidates = [] if X is None else [local_variance(X, scaled, kept)]
    if n_outputs == 1:
        spread = float(np.std(fitted[kept]))
        candidates.append(local_variance(fitted / (spread if spread > 0 else 1.0), scaled, kept))
    chosen = max(candidates, key=lambda item: item.explained, default=None)
    factors = np.ones(scaled.size) if chosen is None else chosen.factors
    with np.errstate(invalid="ignore"):
        z = np.sqrt(scaled / factors / n_outputs)
    reference = fit_reference(z)  # every row: the truncation keeps gross outliers out
    return reference.pvalues(z), reference


def robust_z(residuals: np.ndarray, pvalues: np.ndarray) -> np.ndarray:
    """The normal quantile of each p-value, signed as the residual (of the first output)."""
    return np.sign(residuals[:, 0]) * stats.norm.isf(np.clip(pvalues, 1e-300, 1.0) / 2.0)


def second_stage(
    X: np.ndarray,
    Y: np.ndarray,
    start_kept: np.ndarray,
    held_out: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
) -> Evidence:
    """Give back the start's flagged rows that are plausible (p-value at least
    ``FLAG_LEVEL``), judging again from the rows kept until they repeat (at most
    ``ROUNDS`` times).

    ``held_out(kept)`` returns every row's residual (n, C) and studentized squared norm (n,)
    held out of the fit that predicts it and of the choice of that fit's rows, those rows
    chosen from ``kept`` (:func:`.high_breakdown.held_out_residuals`).
    """
    flagged = ~start_kept
    kept = start_kept.copy()
    for _ in range(ROUNDS):
        residuals, studentized = held_out(kept)
        pvalues, reference = judge(X, Y - residuals, studentized, kept, honest=True)
        updated = ~(flagged & (pvalues < FLAG_LEVEL))
        if np.array_equal(updated, kept):
            break
        kept = updated
    z = robust_z(residuals, pvalues)
    return Evidence(kept, pvalues, z, residuals, Y - residuals, x_distance(X, kept), reference)


def reachable(
    X: np.ndarray, kept: np.ndarray, candidates: np.ndarray, distance: np.ndarray
) -> np.ndarray:
    """The ``candidates`` reached from the ``kept`` rows: those within ``UNUSUAL_X`` of them
    (``distance``, :func:`x_distance`), then, step by step, each candidate whose nearest
    reached or kept row r is at most ``UNUSUAL_X`` times r's own spacing (the distance from
    r to its ``X_NEIGHBOURS``-th nearest row of any kind) away, until none is added. A
    relation steeper at the edges of x is followed along them where the rows thin out (the
    tails of normal x: 1-d spacing there is 20 times the centre's); a group apart from the
    kept rows, tight or lone, stays out (the gap to it is many spacings of the rows beside
    it)."""
    reached = candidates & (distance <= UNUSUAL_X)
    rest = candidates & ~reached
    if not rest.any():
        return reached
    every = np.ones(kept.size, dtype=bool)
    spacing = other_kept_neighbours(X, every, min(X_NEIGHBOURS, kept.size - 1))[0][:, -1]
    while rest.any():
        base = kept | reached
        gap, nearest = other_kept_neighbours(X, base, 1)
        step = rest & (gap[:, 0] <= UNUSUAL_X * spacing[np.flatnonzero(base)[nearest[:, 0]]])
        if not step.any():
            break
        reached |= step
        rest &= ~step
    return reached


def release_misfit(
    X: np.ndarray, evidence: Evidence, flexible: Callable[[np.ndarray], HonestFit]
) -> Evidence:
    """Misfit is not an outlier: give back the flagged rows that a more flexible fit explains,
    where they do not harm its predictions of the kept rows. Called where the start chose
    the rbf family (its bulk needed a flexible model): outliers are defined relative to the
    simplest model that explains the bulk, and where that is linear, a group a smooth fit
    could follow is still an outlier (hbk's and starsCYG's clusters; a tight cluster 6 units
    out in 5 dimensions lies within ``UNUSUAL_X`` of the kept rows, and an rbf fit follows
    it).

    ``flexible(rows)``: the rbf fit on the rows ``rows`` (matrix and alpha chosen on them),
    every row's honest residual (leave-one-out for those rows) and its studentized squared
    norm. It is fitted on every row, then again (matrix and alpha chosen again) on the kept
    rows and those it finds plausible (p-value at least ``FLAG_LEVEL`` under it,
    :func:`judge`), until those rows repeat (at most ``FLEXIBLE_PASSES`` fits: the first fit
    with the gross errors can find a few of them plausible, the next without them does not).
    Where a fit's kept rows' median squared residual is at most ``HARM_RATIO`` times theirs
    under the robust fit (``evidence``, held out), the flagged rows it fits with a p-value of at
    least ``FLAG_LEVEL``, none of whose ``CONFLICT_NEIGHBOURS`` nearest kept rows it rejects
    (where the robust fit does not), whose ``LOCAL_NEIGHBOURS`` nearest kept rows it predicts
    with at most ``LOCAL_HARM`` times their squared residuals under the robust fit, and that
    are reached from the kept rows (:func:`reachable`: within ``UNUSUAL_X`` of them, or in
    steps of a few spacings of the rows beside them), are kept, with its evidence. On the
    SubQ papers' polynomial problem (a near-noiseless cubic of normal x, 20% oblivious noise)
    the one-step rule gave back none of the 108 correct tail rows flagged, the steps 51.

    Gross outliers harm a flexible fit's predictions around them: where they are few, their
    p-values under it stay small and they leave its rows; a quarter of the rows 10 to 15
    standard deviations off, which keep p-values above it, make the kept rows' squared errors
    about ten times larger. A relation steeper at its edge than in its bulk does no such harm,
    and the flexible fit explains the rows there (yacht hulls' resistance at high speed: 98 of
    308 rows flagged after the second stage, 12 after this; the kept rows' errors 1.5 to 2.3
    times theirs under the robust fit, which can be that precise on its bulk alone). A
    coherent shift of the targets over a region of x is no such relation: a flexible fit that
    follows it bends away from the kept rows beside it (the 20% of rows of largest x1 shifted
    by 3: 147 of 160 given back without the local test, none with it). Fitted with the gross
    errors, the matrix and alpha miss such a relation; chosen again without
    them, they find it (300 rows of exp(5 x1) + x2 with 15 targets 10 standard deviations
    off: 30 to 47 correct rows flagged with the first fit alone, 7 or 8 with both). A
    flexible fit bent to a group beside good rows rejects those rows (Hawkins-like bad
    leverage rows beside good ones): the group stays flagged."""
    kept = evidence.kept
    robust = float(np.median(np.sum(evidence.residuals[kept] ** 2, axis=1)))
    rows = np.ones(kept.size, dtype=bool)
    release = np.zeros(kept.size, dtype=bool)
    residuals, pvalues = evidence.residuals.copy(), evidence.pvalues.copy()
    around = min(max(LOCAL_NEIGHBOURS, CONFLICT_NEIGHBOURS), int(kept.sum()) - 1)
    nearest = np.flatnonzero(kept)[other_kept_neighbours(X, kept, around)[1]]  # nearest first
    for _ in range(FLEXIBLE_PASSES):  # every row, then without the rows it finds implausible
        fit = flexible(rows)
        fitted = evidence.fitted + evidence.residuals - fit.residuals
        flexible_pvalues = judge(X, fitted, fit.studentized, kept, honest=True)[0]
        plausible = flexible_pvalues >= FLAG_LEVEL
        harmed = float(np.median(np.sum(fit.residuals[kept] ** 2, axis=1)))
        if harmed <= HARM_RATIO * robust:
            candidates = ~kept & ~release & rows & plausible
            # not beside a kept row that the flexible fit, bent to them, rejects
            rejected = kept & ~plausible & (evidence.pvalues >= FLAG_LEVEL)
            candidates &= ~rejected[nearest[:, :CONFLICT_NEIGHBOURS]].any(axis=1)
            # nor where it predicts the kept rows around them worse than the robust fit
            local_flexible = np.sum(fit.residuals**2, axis=1)[nearest].sum(axis=1)
            local_robust = np.sum(evidence.residuals**2, axis=1)[nearest].sum(axis=1)
            candidates &= local_flexible <= LOCAL_HARM * local_robust
            candidates = reachable(X, kept | release, candidates, evidence.x_distance)
            residuals[candidates] = fit.residuals[candidates]
            pvalues[candidates] = flexible_pvalues[candidates]
            release |= candidates
        following = kept | plausible
        if np.array_equal(following, rows):
            break
        rows = following
    if not release.any():
        return evidence
    kept = kept | release
    return Evidence(
        kept,
        pvalues,
        robust_z(residuals, pvalues),
        residuals,
        evidence.fitted + evidence.residuals - residuals,
        x_distance(X, kept),
        evidence.reference,
    )


def flag_kinds(flagged: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """ "unusual x" for a flagged row farther than ``UNUSUAL_X`` from the kept rows, "wrong y"
    for another flagged row, "" for a kept one."""
    return np.where(flagged, np.where(distance > UNUSUAL_X, "unusual x", "wrong y"), "")


EVIDENCE_COLUMNS = ("flagged", "kind", "residual", "fitted", "robust_z", "pvalue", "x_distance")


def evidence_table(evidence: Evidence, scale: float, flagged: np.ndarray) -> dict[str, np.ndarray]:
    """The per-row evidence as columns of one length (``pandas.DataFrame(table)`` shows it;
    a dict of arrays, which skops saves), residuals and fitted values times ``scale`` (the
    factor the fit divided the targets by): ``flagged``, the rows the fit left out (those
    of the second stage, or a given epsilon's trim); ``kind``, "wrong y" for a flagged
    row among the kept rows in x, "unusual x" for one farther than ``UNUSUAL_X`` typical
    spacings from every kept row (the fit extrapolates there), "" for a kept row;
    ``residual`` y - f(x) (honest: leave-one-out for a kept row) and ``fitted`` f(x) of the
    first output; ``robust_z``, the normal quantile of the p-value signed as the residual;
    ``pvalue``; ``x_distance``."""
    kind = flag_kinds(flagged, evidence.x_distance)
    return {
        "flagged": np.asarray(flagged, dtype=bool),
        "kind": kind,
        "residual": evidence.residuals[:, 0] * scale,
        "fitted": evidence.fitted[:, 0] * scale,
        "robust_z": evidence.z,
        "pvalue": evidence.pvalues,
        "x_distance": evidence.x_distance,
    }
