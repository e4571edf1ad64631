"""One Subquantile fit over a Dask array: the feature model without an n x m matrix in memory.

``SubquantileKernelRegressor(n_components=m).fit(X, y)`` with X a ``dask.array`` (rows in
chunks, on a ``dask.distributed`` cluster or Dask's local scheduler) runs the alternating solver
as passes over the chunks; each pass is one Dask graph:

* features: the Nystroem map, fitted on m landmark rows drawn with ``random_state`` exactly as
  ``Nystroem.fit`` on the whole X would draw them (a permutation of the rows, the first m), is
  applied to every chunk of X in every pass (``map_blocks``): the n x m features are never
  stored, on the client or on a worker;
* the fit on the kept rows S: the sums Z_S^T Z_S, Z_S^T y_S, Z_S^T 1, 1^T y_S and |S| (a map
  over the chunks and a tree reduction), then the (m + 1)-dimensional ridge solve on the client
  (``_refits.ridge_from_sums``, which the in-memory ``FeatureRidgeSubsetFitter`` solves too);
* the k-th smallest loss: exact, as the smallest of the n - k + 1 largest losses
  (``dask.array.topk``: each chunk sends at most n - k + 1 values, epsilon n + 1 of them), with
  ties broken by row index as the in-memory ``argsort(kind="stable")`` does (a cumulative count
  of the rows at the threshold).

The loop stops when the kept rows repeat, as in memory, so the kept set and the model are those
of the in-memory feature path up to rounding (tested to 1e-8 on a LocalCluster). What runs in
memory only: epsilon, alpha and gamma "auto" (their leave-one-out and leverage formulas need
the whole Z), refine="reject" / "biweight", the gradient solvers, random starts (n_init),
random Fourier features and classification; a Dask fit with any of them raises ValueError.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from tqdm.auto import tqdm

from .._fractions import n_kept
from .._kernel_model.kernels import kernel_params
from ._base import DEFAULT_MAX_ITER
from ._features import fit_feature_map
from ._objective import Evaluation
from ._refits import ridge_from_sums
from ._solvers import SolverResult


def is_dask_array(X: Any) -> bool:
    """Whether X is a ``dask.array.Array`` (without importing Dask when it is not loaded)."""
    module = type(X).__module__
    return module.startswith("dask.") and type(X).__name__ == "Array"


UNSUPPORTED = {
    "epsilon": ("auto",),
    "alpha": ("auto",),
    "gamma": ("auto",),
    "refine": ("reject", "biweight"),
    "solver": ("gd", "momentum", "nesterov"),
    "approximation": ("rff",),
}


def check_distributed_options(estimator: Any) -> None:
    """ValueError naming every option a Dask fit does not support (see the module docstring)."""
    problems = [
        f"{name}={getattr(estimator, name)!r}"
        for name, values in UNSUPPORTED.items()
        if isinstance(getattr(estimator, name), str) and getattr(estimator, name) in values
    ]
    if estimator.n_components is None:
        problems.append("n_components=None (the exact n x n model)")
    if estimator.n_init != 1 or estimator.radius is not None or estimator.device is not None:
        problems.append("n_init, radius or device")
    if not isinstance(estimator.init, str) or estimator.init != "erm":
        problems.append(f"init={estimator.init!r}")
    if estimator.kernel == "precomputed":
        problems.append('kernel="precomputed"')
    if problems:
        raise ValueError(
            "A fit on a Dask array runs the alternating solver on Nystroem features at a given "
            "epsilon, alpha and gamma, without refine; not supported here: "
            + ", ".join(problems)
            + ". Give e.g. SubquantileKernelRegressor(0.1, alpha=1.0, gamma=0.5, "
            "n_components=500, refine=None), or fit a NumPy array."
        )


def distributed_fit(estimator: Any, X: Any, y: Any) -> None:
    """Fit ``estimator`` (a SubquantileKernelRegressor) on the Dask arrays X (n, d), y (n,)."""
    import dask
    import dask.array as da

    check_distributed_options(estimator)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(
            f"X must be a 2-d and y a 1-d Dask array with as many rows; got shapes {X.shape} "
            f"and {y.shape}."
        )
    X = X.astype(np.float64).rechunk({1: -1})
    y = y.astype(np.float64).rechunk((X.chunks[0],))
    n, d = X.shape
    estimator.n_features_in_ = d
    estimator._single_output = True
    estimator._target_scale = 1.0
    estimator.alpha_, estimator.gamma_ = float(estimator.alpha), estimator.gamma
    params = kernel_params(
        estimator.kernel, estimator.gamma, estimator.degree, estimator.coef0,
        estimator.kernel_params,
    )
    # The landmarks Nystroem.fit(X) would take: the first m of a permutation of the rows.
    m = min(estimator.n_components, n)
    landmarks = check_random_state(estimator.random_state).permutation(n)[:m]
    order = np.argsort(landmarks)
    rows = np.empty(m, dtype=int)
    rows[order] = np.arange(m)
    basis = X[np.sort(landmarks)].compute()[rows]
    feature_map = fit_feature_map("nystroem", m, estimator.kernel, params, 0, basis)
    Z = X.map_blocks(feature_map.transform, dtype=np.float64, chunks=(X.chunks[0], (m,)))
    k = n_kept(n, float(estimator.epsilon))
    alpha = float(estimator.alpha)
    max_iter = estimator.max_iter or DEFAULT_MAX_ITER["alternating"]

    def ridge(mask: Any) -> tuple[np.ndarray, float]:
        """The fit on the rows of ``mask`` (a Dask bool array): one pass for the sums."""
        weights = mask.astype(np.float64)
        Zw = Z * weights[:, None]
        gram, zy, ones, y_total, count = dask.compute(
            Zw.T @ Z, Zw.T @ y, Zw.sum(axis=0), (y * weights).sum(), weights.sum()
        )
        theta, b = ridge_from_sums(
            gram, zy[:, None], ones, np.array([y_total]), count, alpha, estimator.fit_intercept
        )
        return theta[:, 0], float(b[0])

    def subquantile(losses: Any) -> tuple[Any, float]:
        """The k rows of smallest loss (ties by row index) and the k-th smallest loss."""
        threshold = float(da.topk(losses, n - k + 1).min().compute())
        below = losses < threshold
        at = losses == threshold
        need = k - int(below.sum().compute())
        return below | (at & (da.cumsum(at.astype(np.int64)) <= need)), threshold

    mask = da.ones(n, dtype=bool, chunks=(X.chunks[0],))
    theta, b = ridge(mask)
    history: list[float] = []
    converged = False
    bar = tqdm(total=max_iter, desc="SubQ on Dask", unit="pass", disable=not estimator.verbose)
    for iteration in range(1, max_iter + 1):
        losses = ((Z @ theta + b - y) ** 2).persist()
        new_mask, threshold = subquantile(losses)
        new_mask = new_mask.persist()
        kept_sum = float(losses[new_mask].sum().compute())
        history.append(kept_sum + alpha * float(theta @ theta))
        changed = n if iteration == 1 else int((new_mask != mask).sum().compute())
        bar.update()
        bar.set_postfix(changed_rows=changed, threshold=f"{threshold:.4g}")
        if iteration > 1 and changed == 0:
            converged = True
            break
        mask = new_mask
        theta, b = ridge(mask)
    bar.close()
    if not converged:
        warnings.warn(
            f"The kept rows still changed after max_iter={max_iter} passes.",
            ConvergenceWarning,
            stacklevel=3,
        )
    kept, losses = dask.compute(new_mask, losses)
    evaluation = Evaluation(
        F=np.empty((0, 1)), Kw=np.empty((0, 1)), losses=losses, mask=kept,
        threshold=threshold, objective=history[-1],
    )
    result = SolverResult(  # n_iter: the refits on kept rows, as the in-memory solver counts
        w=theta[:, None], b=np.array([b]), evaluation=evaluation, n_iter=iteration - 1,
        history=history, converged=converged,
    )
    estimator.best_start_ = 0
    estimator.epsilon_ = 1.0 - float(kept.mean())
    estimator._set_fitted(None, None, result, feature_map)
