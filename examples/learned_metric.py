"""
Kernel learning with a learned metric: the fit finds the one direction that matters
===================================================================================

y depends on x only through x1 + x2 (5 features). MetricKernelRidge learns a metric Sigma of
rank 1 whose direction is close to (1, 1, 0, 0, 0) / sqrt(2), without any rank penalty.

The learned metric is also a supervised dimension reduction: ``model.transform(X)`` gives the
rows in the learned coordinates, and y plotted against the first one is the clean curve
sin(x1 + x2). The first principal component of X (unsupervised: the direction of largest
variance of x, which here is any direction, since the features are independent with equal
variance) leaves a cloud.

Run: python examples/learned_metric.py
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import PCA

from robustkernel import MetricKernelRidge

rng = np.random.default_rng(0)
X = rng.normal(size=(120, 5))
y = np.sin(X[:, 0] + X[:, 1]) + 0.1 * rng.normal(size=120)

model = MetricKernelRidge(lam=0.1).fit(X, y)
direction = model.components_[0]
truth = np.array([1.0, 1.0, 0.0, 0.0, 0.0]) / np.sqrt(2.0)
print(f"rank of Sigma: {model.rank_} (of {X.shape[1]})")
print("leading direction:", np.round(direction * np.sign(direction @ truth), 3))
print(f"|cosine| with the true direction: {abs(direction @ truth):.3f}")
print("transformed shape:", model.transform(X).shape)

fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.5))
left.bar(np.arange(1, X.shape[1] + 1), model.eigenvalues_)
left.set_xlabel("eigenvalue index")
left.set_ylabel("eigenvalue of Sigma")
left.set_title(f"rank_ = {model.rank_}: one direction learned")
width = 0.4
features = np.arange(1, X.shape[1] + 1)
right.bar(features - width / 2, direction * np.sign(direction @ truth), width, label="learned")
right.bar(features + width / 2, truth, width, label="true (1, 1, 0, 0, 0) / sqrt(2)")
right.set_xlabel("feature")
right.set_title("leading direction of Sigma")
right.legend(fontsize=8)
fig.tight_layout()

# y against the first learned coordinate and against the first principal component of X.
learned = model.transform(X)[:, 0] * np.sign(direction @ truth)
principal = PCA(n_components=1).fit_transform(X)[:, 0]
index = X @ truth  # the true coordinate (x1 + x2) / sqrt(2)
print(
    f"|correlation| with (x1 + x2) / sqrt(2): learned coordinate "
    f"{abs(np.corrcoef(learned, index)[0, 1]):.3f}, "
    f"first principal component {abs(np.corrcoef(principal, index)[0, 1]):.3f}"
)

fig2, (left, right) = plt.subplots(1, 2, figsize=(8, 3.5), sharey=True)
left.scatter(learned, y, s=10)
left.set_xlabel("model.transform(X)[:, 0]")
left.set_ylabel("y")
left.set_title("learned coordinate: the curve sin(x1 + x2)")
right.scatter(principal, y, s=10, color="tab:gray")
right.set_xlabel("PCA(n_components=1).fit_transform(X)[:, 0]")
right.set_title("first principal component of X: a cloud")
fig2.tight_layout()
plt.show()
