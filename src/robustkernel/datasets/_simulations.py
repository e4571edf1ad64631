"""Simulated regression data of Chen, Li, Liu and Ruan (2023), Section 7.1 (learned metric).

``Y = f(X) + eps`` with ``eps ~ N(0, noise^2)`` independent of ``X``. The regression functions
(a)-(e) depend on ``X`` through a few linear projections only; `central_subspace` returns an
orthonormal basis of the central mean subspace ``S*`` they span, so that the column space of a
learned metric can be compared with it.

=====  ==============================================================  ==========
name   f(x)                                                            dim S*
=====  ==============================================================  ==========
"a"    x1 + x2 + x3                                                    1
"b"    x1 x2                                                           2
"c"    0.1 (x1 + x2 + x3)^3 + tanh(x1 + x3 + x5)                       2
"d"    2 (x1 + x2) + (x2 + x3)^2 + (x4 - 0.5)^3                        3
"e"    0                                                               0
=====  ==============================================================  ==========

Covariate distributions: ``"gaussian"`` (N(0, I)), ``"correlated"`` (N(0, K) with
``K_ij = rho^|i-j|``, rho = 0.5 in the paper), ``"uniform"`` (U[0, 1]^p) and ``"bernoulli"``
(independent Bernoulli(prob) coordinates in {0, 1}, prob = 0.5 in the paper).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.linalg import orth
from sklearn.utils import check_random_state

__all__ = [
    "REGRESSION_FUNCTIONS",
    "X_DISTRIBUTIONS",
    "KLSimulation",
    "central_subspace",
    "make_kl_regression",
    "make_kl_train_test",
    "regression_function",
    "sample_covariates",
    "subspace_distance",
]

X_DISTRIBUTIONS = ("gaussian", "correlated", "uniform", "bernoulli")

_MIN_FEATURES = {"a": 3, "b": 2, "c": 5, "d": 4, "e": 1}

# Directions (1-based coordinates with coefficients) whose span is S* for each function.
_DIRECTIONS: dict[str, list[dict[int, float]]] = {
    "a": [{1: 1.0, 2: 1.0, 3: 1.0}],
    "b": [{1: 1.0}, {2: 1.0}],
    "c": [{1: 1.0, 2: 1.0, 3: 1.0}, {1: 1.0, 3: 1.0, 5: 1.0}],
    "d": [{1: 1.0, 2: 1.0}, {2: 1.0, 3: 1.0}, {4: 1.0}],
    "e": [],
}


def _f_a(X: np.ndarray) -> np.ndarray:
    return X[:, 0] + X[:, 1] + X[:, 2]


def _f_b(X: np.ndarray) -> np.ndarray:
    return X[:, 0] * X[:, 1]


def _f_c(X: np.ndarray) -> np.ndarray:
    return 0.1 * (X[:, 0] + X[:, 1] + X[:, 2]) ** 3 + np.tanh(X[:, 0] + X[:, 2] + X[:, 4])


def _f_d(X: np.ndarray) -> np.ndarray:
    return 2.0 * (X[:, 0] + X[:, 1]) + (X[:, 1] + X[:, 2]) ** 2 + (X[:, 3] - 0.5) ** 3


def _f_e(X: np.ndarray) -> np.ndarray:
    return np.zeros(X.shape[0])


REGRESSION_FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "a": _f_a,
    "b": _f_b,
    "c": _f_c,
    "d": _f_d,
    "e": _f_e,
}


def _check_function(f: str, p: int | None = None) -> str:
    if f not in REGRESSION_FUNCTIONS:
        raise ValueError(f"Unknown regression function {f!r}; expected one of 'a'-'e'.")
    if p is not None and p < _MIN_FEATURES[f]:
        raise ValueError(f"f ({f}) needs at least {_MIN_FEATURES[f]} features; got p={p}.")
    return f


def regression_function(f: str) -> Callable[[np.ndarray], np.ndarray]:
    """The regression function ``f`` of Chen, Li, Liu and Ruan (2023), Section 7.1.

    Parameters
    ----------
    f : {"a", "b", "c", "d", "e"}
        Which function.

    Returns
    -------
    callable
        Maps an array of shape (n, p) to the (n,) noiseless responses.
    """
    return REGRESSION_FUNCTIONS[_check_function(f)]


def central_subspace(f: str, p: int) -> np.ndarray:
    """Orthonormal basis of the central mean subspace ``S*`` of ``f`` in ``R^p``.

    Parameters
    ----------
    f : {"a", "b", "c", "d", "e"}
        Which function.
    p : int
        Ambient dimension.

    Returns
    -------
    basis : ndarray of shape (p, dim S*)
        Orthonormal columns (zero columns for ``f = "e"``).
    """
    _check_function(f, p)
    directions = _DIRECTIONS[f]
    if not directions:
        return np.zeros((p, 0))
    B = np.zeros((p, len(directions)))
    for k, coefs in enumerate(directions):
        for coord, value in coefs.items():
            B[coord - 1, k] = value
    return orth(B)


def subspace_distance(A: np.ndarray, B: np.ndarray) -> float:
    """Frobenius distance ``||P_A - P_B||_F`` between the projections on ``col(A)``, ``col(B)``.

    Parameters
    ----------
    A, B : ndarray of shape (p, r_A), (p, r_B)
        Orthonormal bases (``r = 0`` is the zero subspace).

    Returns
    -------
    float
    """
    if A.shape[0] != B.shape[0]:
        raise ValueError(f"Bases live in different dimensions: {A.shape[0]} and {B.shape[0]}.")
    return float(np.linalg.norm(A @ A.T - B @ B.T))


def sample_covariates(
    n: int,
    p: int,
    distribution: str = "gaussian",
    *,
    rho: float = 0.5,
    prob: float = 0.5,
    random_state: int | np.random.RandomState | None = None,
) -> np.ndarray:
    """Draw ``n`` covariate vectors in ``R^p``.

    Parameters
    ----------
    n, p : int
        Number of rows and of features.
    distribution : {"gaussian", "correlated", "uniform", "bernoulli"}, default="gaussian"
        ``"gaussian"``: N(0, I); ``"correlated"``: N(0, K) with ``K_ij = rho^|i-j|``;
        ``"uniform"``: U[0, 1]^p; ``"bernoulli"``: independent coordinates in {0, 1} with
        ``P(X_i = 1) = prob``.
    rho : float, default=0.5
        Correlation parameter of ``"correlated"``, in (-1, 1).
    prob : float, default=0.5
        Success probability of ``"bernoulli"``, in [0, 1].
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    X : ndarray of shape (n, p)
    """
    if n < 1 or p < 1:
        raise ValueError(f"n and p must be >= 1; got n={n}, p={p}.")
    rng = check_random_state(random_state)
    if distribution == "gaussian":
        return rng.standard_normal((n, p))
    if distribution == "correlated":
        if not -1.0 < rho < 1.0:
            raise ValueError(f"rho must lie in (-1, 1); got {rho}.")
        idx = np.arange(p)
        K = rho ** np.abs(idx[:, None] - idx[None, :])
        L = np.linalg.cholesky(K)
        return rng.standard_normal((n, p)) @ L.T
    if distribution == "uniform":
        return rng.uniform(0.0, 1.0, size=(n, p))
    if distribution == "bernoulli":
        if not 0.0 <= prob <= 1.0:
            raise ValueError(f"prob must lie in [0, 1]; got {prob}.")
        return (rng.uniform(size=(n, p)) < prob).astype(float)
    raise ValueError(f"Unknown distribution {distribution!r}; expected one of {X_DISTRIBUTIONS}.")


def make_kl_regression(
    n: int = 300,
    p: int = 50,
    f: str = "c",
    *,
    x_distribution: str = "gaussian",
    noise: float = 0.1,
    rho: float = 0.5,
    prob: float = 0.5,
    random_state: int | np.random.RandomState | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``(X, y)``, ``y = f(X) + N(0, noise^2)``, as in Chen, Li, Liu and Ruan (2023), 7.1.

    Parameters
    ----------
    n : int, default=300
        Number of samples.
    p : int, default=50
        Number of features.
    f : {"a", "b", "c", "d", "e"}, default="c"
        Regression function (see the module docstring).
    x_distribution : {"gaussian", "correlated", "uniform", "bernoulli"}, default="gaussian"
        Covariate distribution (see `sample_covariates`).
    noise : float, default=0.1
        Noise standard deviation ``sigma``.
    rho, prob : float, default=0.5
        Parameters of the correlated Gaussian and Bernoulli covariates.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    X : ndarray of shape (n, p)
        The covariates.
    y : ndarray of shape (n,)
        The responses f(X) plus noise.

    Examples
    --------
    Function (a) is x1 + x2 + x3: it depends on X through one direction, which the metric
    learned by :class:`robustkernel.MetricKernelRidge` recovers:

    >>> import numpy as np
    >>> from robustkernel import MetricKernelRidge
    >>> from robustkernel.datasets import central_subspace, make_kl_regression, subspace_distance
    >>> X, y = make_kl_regression(200, p=10, f="a", noise=0.1, random_state=0)
    >>> X.shape, y.shape
    ((200, 10), (200,))
    >>> bool(abs(np.std(y - X[:, :3].sum(axis=1)) - 0.1) < 0.02)  # the noise
    True
    >>> model = MetricKernelRidge(lam=0.1).fit(X, y)
    >>> model.rank_
    1
    >>> bool(subspace_distance(model.components_.T, central_subspace("a", 10)) < 0.2)
    True
    """
    _check_function(f, p)
    if noise < 0:
        raise ValueError(f"noise must be >= 0; got {noise}.")
    rng = check_random_state(random_state)
    X = sample_covariates(n, p, x_distribution, rho=rho, prob=prob, random_state=rng)
    y = REGRESSION_FUNCTIONS[f](X) + noise * rng.standard_normal(n)
    return X, y


@dataclass
class KLSimulation:
    """A training set, a test set of half its size, and the true central mean subspace.

    Attributes
    ----------
    X_train, y_train, X_test, y_test : ndarray
    subspace : ndarray of shape (p, dim S*)
        Orthonormal basis of ``S*``.
    """

    X_train: np.ndarray
    y_train: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    subspace: np.ndarray


def _authors_sample(
    n: int, p: int, f: str, x_distribution: str, noise: float, rho: float, prob: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """One sample drawn with the seeding convention of the authors' published simulation code.

    The noise comes from the legacy generator seeded with ``seed``, the covariates from one seeded
    with ``200 * seed`` (Gaussian ones through ``multivariate_normal``, Bernoulli ones through
    ``choice``), and both arrays are rounded to float32, as that code hands them to its solver.
    """
    eps = noise * np.random.RandomState(seed).normal(0.0, 1.0, size=n)
    rs = np.random.RandomState(200 * seed)
    if x_distribution in ("gaussian", "correlated"):
        c = rho if x_distribution == "correlated" else 0.0
        idx = np.arange(p)
        X = rs.multivariate_normal(np.zeros(p), c ** np.abs(idx[:, None] - idx[None, :]), size=n)
    elif x_distribution == "uniform":
        X = rs.uniform(0.0, 1.0, size=(n, p))
    elif x_distribution == "bernoulli":
        X = rs.choice([0, 1], size=(n, p), p=[1.0 - prob, prob]).astype(float)
    else:
        raise ValueError(
            f"Unknown distribution {x_distribution!r}; expected one of {X_DISTRIBUTIONS}."
        )
    y = REGRESSION_FUNCTIONS[f](X) + eps
    return X.astype(np.float32).astype(float), y.astype(np.float32).astype(float)


def make_kl_train_test(
    n: int = 300,
    p: int = 50,
    f: str = "c",
    *,
    x_distribution: str = "gaussian",
    noise: float = 0.1,
    test_fraction: float = 0.5,
    rho: float = 0.5,
    prob: float = 0.5,
    random_state: int | None = None,
    seeding: str = "independent",
) -> KLSimulation:
    """Training and test data from the same model (the paper's test set has ``n/2`` rows).

    Parameters
    ----------
    n, p, f, x_distribution, noise, rho, prob
        As in `make_kl_regression`.
    test_fraction : float, default=0.5
        Test size as a fraction of ``n`` (at least one row).
    random_state : int or None, default=None
        Seed; the training and test sets use independent streams spawned from it.
    seeding : {"independent", "authors"}, default="independent"
        ``"authors"`` draws the exact data sets of the authors' published simulation code for
        seed ``s = random_state >= 1``: noise from the legacy generator seeded with ``s``,
        covariates from one seeded with ``200 s``, the test set the same way with seed
        ``10000 s`` (``floor(test_fraction * n)`` rows), every array rounded to float32 as that
        code does. The two draws share seeds (the test noise and the training covariates are
        not independent for ``s = 0``), so it serves comparisons with that code only.

    Returns
    -------
    KLSimulation

    Examples
    --------
    >>> from robustkernel.datasets import make_kl_train_test
    >>> sim = make_kl_train_test(n=20, p=6, f="a", random_state=1, seeding="authors")
    >>> sim.X_train.shape, sim.X_test.shape, sim.subspace.shape
    ((20, 6), (10, 6), (6, 1))
    """
    if test_fraction <= 0:
        raise ValueError(f"test_fraction must be > 0; got {test_fraction}.")
    _check_function(f, p)
    if seeding == "authors":
        if random_state is None or int(random_state) < 1:
            raise ValueError(
                f"seeding='authors' needs an integer random_state >= 1; got {random_state!r}."
            )
        s = int(random_state)
        args = (p, f, x_distribution, noise, rho, prob)
        X_train, y_train = _authors_sample(n, *args, seed=s)
        X_test, y_test = _authors_sample(max(1, int(test_fraction * n)), *args, seed=10000 * s)
        return KLSimulation(X_train, y_train, X_test, y_test, central_subspace(f, p))
    if seeding != "independent":
        raise ValueError(f"seeding must be 'independent' or 'authors'; got {seeding!r}.")
    train_seq, test_seq = np.random.SeedSequence(random_state).spawn(2)
    kwargs = {"f": f, "x_distribution": x_distribution, "noise": noise, "rho": rho, "prob": prob}
    X_train, y_train = make_kl_regression(
        n, p, random_state=np.random.RandomState(train_seq.generate_state(1)[0]), **kwargs
    )
    X_test, y_test = make_kl_regression(
        max(1, round(test_fraction * n)),
        p,
        random_state=np.random.RandomState(test_seq.generate_state(1)[0]),
        **kwargs,
    )
    return KLSimulation(X_train, y_train, X_test, y_test, central_subspace(f, p))
