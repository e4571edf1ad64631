"""
Prediction intervals when a fifth of the training targets are wrong
===================================================================

A curve whose noise grows from left to right, 600 training rows, 20% of them wrong: 90 targets
thrown far off, and a tight group of 30 rows far out in x with a wrong target (bad leverage).
The test rows are clean. Split conformal prediction as MAPIE runs it (``SplitConformalRegressor``
around a tuned ``KernelRidge``, calibrated on 30% of the same rows) takes its quantile from
residuals that include the wrong ones; ``SubquantileKernelRegressor().predict_interval`` takes
it from every row's honest residual with the contamination left out, and widens where the noise
grows. The oracle is split conformal fitted and calibrated on the clean rows only.

Run: python examples/prediction_intervals.py
"""

import matplotlib.pyplot as plt
import numpy as np
from mapie.regression import SplitConformalRegressor
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import GridSearchCV, train_test_split

from robustkernel import SubquantileKernelRegressor

rng = np.random.default_rng(0)


def truth(x):
    return np.sin(2 * x) + 0.5 * x


def rows(n):
    x = rng.uniform(-3, 3, size=n)
    noise = 0.1 + 0.25 * (x + 3) / 3  # sd 0.1 on the left, 0.6 on the right
    return x[:, None], truth(x) + noise * rng.normal(size=n)


X, y = rows(600)
bad = rng.choice(600, 120, replace=False)
vertical, cluster = bad[:90], bad[90:]
y[vertical] += rng.choice([-1, 1], 90) * rng.uniform(6, 12, 90)
X[cluster] = 5.0 + 0.05 * rng.normal(size=(30, 1))  # beyond the data, a wrong target
y[cluster] = -4.0 + 0.05 * rng.normal(size=30)
clean = np.setdiff1d(np.arange(600), bad)
X_test, y_test = rows(5000)


def split_conformal(X, y):
    """MAPIE's split conformal around KernelRidge tuned by GridSearchCV, 70 / 30."""
    X_fit, X_conformal, y_fit, y_conformal = train_test_split(X, y, test_size=0.3, random_state=0)
    grid = {"alpha": [1e-3, 1e-2, 1e-1, 1.0], "gamma": [0.1, 0.3, 1.0, 3.0]}
    model = SplitConformalRegressor(
        GridSearchCV(KernelRidge(kernel="rbf"), grid), confidence_level=0.9, prefit=False
    )
    model.fit(X_fit, y_fit).conformalize(X_conformal, y_conformal)
    return model.predict_interval(X_test)[1][:, :, 0]


ours = SubquantileKernelRegressor().fit(X, y).predict_interval(X_test, coverage=0.9)
methods = {
    "SubquantileKernelRegressor().predict_interval": ours,
    "MAPIE split conformal on every row": split_conformal(X, y),
    "oracle: split conformal on the clean rows": split_conformal(X[clean], y[clean]),
}
oracle_width = np.diff(methods["oracle: split conformal on the clean rows"], axis=1).mean()
for name, bounds in methods.items():
    covered = np.mean((bounds[:, 0] <= y_test) & (y_test <= bounds[:, 1]))
    width = np.diff(bounds, axis=1).mean()
    ratio = width / oracle_width
    print(f"{name:48s} coverage {covered:.3f}  mean width {width:.2f} ({ratio:.2f}x)")

# %%
# The picture: the 90% band of each method over the clean test rows (grey), the wrong
# training rows in red. MAPIE's band is as wide everywhere as the wrong targets made its
# quantile; ours follows the noise: narrow on the left, wide on the right.
order = np.argsort(X_test[:, 0])
figure, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
for ax, name in zip(axes, list(methods)[:2], strict=True):
    bounds = methods[name][order]
    ax.scatter(X_test[order, 0], y_test[order], s=2, color="0.6", label="clean test rows")
    ax.fill_between(X_test[order, 0], bounds[:, 0], bounds[:, 1], alpha=0.3, label="90% interval")
    ax.scatter(X[bad, 0], y[bad], s=8, color="tab:red", marker="x", label="wrong training rows")
    ax.set_ylim(-6, 6)
    ax.set_title(name, fontsize=10)
    ax.set_xlabel("x")
axes[0].set_ylabel("y")
axes[0].legend(loc="upper left", fontsize=8)
figure.tight_layout()
plt.show()
