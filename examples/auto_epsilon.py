"""
No knobs: fit a contaminated regression without knowing how much of it is wrong
===============================================================================

20% of the training targets are replaced by noise. The Subquantile regressor with its defaults
estimates the contaminated fraction (``epsilon_``), chooses the kernel (``kernel_``: linear,
degree-2 polynomial or rbf, from a high-breakdown start), the ridge penalty and the kernel width
(``alpha_``, ``gamma_``, in units of each column's spread), says which rows it distrusted
(``inlier_mask_``), and predicts the clean test set almost as well as a fit on the clean rows
only. The model is then saved and loaded again.

Run: python examples/auto_epsilon.py
"""

import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from sklearn.kernel_ridge import KernelRidge
from sklearn.metrics import root_mean_squared_error

from robustkernel import SubquantileKernelRegressor
from robustkernel.corruption import corrupt, outlier_precision_recall
from robustkernel.persistence import load_model, save_model

rng = np.random.default_rng(0)
X = rng.uniform(-2, 2, size=(300, 2))
y = np.sin(X[:, 0]) + 0.5 * np.cos(2 * X[:, 1]) + 0.1 * rng.normal(size=300)
X_train, y_train, X_test, y_test = X[:200], y[:200], X[200:], y[200:]
bad = corrupt(X_train, y_train, "label", 0.2, random_state=0)  # y <- N(5, 5) on 20% of rows

model = SubquantileKernelRegressor().fit(bad.X, bad.y)
precision, recall = outlier_precision_recall(model.inlier_mask_, bad.index)
ridge = KernelRidge(alpha=0.1, kernel="rbf", gamma=1.0).fit(bad.X, bad.y)

print(f"true epsilon 0.20, estimated epsilon_ {model.epsilon_:.3f}")
gamma = "none" if model.gamma_ is None else f"{model.gamma_:.3g}"  # the linear kernel has none
print(f"chosen kernel_ {model.kernel_}, alpha_ {model.alpha_:.3g}, gamma_ {gamma}")
print(f"flagged rows: precision {precision:.2f}, recall {recall:.2f}")
print(f"test RMSE: SubQ {root_mean_squared_error(y_test, model.predict(X_test)):.3f}, ", end="")
print(f"KernelRidge {root_mean_squared_error(y_test, ridge.predict(X_test)):.3f}")

with tempfile.TemporaryDirectory() as folder:
    loaded = load_model(save_model(model, Path(folder) / "model.joblib"))
assert np.array_equal(loaded.predict(X_test), model.predict(X_test))
print("saved and loaded: identical predictions")

# The outlier scores (each row's training loss under the final fit), sorted: the rows whose
# targets were replaced (red) sit above the threshold the fit trimmed at.
order = np.argsort(model.outlier_scores_)
corrupted = np.isin(np.arange(bad.y.size), bad.index)[order]
fig, ax = plt.subplots(figsize=(6.5, 4))
positions = np.arange(order.size)
groups = [(~corrupted, "tab:blue", "clean row"), (corrupted, "tab:red", "target replaced")]
for mask, color, label in groups:
    ax.scatter(positions[mask], model.outlier_scores_[order][mask], s=12, c=color, label=label)
ax.axhline(model.threshold_, color="k", linestyle="--", linewidth=1, label="threshold_")
ax.set_yscale("log")
ax.set_xlabel("training rows, sorted by outlier score")
ax.set_ylabel("outlier_scores_ (squared error)")
ax.set_title(f"epsilon_ = {model.epsilon_:.3f} estimated (true 0.20)")
ax.legend()
fig.tight_layout()
plt.show()
