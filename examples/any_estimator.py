"""
Subquantile minimization around gradient boosting: the same report for any model
================================================================================

20% of the training targets of Friedman's regression problem are replaced by noise. Gradient
boosting fitted on every row follows them; ``SubquantileRegressor`` around the same model
estimates the contaminated fraction, says which rows it left out, and predicts nearly as well
as gradient boosting fitted on the clean rows only (the oracle, which needs to know them).

Run: python examples/any_estimator.py
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.metrics import root_mean_squared_error

from robustkernel import SubquantileRegressor
from robustkernel.corruption import corrupt, outlier_precision_recall

X, y = make_friedman1(n_samples=1000, noise=1.0, random_state=0)
X_test, y_test = make_friedman1(n_samples=2000, noise=0.0, random_state=100)
scale = y.std()
bad = corrupt(X, y / scale, "label", 0.2, random_state=0)  # y <- N(5, 5) on 20% of the rows
clean = np.ones(len(y), dtype=bool)
clean[bad.index] = False

model = SubquantileRegressor(HistGradientBoostingRegressor(), random_state=0).fit(bad.X, bad.y)
plain = HistGradientBoostingRegressor().fit(bad.X, bad.y)
oracle = HistGradientBoostingRegressor().fit(X[clean], y[clean] / scale)
precision, recall = outlier_precision_recall(model.inlier_mask_, bad.index)

print(f"true epsilon 0.20, estimated epsilon_ {model.epsilon_:.3f}")
print(f"left-out rows: precision {precision:.2f}, recall {recall:.2f}")
errors = {}
for name, fitted in [("SubQ", model), ("plain", plain), ("oracle", oracle)]:
    errors[name] = root_mean_squared_error(y_test / scale, fitted.predict(X_test))
    print(f"test RMSE {name:6s} {errors[name]:.3f}")

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.bar(list(errors), list(errors.values()), color=["tab:green", "tab:red", "tab:gray"])
ax.set_ylabel("test RMSE on clean targets")
ax.set_title("gradient boosting, 20% of the targets replaced")
fig.tight_layout()
plt.show()
