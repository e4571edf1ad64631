"""Synthetic data: the polynomial regression problem of the Subquantile papers.

Rathnashyam and Gittens, "Subquantile Minimization for Kernel Learning in the Huber
eps-Contamination Model" (draft of 17 September 2023), Table 1.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, validate_params


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "degree": [Interval(Integral, 0, None, closed="left")],
        "noise": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_polynomial_regression(
    n_samples: int = 1000,
    *,
    degree: int = 3,
    noise: float = 0.01,
    random_state: int | np.random.RandomState | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Generate a one-feature polynomial regression problem with random coefficients.

    :math:`x \sim N(0, 1)`, coefficients :math:`a_0, \dots, a_d \sim N(0, 1)` with
    :math:`d` = ``degree``, and

    .. math::

        y = \sum_{i=0}^{d} a_i x^i + e, \qquad e \sim N(0, \sigma^2):

    ``noise`` is the **standard deviation** :math:`\sigma` of the additive Gaussian noise.

    This is the synthetic data set of Rathnashyam and Gittens (2023), Table 1 (n = 1000,
    degree 3), which writes :math:`y \sim N(\sum_i a_i x^i, 0.01)`. We read 0.01 as the
    standard deviation: the paper reports a test
    RMSE of 0.010 for Subquantile at every eps, which is the noise floor when the noise standard
    deviation is 0.01 (with a variance of 0.01 the floor would be 0.1). Those RMSEs are in the
    raw units of y; if an experiment standardizes y, its noise floor is 0.01 / std(y).

    Parameters
    ----------
    n_samples : int, default=1000
        Number of rows.
    degree : int, default=3
        Degree of the polynomial; degree + 1 coefficients are drawn.
    noise : float, default=0.01
        Standard deviation of the Gaussian noise added to y.
    random_state : int, RandomState instance or None, default=None
        Seeds x, the coefficients and the noise (all from the same generator, in that order:
        coefficients, x, noise).

    Returns
    -------
    X : ndarray of shape (n_samples, 1)
        The single feature x.
    y : ndarray of shape (n_samples,)
        The noisy polynomial values.

    Examples
    --------
    >>> from robustkernel.datasets import make_polynomial_regression
    >>> X, y = make_polynomial_regression(1000, random_state=0)
    >>> X.shape, y.shape
    ((1000, 1), (1000,))
    """
    rng = check_random_state(random_state)
    coef = rng.standard_normal(degree + 1)
    x = rng.standard_normal(n_samples)
    y = np.polynomial.polynomial.polyval(x, coef) + noise * rng.standard_normal(n_samples)
    return x.reshape(-1, 1), y
