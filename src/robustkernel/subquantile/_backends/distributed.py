"""One Subquantile fit over a Dask array: the feature model without an n x m matrix in memory.

``SubquantileKernelRegressor(n_components=m).fit(X, y)`` and ``SubquantileKernelClassifier``
with X (and y) ``dask.array`` objects (rows in chunks, on a ``dask.distributed`` cluster or
Dask's local scheduler) run the alternating solver as passes over the chunks; each pass is one
Dask graph:

* features: the Nystroem map, fitted on m landmark rows drawn with ``random_state`` exactly as
  ``Nystroem.fit`` on the whole X would draw them (a permutation of the rows, the first m), is
  applied to every chunk of X in every pass: the n x m features are never stored, on the
  client or on a worker;
* the fit on the kept rows S. Squared loss: the sums Z_S^T Z_S, Z_S^T Y_S, Z_S^T 1, 1^T Y_S and
  |S| (one pass, a tree reduction), then the (m + 1)-dimensional ridge solve on the client
  (``_refits.ridge_from_sums``, which the in-memory ``FeatureRidgeSubsetFitter`` solves too).
  Logistic / softmax loss: L-BFGS on the client (``_refits.lbfgs_penalized``, the in-memory
  fitter's loop), each objective and gradient evaluation one pass; intermediate subsets are
  fitted to the rough tolerance and the last one polished, as in memory;
* the k-th smallest loss: exact, by ``dask.array.topk`` on the smaller side (at most
  min(k, n - k + 1) values travel to one worker), ties broken by row index as the in-memory
  ``argsort(kind="stable")`` does (a cumulative count of the rows at the threshold); a
  classifier's floors (half of each class kept) are selected the same way, class by class.

The loop stops when the kept rows repeat, as in memory, so the kept set and the model are those
of the in-memory feature path up to rounding (tested on a LocalCluster). Per-row state stays on
the workers: the losses and kept rows of every pass are persisted Dask arrays, the client sees
the objective, the count of rows that changed and a digest of the kept rows (16 bytes per
chunk: the loop's memory of the sets it has seen), and the fitted per-row attributes
(``inlier_mask_``, ``outlier_scores_``, ``row_weights_``) are Dask arrays; the client holds
O(m^2) and the task graphs, whatever the rows (tested at two sizes). ``refine="reject"``
of the regressor (the default refine="auto" with epsilon="auto") runs distributed too: the
leverages q_i = x_i^T A^-1 x_i of the kept rows' ridge (A from the same sums) per chunk, the
median of the kept studentized losses as an exact order statistic.

epsilon, alpha and gamma ``"auto"`` are chosen by the in-memory fit on ``AUTO_SAMPLE_ROWS``
rows drawn with ``random_state`` (all of them when there are fewer): its ``epsilon_`` and
``gamma_`` are used as given, and its ``alpha_`` times n / (sample rows), the same penalty per
row (the objective sums the losses). What runs in memory only: refine="biweight", the
classifier's refine="reject" at a given epsilon (out-of-fold fits), the gradient solvers,
random starts (n_init), the norm ball, random Fourier features, a link other than the identity
and device=; the fit's one validation (``_settings.BACKEND_SUPPORT["dask"]``) refuses each of them
with a ValueError naming it. Like every backend, :func:`distributed_fit` returns a
:class:`._result.FitResult` and never writes the estimator.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.stats import chi2
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from tqdm.auto import tqdm

from ..._fractions import n_kept, trimmed_fraction
from ..._kernel_model.estimator import single_class_error
from ..._kernel_model.kernels import kernel_params
from ..._kernel_model.losses import BinaryLogLoss, HingeLoss, Loss, SoftmaxLoss, SquaredLoss
from ..._kernel_model.pairwise import PairwisePlatt
from ...trimming import REJECTION_LEVEL, alternate, drop_implausible
from .._automatic.feature_scaling import FeatureScaling
from .._result import FitResult
from .._settings import FitSettings, column_units, is_dask_array
from .._solve.features import fit_feature_map
from .._solve.objective import Evaluation
from .._solve.refits import ROUGH_TOL, gram_top_directions, lbfgs_penalized, ridge_from_sums
from .._solve.solvers import SolverResult
from .._tasks import Task

AUTO_SAMPLE_ROWS = 20_000
PERMUTED_ROWS = 100_000  # landmarks drawn as Nystroem.fit draws them up to this many rows
LBFGS_TOL = 1e-6  # the in-memory LbfgsSubsetFitter's
LBFGS_MAX_ITER = 1000


def distributed_fit(
    settings: FitSettings, task: Task, X: Any, y: Any, sample_fit: Callable[..., Any]
) -> FitResult:
    """Fit the validated configuration on the Dask array X and y (a Dask array, or n values
    taken in X's row chunks; :func:`_checked_inputs`); ``sample_fit(X, y)`` fits it in
    memory (an estimator with ``epsilon_``, ``alpha_``, ``gamma_``) on the "auto" sample."""
    y = _checked_inputs(task, X, y)
    X = X.astype(np.float64).rechunk({1: -1})
    n, d = X.shape
    hinge = settings.params.get("loss") == "squared_hinge"
    epsilon, alpha, gamma, sample = _resolved_settings(settings, X, y, sample_fit, hinge)
    targets = _encoded_targets(task, y, X.chunks[0], settings.estimator, hinge)
    chosen: dict[str, Any] = {}
    start = None
    in_units = column_units(settings, task) is not None
    if settings.kernel == "auto":  # the sample's kernel; its inliers start the fit
        resolved = {"kernel": sample.kernel_, "degree": sample.degree_, "coef0": sample.coef0_}
        settings = settings.replace(**resolved)
        start = _sample_model_losses(sample, X, targets.Y)
    if in_units:  # the sample's units (its gamma_ is in them)
        scaling = FeatureScaling(sample.feature_center_, sample.feature_scale_)
        X = X.map_blocks(scaling.transform, dtype=np.float64)
        chosen["feature_scaling"] = scaling
    feature_map = _landmark_feature_map(settings, X, gamma)
    data = _ChunkedData(X, targets.Y, feature_map, targets.loss)
    k = n_kept(n, epsilon)
    max_iter = settings.options.max_iter

    def select(losses: Any) -> tuple[Any, float]:
        return _subquantile(losses, k, targets.floors)

    bar = tqdm(desc="SubQ on Dask", unit="pass", disable=not settings.verbose)
    squared = isinstance(targets.loss, SquaredLoss)
    if squared:
        fit = _RidgeFitter(data, alpha, settings.fit_intercept)
        w, b = fit(data.every_row() if start is None else select(start)[0])
        result = _alternate(data, fit, select, alpha, w, b, max_iter, bar)
    else:
        # the top eigenvectors of Z^T Z over every row precondition L-BFGS (one more pass)
        m = data.m
        gram = data.design(data.every_row())[: m * m]
        top = gram_top_directions(gram.reshape(m, m))
        rough = _lbfgs_fitter(data, alpha, settings.fit_intercept, ROUGH_TOL, top)
        w, b = rough(data.every_row(), np.zeros((data.m, data.C)), np.zeros(data.C))
        first = _alternate(data, rough, select, alpha, w, b, max_iter, bar)
        exact = _lbfgs_fitter(data, alpha, settings.fit_intercept, LBFGS_TOL, top)
        result = _alternate(data, exact, select, alpha, first.w, first.b, max_iter, bar)
        result = SolverResult(
            result.w, result.b, result.evaluation, first.n_iter + result.n_iter,
            first.history + result.history[1:], result.converged,
        )
    if squared and settings.refine == "reject" and epsilon > 0:
        result = _reject_implausible(data, fit, alpha, settings.fit_intercept, result, bar)
    bar.close()
    if not result.converged:
        warnings.warn(
            f"The kept rows still changed after max_iter={max_iter} passes.",
            ConvergenceWarning,
            stacklevel=3,
        )
    evaluation = result.evaluation
    return FitResult(
        coef=result.w,
        intercept=np.atleast_1d(result.b),
        feature_map=feature_map,
        X_fit=None,
        classes=targets.classes,
        single_output=targets.single_output,
        inlier_mask=evaluation.mask,
        outlier_scores=evaluation.losses,
        threshold=float(evaluation.threshold),
        row_weights=evaluation.mask.astype(float).persist(),
        objective_history=np.asarray(result.history),
        n_iter=result.n_iter,
        converged=result.converged,
        best_start=0,
        epsilon=trimmed_fraction(evaluation.mask),
        alpha=alpha,
        gamma=gamma,
        kernel=settings.kernel, degree=settings.degree, coef0=settings.coef0,
        n_features_in=d,
        loss="squared_hinge" if hinge else None,
        calibration=PairwisePlatt(sample.probA_, sample.probB_) if hinge else None,
        **chosen,
    )


def _checked_inputs(task: Task, X: Any, y: Any) -> Any:
    """Refuse X, y the fit cannot use, by name; y as a Dask array (a NumPy y or any array-like
    is wrapped in the row chunks of X: it is n values, as the per-row results are).

    Shapes, lengths and dtypes are read from the arrays' metadata. Values take one pass, one
    task per chunk, X and y computed together (only float X, float or object y: integers and
    booleans are finite): the first NaN, infinity or missing label is named with its 0-based
    row and its chunk."""
    import dask.array as da

    if not is_dask_array(y):
        y = np.asarray(y)
        rows = X.chunks[0] if X.ndim == 2 and y.ndim and len(y) == X.shape[0] else "auto"
        y = da.from_array(y, chunks=(rows, *y.shape[1:]) if y.ndim else ())
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-d Dask array (rows, features); got shape {X.shape}.")
    if y.ndim not in (1, 2) or (task.classifier and y.ndim != 1):
        labels = "1-d labels" if task.classifier else "1-d (or 2-d) targets"
        raise ValueError(f"y must hold {labels}; got shape {y.shape}.")
    for name, array in (("X", X), ("y", y)):
        if np.isnan(array.shape[0]):
            raise ValueError(
                f"{name} has unknown chunk sizes (rows selected by a Dask mask?): call "
                f"{name}.compute_chunk_sizes() before the fit."
            )
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows and y {y.shape[0]}; they must match.")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X has no {'rows' if X.shape[0] == 0 else 'feature column'}.")
    numeric = {"X": X.dtype} | ({} if task.classifier else {"y": y.dtype})
    for name, dtype in numeric.items():
        if dtype.kind not in "biuf":
            raise ValueError(
                f"{name} has dtype {dtype}; the fit takes numeric {name} (bool, integer or "
                f"float): convert it first, e.g. {name}.astype(float)."
            )
    if y.dtype.kind in "cV":
        raise ValueError(f"y has dtype {y.dtype}: such class labels are not supported.")
    _refuse_nonfinite({name: a for name, a in (("X", X), ("y", y)) if a.dtype.kind in "fO"})
    return y


def _refuse_nonfinite(arrays: dict[str, Any]) -> None:
    """One pass over ``arrays`` (their chunks computed together): ValueError at the first NaN,
    infinity or missing label, naming the array, the row, X's column and the chunk."""
    import dask

    tasks, places = [], []
    for name, array in arrays.items():
        blocks = array.to_delayed()
        blocks = blocks.reshape(blocks.shape[0], -1)
        rows = np.cumsum((0, *array.chunks[0]))
        columns = np.cumsum((0, *(array.chunks[1] if array.ndim == 2 else (1,))))
        for (i, j), block in np.ndenumerate(blocks):
            tasks.append(dask.delayed(_first_nonfinite)(block))
            places.append((name, i, rows[i], columns[j], len(rows) - 1))
    for (name, chunk, row, column, nchunks), found in zip(
        places, dask.compute(*tasks), strict=True
    ):
        if found is not None:
            at = f"row {row + found[0]}" + (f", column {column + found[1]}" if name == "X" else "")
            raise ValueError(
                f"{name} holds {found[2]} ({at}, in chunk {chunk + 1} of {nchunks} along the "
                "rows); drop or impute such rows before the fit."
            )


def _first_nonfinite(block: np.ndarray) -> tuple[int, int, str] | None:
    """(row, column, what) of the first NaN or infinity (float ``block``) or missing value
    (object ``block``: None, NaN, pandas.NA) in ``block``; None if there is none."""
    import pandas as pd

    block = block.reshape(len(block), -1)
    bad = pd.isna(block) if block.dtype.kind == "O" else ~np.isfinite(block)
    rows = np.flatnonzero(bad.any(axis=1))
    if rows.size == 0:
        return None
    column = int(np.flatnonzero(bad[rows[0]])[0])
    value = block[rows[0], column]
    missing = value is None or value is pd.NA
    return int(rows[0]), column, "a missing value" if missing else f"the value {value}"


class _ChunkedData:
    """X, the encoded targets Y (n, C) and the feature map: per-chunk computations as passes."""

    def __init__(self, X: Any, Y: Any, feature_map: Any, loss: Loss) -> None:
        self.X, self.Y, self.feature_map, self.loss = X, Y, feature_map, loss
        self.n = X.shape[0]
        self.m = feature_map.components_.shape[0]
        self.C = loss.n_outputs(np.empty((0, Y.shape[1])))  # the outputs (the hinge: pairs)
        self.nblocks = len(X.chunks[0])

    def every_row(self) -> Any:
        """A Dask mask of all rows, chunked as X."""
        import dask.array as da

        return da.ones(self.n, dtype=bool, chunks=(self.X.chunks[0],))

    def losses(self, w: np.ndarray, b: np.ndarray) -> Any:
        """The per-row losses of f = Z w + b, persisted (shape (n,))."""
        transform, loss = self.feature_map.transform, self.loss

        def block(Xc: np.ndarray, Yc: np.ndarray) -> np.ndarray:
            return loss.loss(transform(Xc) @ w + b, Yc)

        return self.X.map_blocks(
            block, self.Y, drop_axis=1, dtype=np.float64, chunks=(self.X.chunks[0],)
        ).persist()

    def sums(self, per_chunk: Callable[..., np.ndarray], mask: Any, size: int) -> np.ndarray:
        """sum over the chunks of ``per_chunk(Z, Y, kept)`` (a vector of ``size``)."""
        transform = self.feature_map.transform

        def block(Xc: np.ndarray, Yc: np.ndarray, kept: np.ndarray) -> np.ndarray:
            return per_chunk(transform(Xc), Yc, kept[:, 0])[None, :]

        parts = self.X.map_blocks(
            block, self.Y, mask[:, None], dtype=np.float64,
            chunks=((1,) * self.nblocks, (size,)),
        )
        return parts.sum(axis=0).compute()

    def design(self, mask: Any) -> np.ndarray:
        """The kept rows' Z^T Z (raveled), Z^T 1 and count, in one vector: one pass."""
        m = self.m

        def per_chunk(Z: np.ndarray, Y: np.ndarray, kept: np.ndarray) -> np.ndarray:
            Zs = Z[kept]
            return np.concatenate([(Zs.T @ Zs).ravel(), Zs.sum(axis=0), [kept.sum()]])

        return self.sums(per_chunk, mask, m * m + m + 1)


def _resolved_settings(
    settings: FitSettings, X: Any, y: Any, sample_fit: Callable[..., Any], hinge: bool
) -> tuple[float, float, float | None, Any]:
    """epsilon, alpha and gamma of the Dask fit: as given, or those of the in-memory fit on a
    sample of rows where "auto" (alpha scaled to the whole data's row count); and that fit
    (None where nothing is "auto" and the loss is not the squared hinge, whose Platt
    sigmoids come from it: the sample's model has the same penalty per row). kernel="auto"
    is chosen by the sample's fit too."""
    automatic = ("epsilon", "alpha", "gamma", "kernel")
    if not hinge and not any(settings.is_auto(name) for name in automatic):
        return float(settings.epsilon), float(settings.alpha), settings.gamma, None
    n = X.shape[0]
    rows = sample_rows(n, settings.random_state)
    sample = sample_fit(X[rows].compute(), np.asarray(y[rows].compute()))
    epsilon = sample.epsilon_ if settings.is_auto("epsilon") else settings.epsilon
    alpha = float(sample.alpha_) * (n / rows.size) if settings.is_auto("alpha") else settings.alpha
    return float(epsilon), float(alpha), sample.gamma_, sample


def _sample_model_losses(sample: Any, X: Any, Y: Any) -> Any:
    """The squared residuals of every row under the sample's in-memory model (kernel="auto":
    the rows of smallest residual start the Dask fit, so that a cluster the sample's
    high-breakdown start flagged is not taken back by a start from every row)."""

    def block(Xc: np.ndarray, Yc: np.ndarray) -> np.ndarray:
        predictions = np.asarray(sample.predict(Xc), dtype=float).reshape(Yc.shape)
        return np.sum((Yc - predictions) ** 2, axis=1)

    return X.map_blocks(
        block, Y, drop_axis=1, dtype=np.float64, chunks=(X.chunks[0],)
    ).persist()


def sample_rows(n: int, random_state: Any) -> np.ndarray:
    """The sorted rows of the in-memory sample: ``AUTO_SAMPLE_ROWS`` of n drawn with
    ``random_state``, or all of them when there are fewer."""
    if n <= AUTO_SAMPLE_ROWS:
        return np.arange(n)
    return np.sort(check_random_state(random_state).choice(n, AUTO_SAMPLE_ROWS, replace=False))


@dataclass(frozen=True)
class _DaskTargets:
    """Y as a (n, C) float Dask array, its loss, a classifier's floors (labels, minimum per
    class) and classes, and whether predictions are 1-D."""

    Y: Any
    loss: Loss
    floors: tuple[Any, np.ndarray] | None
    classes: np.ndarray | None
    single_output: bool


def _encoded_targets(
    task: Task, y: Any, row_chunks: tuple[int, ...], estimator: str, hinge: bool = False
) -> _DaskTargets:
    """The targets of ``task`` chunked as the rows of X (``KernelModel``'s encoding, on Dask);
    a classifier's loss is the log loss, or with ``hinge`` the squared hinge per pair."""
    import dask.array as da

    y = y.rechunk((row_chunks,) + ((-1,) if y.ndim == 2 else ()))
    if not task.classifier:
        Y = (y if y.ndim == 2 else y[:, None]).astype(np.float64)
        return _DaskTargets(Y, SquaredLoss(), None, None, y.ndim == 1)
    classes = np.unique(da.unique(y).compute())
    if classes.size < 2:
        raise single_class_error(estimator, classes[0])
    labels = y.map_blocks(lambda block: np.searchsorted(classes, block), dtype=np.int64)
    C = 1 if classes.size == 2 else classes.size
    Y = labels.map_blocks(
        lambda block: (block[:, None] == np.arange(C)).astype(np.float64) if C > 1
        else block[:, None].astype(np.float64),
        new_axis=1, dtype=np.float64, chunks=(row_chunks, (C,)),
    )
    counts = np.bincount(labels.compute(), minlength=classes.size)
    loss = BinaryLogLoss() if C == 1 else SoftmaxLoss()
    if hinge:
        loss = HingeLoss.named("squared_hinge")
    return _DaskTargets(Y, loss, (labels, (counts + 1) // 2), classes, classes.size == 2)


def _landmark_feature_map(settings: FitSettings, X: Any, gamma: float | None) -> Any:
    """The Nystroem map on m landmark rows: up to ``PERMUTED_ROWS`` rows those Nystroem.fit(X)
    would take (the first m of a permutation of the rows drawn with ``random_state``: the
    in-memory fit's features), beyond m rows drawn without a permutation of all of them (its
    8 bytes per row on the client)."""
    n = X.shape[0]
    m = min(settings.n_components, n)
    random_state = check_random_state(settings.random_state)
    if n <= PERMUTED_ROWS:
        landmarks = random_state.permutation(n)[:m]
    else:  # Floyd's sampling: O(m) memory
        generator = np.random.default_rng(random_state.randint(2**31))
        landmarks = generator.choice(n, m, replace=False)
    order = np.argsort(landmarks)
    rows = np.empty(m, dtype=int)
    rows[order] = np.arange(m)
    basis = X[np.sort(landmarks)].compute()[rows]
    params = kernel_params(
        settings.kernel, gamma, settings.degree, settings.coef0, settings.kernel_params
    )
    return fit_feature_map("nystroem", m, settings.kernel, params, 0, basis)


class _RidgeFitter:
    """fit(mask) -> (theta (m, C), b (C,)): the ridge on the kept rows, one pass for the sums."""

    def __init__(self, data: _ChunkedData, alpha: float, fit_intercept: bool) -> None:
        self.data, self.alpha, self.fit_intercept = data, alpha, fit_intercept

    def __call__(self, mask: Any, *_: Any) -> tuple[np.ndarray, np.ndarray]:
        m, C = self.data.m, self.data.C

        def per_chunk(Z: np.ndarray, Y: np.ndarray, kept: np.ndarray) -> np.ndarray:
            Zs, Ys = Z[kept], Y[kept]
            return np.concatenate([
                (Zs.T @ Zs).ravel(), (Zs.T @ Ys).ravel(), Zs.sum(axis=0), Ys.sum(axis=0),
                [kept.sum()],
            ])

        s = self.data.sums(per_chunk, mask, m * m + m * C + m + C + 1)
        gram, zy = s[: m * m].reshape(m, m), s[m * m : m * m + m * C].reshape(m, C)
        ones, y_total = s[m * m + m * C : -1 - C], s[-1 - C : -1]
        return ridge_from_sums(gram, zy, ones, y_total, s[-1], self.alpha, self.fit_intercept)


def _lbfgs_fitter(
    data: _ChunkedData,
    alpha: float,
    fit_intercept: bool,
    tol: float,
    top: tuple[np.ndarray, np.ndarray] | None,
) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """fit(mask, w0, b0) -> (theta, b): logistic / softmax on the kept rows by L-BFGS, every
    objective and gradient evaluation one pass over the chunks, preconditioned along ``top``
    (:func:`.refits.gram_top_directions`)."""
    m, C, loss = data.m, data.C, data.loss

    def fit(mask: Any, w0: np.ndarray, b0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        k = int(mask.sum().compute())

        def data_term(v: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
            def per_chunk(Z: np.ndarray, Y: np.ndarray, kept: np.ndarray) -> np.ndarray:
                losses, G = loss.loss_and_gradient(Z @ v + b, Y)
                G *= kept[:, None]
                return np.concatenate([[losses[kept].sum()], (Z.T @ G).ravel(), G.sum(axis=0)])

            s = data.sums(per_chunk, mask, 1 + m * C + C)
            return float(s[0]), s[1 : 1 + m * C].reshape(m, C), s[1 + m * C :]

        return lbfgs_penalized(
            data_term, w0, b0, alpha, k, fit_intercept=fit_intercept, tol=tol,
            max_iter=LBFGS_MAX_ITER, top=top,
        )

    return fit


def _alternate(
    data: _ChunkedData,
    fit: Callable[..., tuple[np.ndarray, np.ndarray]],
    select: Callable[[Any], tuple[Any, float]],
    alpha: float,
    w: np.ndarray,
    b: np.ndarray,
    max_iter: int,
    bar: Any,
) -> SolverResult:
    """``_solvers.alternating`` as passes: refit on the kept rows until they repeat
    (:func:`~robustkernel.trimming.alternate`; the sets are remembered by their digests,
    :func:`_digest`)."""
    import dask

    history: list[float] = []

    def evaluated(w: np.ndarray, b: np.ndarray, previous: Any) -> _Pass:
        evaluation = _evaluate(data, select, alpha, w, b)
        history.append(evaluation.objective)
        if previous is None:
            return _Pass(w, b, evaluation, _digest(evaluation.mask).compute().tobytes())
        mask = evaluation.mask
        changed, digest = dask.compute((mask != previous).sum(), _digest(mask))
        bar.update()
        bar.set_postfix(changed_rows=int(changed), threshold=f"{evaluation.threshold:.4g}")
        return _Pass(w, b, evaluation, digest.tobytes())

    def refit(state: _Pass) -> _Pass:
        mask = state.evaluation.mask
        return evaluated(*fit(mask, state.w, state.b), previous=mask)

    run = alternate(refit, lambda state: state.digest, evaluated(w, b, None), max_iter)
    last = run.state
    return SolverResult(last.w, last.b, last.evaluation, run.n_rounds, history, run.converged)


@dataclass(frozen=True)
class _Pass:
    """One fit of the Dask alternation: its coefficients, evaluation and kept rows' digest."""

    w: np.ndarray
    b: np.ndarray
    evaluation: Evaluation
    digest: bytes


def _digest(mask: Any) -> Any:
    """A Dask array of 16 bytes per chunk of the boolean ``mask``: the BLAKE2b digest of each
    chunk's packed bits (equal sets of rows, equal digests)."""

    def chunk_digest(block: np.ndarray) -> np.ndarray:
        digest = hashlib.blake2b(np.packbits(block).tobytes(), digest_size=16).digest()
        return np.frombuffer(digest, dtype=np.uint8)

    return mask.map_blocks(chunk_digest, dtype=np.uint8, chunks=((16,) * mask.numblocks[0],))


def _evaluate(
    data: _ChunkedData,
    select: Callable[[Any], tuple[Any, float]],
    alpha: float,
    w: np.ndarray,
    b: np.ndarray,
) -> Evaluation:
    """Losses and subquantile of (w, b), persisted Dask arrays (the evaluation's ``losses``
    and ``mask``), and the objective."""
    losses = data.losses(w, b)
    mask, threshold = select(losses)
    mask = mask.persist()
    objective = _kept_loss(losses, mask) + alpha * float(np.sum(w * w))
    empty = np.empty((0, data.C))
    return Evaluation(empty, empty, losses, mask, threshold, objective)


def _kept_loss(losses: Any, mask: Any) -> float:
    """The sum of the Dask ``losses`` over the rows of the Dask ``mask``."""
    import dask.array as da

    return float(da.where(mask, losses, 0.0).sum().compute())


def _order_statistic(values: Any, rank: int) -> float:
    """The ``rank``-th smallest (1-based) of the Dask vector ``values``, exactly: by
    ``dask.array.topk`` on the side with fewer values to move."""
    import dask.array as da

    n = values.shape[0]
    if rank <= n - rank + 1:
        return float(-da.topk(-values, rank).min().compute())
    return float(da.topk(values, n - rank + 1).min().compute())


def _smallest(values: Any, count: int) -> Any:
    """Mask of the ``count`` smallest ``values`` (ties broken by row index)."""
    import dask.array as da

    if count <= 0:
        return da.zeros_like(values, dtype=bool)
    threshold = _order_statistic(values, count)
    below, at = values < threshold, values == threshold
    need = count - int(below.sum().compute())
    return below | (at & (da.cumsum(at.astype(np.int64)) <= need))


def _subquantile(
    losses: Any, k: int, floors: tuple[Any, np.ndarray] | None
) -> tuple[Any, float]:
    """``trimming.subquantile`` on a Dask vector: the k rows of smallest loss (under the
    floors: the minimum[c] smallest of each class c first, then the smallest of the rest) and
    the k-th smallest loss."""
    import dask.array as da

    threshold = _order_statistic(losses, k)
    if floors is None:
        return _smallest(losses, k), threshold
    labels, minimum = floors
    required = da.zeros_like(losses, dtype=bool)
    for label, count in enumerate(minimum):
        required = required | _smallest(da.where(labels == label, losses, np.inf), int(count))
    required = required.persist()
    rest = _smallest(da.where(required, np.inf, losses), k - int(minimum.sum()))
    return required | rest, threshold


def _reject_implausible(
    data: _ChunkedData,
    fit: _RidgeFitter,
    alpha: float,
    fit_intercept: bool,
    result: SolverResult,
    bar: Any,
) -> SolverResult:
    """The regressor's refine="reject" as passes: drop the kept rows whose studentized loss
    is beyond five sigma of the kept rows' robust scale, refit, until none is left (the
    in-memory ``_reject_implausible`` with ``_auto_epsilon.regression_rejections``)."""
    import dask.array as da

    history = list(result.history)
    cutoff = chi2.ppf(REJECTION_LEVEL, df=data.C)

    def implausible(mask: Any, state: SolverResult) -> Any:
        factors = _variance_factors(data, mask, alpha, fit_intercept)
        studentized = da.map_blocks(
            _scaled_losses, state.evaluation.losses, factors, dtype=float
        )
        studentized = da.where(da.isfinite(studentized), studentized, 0.0).persist()
        count = int(mask.sum().compute())
        middle = da.where(mask, studentized, np.inf)
        median = _order_statistic(middle, (count + 1) // 2)
        if count % 2 == 0:
            median = 0.5 * (median + _order_statistic(middle, count // 2 + 1))
        variance = median / chi2.ppf(count / data.n / 2.0, df=data.C)
        return (studentized > variance * cutoff).persist()

    def refit(mask: Any, state: SolverResult) -> SolverResult:
        mask = mask.persist()
        w, b = fit(mask)
        values = data.losses(w, b)
        objective = _kept_loss(values, mask) + alpha * float(np.sum(w * w))
        evaluation = replace(state.evaluation, losses=values, mask=mask, objective=objective)
        history.append(objective)
        bar.update()
        return replace(state, w=w, b=b, evaluation=evaluation)

    state = drop_implausible(result.evaluation.mask, result, implausible, refit)
    return replace(state, history=history)


def _scaled_losses(losses: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """losses x factors per chunk; a row of leverage 1 (factor inf, loss 0) gives NaN quietly
    (scored 0 next, as in memory): the chunks run in worker threads, beyond the client's
    ``np.errstate``."""
    with np.errstate(invalid="ignore"):
        return losses * factors


def _variance_factors(data: _ChunkedData, kept: Any, alpha: float, fit_intercept: bool) -> Any:
    """1 / (1 - q_i) for kept rows, 1 / (1 + q_i) for the others, q_i = x_i^T A^-1 x_i with
    x_i = (1, z_i) and A the kept rows' ridge matrix (``auto_epsilon``'s feature version)."""
    m = data.m
    s = data.design(kept)
    A = np.zeros((m + 1, m + 1))
    A[1:, 1:] = s[: m * m].reshape(m, m) + alpha * np.eye(m)
    A[0, 1:] = A[1:, 0] = s[m * m : m * m + m]
    A[0, 0] = s[-1]
    if not fit_intercept:
        A = A[1:, 1:]
    factor = cho_factor(A)
    transform = data.feature_map.transform

    def block(Xc: np.ndarray, keep: np.ndarray) -> np.ndarray:
        keep = keep[:, 0]
        design = transform(Xc)
        if fit_intercept:
            design = np.hstack([np.ones((design.shape[0], 1)), design])
        q = np.sum(design * cho_solve(factor, design.T).T, axis=1)
        with np.errstate(divide="ignore"):
            return np.where(keep, 1.0 / (1.0 - q), 1.0 / (1.0 + q))

    return data.X.map_blocks(
        block, kept[:, None], drop_axis=1, dtype=np.float64, chunks=(data.X.chunks[0],)
    )
