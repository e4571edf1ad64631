"""Benchmark of MetricKernelRidge (paper 003): gradient and lambda-path timings.

Prints each section and writes it into ``BENCHMARKS.md`` (or ``--out``) with
`robustkernel._report.replace_markdown_section`, replacing only that section: other benchmarks
write other sections of the same file. Every section states the command that produced it.
Sections (``--section``, repeatable; default all):

* ``gradient``: seconds per J_n evaluation and per gradient at n = 300, p = 50, and the ratio
  against a straightforward n x n x p x p tensor gradient written here (the peer, small n only;
  both gradients are compared numerically in the same run).
* ``path``: seconds per 20-lambda path (0.05, ..., 1.0, warm starts) in the paper setting
  n = 300, p = 50, f (c) and f = 0, Gaussian X, sigma = 0.1, for three solvers: the paper's
  projected gradient (its text's and its code's constants) and L-BFGS to a KKT residual of 1e-6.
* ``scale-n``: gradient and path time for n = 300 ... 4000 at p = 50 (paths up to ``--max-path-n``).
* ``scale-p``: gradient and path time for p = 10 ... 200 at n = 300.
* ``minibatch``: one fit at lam = 0.1 with all rows against mini-batch fits (``batch_size`` m =
  200, 500; max_iter = 50, 300) at n = 1000, 2000, p = 20, f (c): wall and CPU seconds,
  iterations, full-data J_n, rank, subspace error against the true central subspace, test RMSE.
* ``second-order``: along the same 20-lambda paths (f (c) and f = 0, seed 1), each lambda from
  the previous lambda's L-BFGS solution: the default L-BFGS against a trust-region Newton method
  on the factor L (SciPy's ``trust-krylov``) with the exact Hessian-vector product of
  J_n(L L^T), written here (checked against central differences of the gradient in the run).
* ``buffers``: the L-BFGS path of f (c) (seed 1) with the factored objective's reused n x n
  buffers against fresh arrays at every evaluation (the package's ``Scratch`` replaced by one
  without buffers), interleaved in one process, five paths each.
* ``robust``: the metric on contaminated targets (20% replaced by N(5, 5) draws) at n = 300,
  p = 20, f (a) - (d), lam = 0.1: the fit on the clean data, the oracle (the clean rows only),
  the plain fit, and ``epsilon="auto"`` / ``epsilon=0.2``, then `MetricKernelRidgeCV` on the
  clean rows, on all rows and with ``epsilon="auto"``; rank, subspace error, test RMSE,
  corrupted rows left out, CPU seconds (medians over ``--seeds``).

Run from the repository root, e.g. ``.venv/bin/python benchmarks/bench_metric.py``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from harness.report import replace_markdown_section
from scipy.linalg import cho_factor, cho_solve
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_info, threadpool_limits

from robustkernel.corruption import corrupt
from robustkernel.datasets import make_kl_regression, make_kl_train_test, subspace_distance
from robustkernel.metric_kernel_ridge import (
    MetricKernelRidge,
    MetricKernelRidgeCV,
    metric_kernel_ridge_path,
)
from robustkernel.metric_kernel_ridge._objective import (
    _factor_of,
    _factored_objective,
    centred,
    factored_descent,
    gradient,
    inner_solution,
    kkt_residual,
    project,
    resolve_kernel,
)

LAMS = np.round(np.arange(1, 21) * 0.05, 2)
HEADING = "## MetricKernelRidge (paper 003): {}"
TITLES = {
    "gradient": "gradient cost",
    "path": "20-lambda path",
    "scale-n": "growth with n",
    "scale-p": "growth with p",
    "minibatch": "mini-batch descent",
    "robust": "contaminated targets",
    "second-order": "second-order steps on the factor",
    "buffers": "reused buffers",
}
FAMILY = resolve_kernel("gaussian")


def _best_time(fun: Callable[[], object], repeat: int = 5, min_time: float = 0.2) -> float:
    """Best-of-``repeat`` seconds per call (each measurement runs at least ``min_time``)."""
    fun()
    best = np.inf
    for _ in range(repeat):
        calls, start = 0, time.perf_counter()
        while True:
            fun()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        best = min(best, elapsed / calls)
    return best


def naive_tensor_gradient(X: np.ndarray, a: np.ndarray, K: np.ndarray, lam: float) -> np.ndarray:
    """Peer: build the n x n x p x p tensor of (x_i - x_j)(x_i - x_j)^T and contract it.

    Gaussian kernel, ``grad = -(lam/2) sum_ij a_i a_j phi'(D_ij) (x_i - x_j)(x_i - x_j)^T`` with
    ``phi' = -K``. O(n^2 p^2) time and memory.
    """
    diff = X[:, None, :] - X[None, :, :]
    outer = np.einsum("ijk,ijl->ijkl", diff, diff)
    weights = a[:, None] * a[None, :] * K
    return 0.5 * lam * np.einsum("ij,ijkl->kl", weights, outer)


def _problem(n: int, p: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X, y = make_kl_regression(n=n, p=p, f="c", random_state=seed)
    return X, y, np.eye(p) / p


def time_objective_and_gradient(n: int, p: int, lam: float = 0.1) -> dict[str, float]:
    """Seconds per inner solve (J_n) and per gradient contraction at Sigma = I/p."""
    X, y, S = _problem(n, p)
    sol = inner_solution(X, y, S, lam, FAMILY)
    repeat = 5 if n <= 1000 else 2
    return {
        "objective": _best_time(lambda: inner_solution(X, y, S, lam, FAMILY), repeat=repeat),
        "gradient": _best_time(lambda: gradient(X, sol, lam, FAMILY), repeat=repeat),
    }


SOLVERS = {
    "projected gradient, lr 0.1, tol 1e-3 (the paper's text)": {
        "solver": "projected_gradient",
    },
    "projected gradient, lr 0.2, tol 5e-4, c 2e-3 (the authors' code)": {
        "solver": "projected_gradient",
        "lr": 0.2,
        "tol": 5e-4,
        "armijo_c": 2e-3,
    },
    "L-BFGS to KKT residual 1e-6 (default)": {"solver": "lbfgs"},
}


def time_path(
    n: int, p: int, seed: int = 0, f: str = "c", seeding: str = "independent", **params: object
) -> dict[str, float]:
    """Wall and CPU seconds for a 20-lambda warm-started path, and its ranks and iterations.

    With one BLAS thread the CPU time is what the path costs on an idle core; the wall time also
    contains the waits of a shared machine.
    """
    sim = make_kl_train_test(n=n, p=p, f=f, random_state=seed, seeding=seeding)
    start, cpu_start = time.perf_counter(), time.process_time()
    path = metric_kernel_ridge_path(
        sim.X_train, sim.y_train, LAMS, return_estimators=True, **params
    )
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    return {
        "seconds": seconds,
        "cpu": cpu,
        "iterations": int(path.n_iter.sum()),
        "ranks": f"{path.rank.min()}-{path.rank.max()}",
        "rank_list": path.rank.tolist(),
        "converged": int(path.converged.sum()),
        "objective": path.objective,
        "kkt": max(m.kkt_residual_ for m in path.estimators),
    }


# ------------------------------------------------------------------------------ sections
def section_gradient(naive_ns: list[int]) -> list[str]:
    p, lam = 50, 0.1
    lines = [
        "### Gradient cost and the n x n x p x p tensor peer (p = 50, Gaussian kernel)",
        "",
        "Closed form: `-lam X^T (diag(W 1) - W) X`, given the inner solution. Peer: builds the "
        "n x n x p x p tensor (float64) and contracts it, given the same inner solution. "
        "Both timed in the same run; `max rel diff` compares the two gradients.",
        "",
        "| n | J_n solve (s) | closed-form gradient (s) | tensor peer gradient (s) "
        "| speed-up (peer / closed form) | max rel diff |",
        "|---|---|---|---|---|---|",
    ]
    for n in naive_ns:
        X, y, S = _problem(n, p)
        sol = inner_solution(X, y, S, lam, FAMILY)
        K = np.exp(-sol.argument)
        t_obj = _best_time(lambda X=X, y=y, S=S: inner_solution(X, y, S, lam, FAMILY))
        t_fast = _best_time(lambda X=X, sol=sol: gradient(X, sol, lam, FAMILY))
        t_naive = _best_time(
            lambda X=X, sol=sol, K=K: naive_tensor_gradient(X, sol.dual_coef, K, lam),
            repeat=2,
            min_time=0.0,
        )
        G_fast = gradient(X, sol, lam, FAMILY)
        G_naive = naive_tensor_gradient(X, sol.dual_coef, K, lam)
        rel = np.abs(G_fast - G_naive).max() / np.abs(G_naive).max()
        lines.append(
            f"| {n} | {t_obj:.2e} | {t_fast:.2e} | {t_naive:.2e} | {t_naive / t_fast:.0f}x "
            f"| {rel:.1e} |"
        )
    return lines


def section_path(seeds: list[int]) -> list[str]:
    lines = [
        "### 20-lambda path, paper setting (n = 300, p = 50, sigma = 0.1, Gaussian X)",
        "",
        "lam = 0.05, 0.10, ..., 1.00 in increasing order, warm starts from I/p, the authors' data "
        "sets (`make_kl_train_test(seeding='authors')`, seeds as listed), one BLAS thread. Three "
        "solvers on the same data, medians over the seeds: the paper's projected gradient with "
        "the constants of its text, the same with the constants that match the authors' code, "
        "and L-BFGS on the factor to a KKT residual of 1e-6. 'J above L-BFGS' is the largest "
        "relative excess of J_n over the L-BFGS path at any lambda; 'max KKT' the largest "
        "`kkt_residual_` along the path. Target (issue): <= 1 s per path.",
        "",
        "| f | solver | wall s | CPU s | iterations | ranks at lam 0.05 / 0.1 / 0.5 / 1 "
        "| max KKT | J above L-BFGS | lams converged |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in ("c", "e"):
        runs = {
            name: [time_path(300, 50, s, f=f, seeding="authors", **params) for s in seeds]
            for name, params in SOLVERS.items()
        }
        reference = [r["objective"] for r in runs["L-BFGS to KKT residual 1e-6 (default)"]]
        for name, results in runs.items():
            excess = max(
                float(np.max(r["objective"] / ref - 1.0))
                for r, ref in zip(results, reference, strict=True)
            )
            ranks = "; ".join(
                "/".join(str(r["rank_list"][k]) for k in (0, 1, 9, 19)) for r in results
            )
            lines.append(
                f"| {f} | {name} | {np.median([r['seconds'] for r in results]):.2f} "
                f"| {np.median([r['cpu'] for r in results]):.2f} "
                f"| {int(np.median([r['iterations'] for r in results]))} | {ranks} "
                f"| {max(r['kkt'] for r in results):.1e} | {excess:.1e} "
                f"| {sum(r['converged'] for r in results)}/{20 * len(results)} |"
            )
            print(lines[-1], flush=True)
    return lines


def section_scale_n(ns: list[int], max_path_n: int) -> list[str]:
    lines = [
        "### Growth with n (p = 50, f (c))",
        "",
        f"Path (20 lambdas as above) only for n <= {max_path_n}. Target: n = 2000 path < 10 min.",
        "",
        "| n | J_n solve (s) | gradient (s) | path wall s | path CPU s | path iterations "
        "| rank range |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in ns:
        t = time_objective_and_gradient(n, 50)
        if n <= max_path_n:
            r = time_path(n, 50)
            path = f"{r['seconds']:.1f} | {r['cpu']:.1f} | {r['iterations']} | {r['ranks']}"
        else:
            path = "- | - | - | -"
        lines.append(f"| {n} | {t['objective']:.2e} | {t['gradient']:.2e} | {path} |")
        print(lines[-1], flush=True)
    return lines


def section_scale_p(ps: list[int]) -> list[str]:
    lines = [
        "### Growth with p (n = 300, f (c))",
        "",
        "| p | J_n solve (s) | gradient (s) | path wall s | path CPU s | path iterations "
        "| rank range |",
        "|---|---|---|---|---|---|---|",
    ]
    for p in ps:
        t = time_objective_and_gradient(300, p)
        r = time_path(300, p)
        lines.append(
            f"| {p} | {t['objective']:.2e} | {t['gradient']:.2e} | {r['seconds']:.1f} "
            f"| {r['cpu']:.1f} | {r['iterations']} | {r['ranks']} |"
        )
        print(lines[-1], flush=True)
    return lines


def section_minibatch(ns: list[int], batches: list[int], budgets: list[int]) -> list[str]:
    p, lam = 20, 0.1
    lines = [
        f"### Mini-batch descent (p = {p}, f (c), Gaussian X, sigma = 0.1, lam = {lam})",
        "",
        "One fit per row from I/p, lr = 0.1, c = 1e-3, beta = 0.5, tol = 1e-3. Full: all rows, "
        "max_iter = 2000. Mini-batch: `batch_size=m`, `random_state=0`, max_iter = "
        f"{' or '.join(map(str, budgets))}; stop rule on the step averaged over 10 iterations; "
        "dual coefficients refitted on all n rows at the end (included in the time). J_n: the "
        "full-data objective at the final Sigma (lower is better). Subspace error: "
        "`||P_hat - P_true||_F` of `components_` against the true 2-dim central subspace. Test "
        "RMSE on n/2 fresh points (noise sd 0.1).",
        "",
        "| n | m | max_iter | iterations | converged | wall s | CPU s | J_n | rank "
        "| subspace error | test RMSE |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n in ns:
        sim = make_kl_train_test(n=n, p=p, f="c", random_state=0)
        runs = [(None, 2000)] + [(m, it) for m in batches for it in budgets]
        for m, max_iter in runs:
            model = MetricKernelRidge(lam=lam, batch_size=m, random_state=0, max_iter=max_iter)
            start, cpu_start = time.perf_counter(), time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(sim.X_train, sim.y_train)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            error = subspace_distance(model.components_.T, sim.subspace)
            rmse = float(np.sqrt(np.mean((model.predict(sim.X_test) - sim.y_test) ** 2)))
            lines.append(
                f"| {n} | {'all' if m is None else m} | {max_iter} | {model.n_iter_} "
                f"| {'yes' if model.converged_ else 'no'} | {seconds:.1f} | {cpu:.1f} "
                f"| {model.objective_:.5f} | {model.rank_} | {error:.3f} | {rmse:.3f} |"
            )
            print(lines[-1], flush=True)
    return lines


def _robust_fits(f: str, seed: int) -> list[dict[str, float]]:
    """The five fits of one ``robust`` data set: rank, subspace error, RMSE, catch, CPU s."""
    sim = make_kl_train_test(n=300, p=20, f=f, random_state=seed)
    bad = corrupt(sim.X_train, sim.y_train, kind="label", epsilon=0.2, random_state=seed)
    corrupted = np.zeros(sim.y_train.size, dtype=bool)
    corrupted[bad.index] = True
    fits = {
        "clean data": (sim.X_train, sim.y_train, None),
        "oracle (clean rows)": (bad.X[~corrupted], bad.y[~corrupted], None),
        "plain": (bad.X, bad.y, None),
        'epsilon="auto"': (bad.X, bad.y, "auto"),
        "epsilon=0.2": (bad.X, bad.y, 0.2),
    }
    cv_fits = {k: fits[k] for k in ("oracle (clean rows)", "plain", 'epsilon="auto"')}
    rows = []
    for name, (X, y, epsilon) in [*fits.items(), *((f"CV: {k}", v) for k, v in cv_fits.items())]:
        cv = name.startswith("CV: ")
        model = (MetricKernelRidgeCV if cv else MetricKernelRidge)(epsilon=epsilon, random_state=0)
        cpu_start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X, y)
        cpu = time.process_time() - cpu_start
        caught = (~model.inlier_mask_ & corrupted).sum() / corrupted.sum() if epsilon else np.nan
        rows.append(
            {
                "fit": name,
                "rank": model.rank_,
                "error": subspace_distance(model.components_.T, sim.subspace),
                "rmse": float(np.sqrt(np.mean((model.predict(sim.X_test) - sim.y_test) ** 2))),
                "caught": caught,
                "cpu": cpu,
            }
        )
    return rows


def section_robust(seeds: list[int]) -> list[str]:
    lines = [
        "### Contaminated targets (n = 300, p = 20, Gaussian X, sigma = 0.1)",
        "",
        '20% of the training targets replaced by N(5, variance 5) draws (`corrupt(kind="label")`'
        "), the same rows for every fit of a data set. Clean data: the fit before corruption. "
        "Oracle: the fit on the clean rows of the corrupted set. Plain: `MetricKernelRidge()` on "
        "all rows. `epsilon`: the metric learned on the subquantile of the rows "
        "(`MetricKernelRidge(epsilon=...)`), lam = 0.1 (the default) for all of these. CV: "
        "`MetricKernelRidgeCV` (lam chosen on held-out rows, a final ridge for prediction). "
        "Subspace error `||P_hat - P_true||_F` against the true central subspace (dimension 1 "
        "for f (a), (b); 2 for (c), (d)); test RMSE on 150 "
        "clean points; caught: share of the corrupted rows left out. Medians over seeds "
        f"{', '.join(map(str, seeds))} (min - max in brackets for the subspace error).",
        "",
        "| f | fit | rank | subspace error | test RMSE | caught | CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in ("a", "b", "c", "d"):
        frame = pd.DataFrame([row for seed in seeds for row in _robust_fits(f, seed)])
        for name, group in frame.groupby("fit", sort=False):
            error = group["error"]
            caught = group["caught"].median()
            lines.append(
                f"| ({f}) | {name} | {group['rank'].median():g} | {error.median():.3f} "
                f"[{error.min():.3f} - {error.max():.3f}] | {group['rmse'].median():.3f} "
                f"| {'' if np.isnan(caught) else f'{caught:.2f}'} | {group['cpu'].median():.1f} |"
            )
            print(lines[-1], flush=True)
    return lines


class FactorNewton:
    """J_n(L L^T) (Gaussian kernel), its gradient and its exact Hessian-vector product in L.

    With Z = X L, D the squared distances, K = exp(-D), M = H K H + n lam I and a = M^{-1} H y:
    the gradient is -2 lam X^T (diag(W 1) - W) Z with W = -(a a^T) o K. Along V (dZ = X V),
    dD = 2 (d 1^T + 1 d^T - P - P^T) with P = Z dZ^T and d = diag(P), da = -M^{-1} H (dK a) with
    dK = -K o dD, dW = K o (a a^T o dD - da a^T - a da^T), and the product is
    -2 lam X^T [(diag(dW 1) - dW) Z + (diag(W 1) - W) dZ]. The quantities at the last point
    are kept, so that a Hessian-vector product costs no Cholesky factorization.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, lam: float, shape: tuple[int, int]):
        self.X, self.lam, self.shape = X, lam, shape
        self.yc = y - y.mean()
        self.value_and_grad = _factored_objective(X, y, lam, FAMILY, shape)
        self.key: bytes | None = None
        self.hessian_products = 0

    def _at(self, flat: np.ndarray) -> None:
        if self.key == flat.tobytes():
            return
        n = self.X.shape[0]
        Z = self.X @ flat.reshape(self.shape)
        sq = np.einsum("ij,ij->i", Z, Z)
        K = np.exp(-np.maximum(sq[:, None] + sq[None, :] - 2.0 * Z @ Z.T, 0.0))
        system = centred(K)
        system.flat[:: n + 1] += n * self.lam
        self.factor = cho_factor(system, lower=True, check_finite=False)
        a = cho_solve(self.factor, self.yc, check_finite=False)
        self.Z, self.K, self.a = Z, K, a - a.mean()
        self.W = -K * np.outer(self.a, self.a)
        self.key = flat.tobytes()

    def hessp(self, flat: np.ndarray, v: np.ndarray) -> np.ndarray:
        self._at(flat)
        self.hessian_products += 1
        Z, K, a, W = self.Z, self.K, self.a, self.W
        dZ = self.X @ v.reshape(self.shape)
        P = Z @ dZ.T
        d = np.diag(P).copy()
        dD = 2.0 * (d[:, None] + d[None, :] - P - P.T)
        dKa = -(K * dD) @ a
        da = -cho_solve(self.factor, dKa - dKa.mean(), check_finite=False)
        da -= da.mean()
        dW = K * (np.outer(a, a) * dD - np.outer(da, a) - np.outer(a, da))
        laplacian = Z * dW.sum(axis=1)[:, None] - dW @ Z + dZ * W.sum(axis=1)[:, None] - W @ dZ
        return (-2.0 * self.lam * self.X.T @ laplacian).ravel()


def _newton_from(X: np.ndarray, y: np.ndarray, start: np.ndarray, lam: float) -> dict[str, float]:
    """trust-krylov on the factor of ``start`` to the gradient tolerance L-BFGS uses for 1e-6."""
    _, D, V = project(start)
    L = _factor_of(D, V)
    model = FactorNewton(X, y, lam, L.shape)
    unit = model.value_and_grad(L.ravel())[0]
    lengths = np.linalg.norm(L, axis=0)
    gtol = 0.5 * 1e-6 * float(lengths.min()) / float(np.linalg.norm(L.T @ L))
    cpu = time.process_time()
    fit = minimize(
        lambda flat: tuple(part / unit for part in model.value_and_grad(flat)),
        L.ravel(),
        jac=True,
        hessp=lambda flat, v: model.hessp(flat, v) / unit,
        method="trust-krylov",
        options={"gtol": gtol, "maxiter": 200},
    )
    cpu = time.process_time() - cpu
    Lf = fit.x.reshape(L.shape)
    Sigma, D, V = project(Lf @ Lf.T)
    sol = inner_solution(X, y, Sigma, lam, FAMILY)
    G = gradient(X, sol, lam, FAMILY)
    return {
        "cpu": cpu,
        "iterations": int(fit.nit),
        "hessian_products": model.hessian_products,
        "objective": sol.objective,
        "kkt": kkt_residual(G, Sigma, D, V, sol.objective),
    }


def _hessian_check(X: np.ndarray, y: np.ndarray) -> float:
    """Relative error of the Hessian-vector product against central differences."""
    rng = np.random.default_rng(0)
    shape = (X.shape[1], 3)
    flat = 0.1 * rng.standard_normal(shape).ravel()
    v = rng.standard_normal(flat.size)
    model = FactorNewton(X, y, 0.05, shape)
    h = 1e-6
    differences = (
        model.value_and_grad(flat + h * v)[1] - model.value_and_grad(flat - h * v)[1]
    ) / (2 * h)
    exact = model.hessp(flat, v)
    return float(np.linalg.norm(exact - differences) / np.linalg.norm(differences))


def section_second_order(seed: int) -> list[str]:
    lines = [
        "### L-BFGS against a trust-region Newton method on the factor (n = 300, p = 50)",
        "",
        f"The 20-lambda path of the section above (authors' data set, seed {seed}), solved by the "
        "default L-BFGS. For every lambda after the first, the Newton method starts from the "
        "previous lambda's L-BFGS solution, with the same number of columns, and stops at the "
        "gradient tolerance that L-BFGS uses for a KKT residual of 1e-6. 'rank changes' are the "
        "lambdas where the rank of the solution differs from the start's (directions must go "
        "to zero), 'fixed rank' the others. Sums over the lambdas of each group; one BLAS "
        "thread.",
        "",
        "| f | lambdas | L-BFGS iterations | L-BFGS CPU s | Newton iterations "
        "| Hessian-vector products | Newton CPU s | Newton max KKT | Newton J above L-BFGS |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in ("c", "e"):
        sim = make_kl_train_test(n=300, p=50, f=f, random_state=seed, seeding="authors")
        X, y = sim.X_train, sim.y_train
        if f == "c":
            check = _hessian_check(X, y)
        groups: dict[str, list[dict[str, float]]] = {"rank changes": [], "fixed rank": []}
        Sigma = np.eye(X.shape[1]) / X.shape[1]
        for k, lam in enumerate(LAMS):
            cpu = time.process_time()
            result = factored_descent(X, y, Sigma, float(lam), FAMILY, tol=1e-6)
            lbfgs_cpu = time.process_time() - cpu
            if k > 0:
                newton = _newton_from(X, y, Sigma, float(lam))
                rank_in = int(np.linalg.matrix_rank(Sigma))
                rank_out = int(np.count_nonzero(result.eigenvalues))
                newton.update(
                    lbfgs_cpu=lbfgs_cpu,
                    lbfgs_iterations=result.n_iter,
                    excess=newton["objective"] / result.solution.objective - 1.0,
                )
                groups["rank changes" if rank_in != rank_out else "fixed rank"].append(newton)
            Sigma = result.Sigma
        for name, runs in groups.items():
            if not runs:
                continue
            lines.append(
                f"| {f} | {len(runs)} ({name}) | {sum(r['lbfgs_iterations'] for r in runs)} "
                f"| {sum(r['lbfgs_cpu'] for r in runs):.2f} "
                f"| {sum(r['iterations'] for r in runs)} "
                f"| {sum(r['hessian_products'] for r in runs)} "
                f"| {sum(r['cpu'] for r in runs):.2f} | {max(r['kkt'] for r in runs):.1e} "
                f"| {max(r['excess'] for r in runs):.1e} |"
            )
            print(lines[-1], flush=True)
    lines += [
        "",
        f"Hessian-vector product against central differences of the gradient: relative error "
        f"{check:.1e}.",
    ]
    return lines


def section_buffers(seed: int, repeats: int = 5) -> list[str]:
    from types import SimpleNamespace

    from robustkernel.metric_kernel_ridge import _objective

    sim = make_kl_train_test(n=300, p=50, f="c", random_state=seed, seeding="authors")
    kept = _objective.Scratch
    variants = {
        "reused buffers (default)": kept,
        "fresh arrays": lambda n: SimpleNamespace(argument=None, kernel=None, system=None),
    }
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    objectives: dict[str, float] = {}
    try:
        for _ in range(repeats):
            for name, scratch in variants.items():
                _objective.Scratch = scratch
                start = time.process_time()
                path = metric_kernel_ridge_path(sim.X_train, sim.y_train, LAMS)
                cpu[name].append(time.process_time() - start)
                objectives[name] = float(path.objective[-1])
    finally:
        _objective.Scratch = kept
    lines = [
        f"### Reused n x n buffers (20-lambda path, f (c), authors' seed {seed}, one BLAS thread)",
        "",
        f"Interleaved in one process, {repeats} paths each; CPU seconds per path.",
        "",
        "| evaluations use | median CPU s | all runs | J_n at lam = 1 |",
        "|---|---|---|---|",
    ]
    for name, values in cpu.items():
        lines.append(
            f"| {name} | {np.median(values):.2f} | {', '.join(f'{v:.2f}' for v in values)} "
            f"| {objectives[name]:.12f} |"
        )
        print(lines[-1], flush=True)
    return lines


def _environment(threads: int | None) -> list[str]:
    blas = ", ".join(
        f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} threads)"
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    )
    return [
        f"Machine: {platform.machine()}, {os.cpu_count()} logical CPUs (shared with other jobs), "
        f"Python {platform.python_version()}, NumPy {np.__version__}; BLAS: {blas}. "
        f"BLAS threads limited to {threads if threads else 'library default'}. "
        "Load average (1, 5, 15 min) when the section finished: "
        + ", ".join(f"{v:.1f}" for v in os.getloadavg())
        + ".",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--section",
        action="append",
        choices=[
            "gradient",
            "path",
            "scale-n",
            "scale-p",
            "minibatch",
            "robust",
            "second-order",
            "buffers",
        ],
    )
    parser.add_argument(  # the repository's BENCHMARKS.md, wherever the script runs from
        "--out", type=Path, default=Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
    )
    parser.add_argument(
        "--threads", type=int, default=1, help="BLAS threads (0: library default). Default 1."
    )
    parser.add_argument("--naive-n", default="100,200,300")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--ns", default="300,500,1000,2000,4000")
    parser.add_argument("--ps", default="10,25,50,100,200")
    parser.add_argument("--max-path-n", type=int, default=2000)
    parser.add_argument("--minibatch-ns", default="1000,2000")
    parser.add_argument("--batch-sizes", default="200,500")
    parser.add_argument("--minibatch-iter", default="50,300", help="max_iter of mini-batch fits")
    args = parser.parse_args(argv)
    sections = args.section or ["gradient", "path", "scale-n", "scale-p", "minibatch"]
    command = ".venv/bin/python " + " ".join(
        shlex.quote(a) for a in ["benchmarks/bench_metric.py", *sys.argv[1:]]
    )

    def ints(text: str) -> list[int]:
        return [int(v) for v in text.split(",") if v]

    limits = threadpool_limits(limits=args.threads) if args.threads else None
    for name in sections:
        started = time.perf_counter()
        if name == "gradient":
            lines = section_gradient(ints(args.naive_n))
        elif name == "path":
            lines = section_path(ints(args.seeds))
        elif name == "scale-n":
            lines = section_scale_n(ints(args.ns), args.max_path_n)
        elif name == "scale-p":
            lines = section_scale_p(ints(args.ps))
        elif name == "robust":
            lines = section_robust(ints(args.seeds))
        elif name == "second-order":
            lines = section_second_order(ints(args.seeds)[0])
        elif name == "buffers":
            lines = section_buffers(ints(args.seeds)[0])
        else:
            lines = section_minibatch(
                ints(args.minibatch_ns), ints(args.batch_sizes), ints(args.minibatch_iter)
            )
        heading = HEADING.format(TITLES[name])
        body = "\n".join(
            [
                heading,
                "",
                *lines,
                "",
                *_environment(args.threads),
                "",
                f"Command: `{command}` (section `{name}`, "
                f"{time.perf_counter() - started:.0f} s wall time).",
                "",
            ]
        )
        print(body, flush=True)
        replace_markdown_section(Path(args.out), heading, body)
        print(f"wrote section {heading!r} of {args.out}", flush=True)
    if limits is not None:
        limits.restore_original_limits()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
